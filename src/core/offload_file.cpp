// SPDX-License-Identifier: MIT
#include "core/offload_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "core/check.hpp"
#include "core/clock.hpp"
#include "core/exit_codes.hpp"
#include "core/faults.hpp"
#include "core/step_log.hpp"

namespace fsdp {
namespace {

std::string errno_text(int e) { return std::strerror(e); }

std::string mib(double bytes) { return format_bytes(std::int64_t(bytes)); }

}  // namespace

IoBuffer::IoBuffer(MemoryTracker& t, const std::string& label, std::int64_t floats) {
  constexpr std::int64_t kAlignFloats = kIoAlign / 4;
  capacity_ = io_round(floats * 4) / 4;
  // Kokkos aligns its allocations to far less than a disk block: take one block more and start
  // at the first aligned address inside.
  buf_ = HostBuffer(t, label, capacity_ + kAlignFloats, MemCategory::CommBuffers, Dtype::F32,
                    Fill::None);
  const auto addr = reinterpret_cast<std::uintptr_t>(buf_.vec().data());
  p_ = reinterpret_cast<float*>((addr + kIoAlign - 1) / kIoAlign * kIoAlign);
}

struct OffloadFile::Queue {
  struct Request {
    bool write;
    std::int64_t off, bytes;
    char* buf;
    Ticket ticket;
  };
  std::mutex mu;
  std::condition_variable work, done;
  std::deque<Request> pending;
  Ticket issued = 0, completed = 0;
  std::string error;  // the first failure; every later request fails with it
  bool stop = false;
  double read_bytes = 0.0, write_bytes = 0.0, wait_s = 0.0;
  double total_read = 0.0, total_write = 0.0, total_wait = 0.0;
  std::thread worker;
};

std::unique_ptr<OffloadFile> OffloadFile::prepare(const std::string& dir, std::int64_t node_bytes,
                                                  bool lock_holder) {
  std::unique_ptr<OffloadFile> f(new OffloadFile());
  f->dir_ = dir;
  const std::string where = "offload.path " + dir + ": ";
  if (dir.empty())
    throw OffloadError("fsdp.offload = nvme needs offload.path, a node-local directory",
                       exit_code::kBadConfig);
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0)
    throw OffloadError(where + errno_text(errno) + " (it must be an existing node-local directory)",
                       exit_code::kBadConfig);
  if (!S_ISDIR(st.st_mode))
    throw OffloadError(where + "is not a directory", exit_code::kBadConfig);
  if (::access(dir.c_str(), W_OK) != 0)
    throw OffloadError(where + "not writable (" + errno_text(errno) + ")",
                       exit_code::kCheckpointWrite);
  if (lock_holder) {
    // One job per directory: two would share the disk's bandwidth and room, each sized for
    // the disk alone. The lock dies with the process, so a crashed job leaves none behind.
    f->lock_path_ = dir + "/fsdp-offload.lock";
    for (;;) {
      const int fd = ::open(f->lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0)
        throw OffloadError(where + "cannot create its lock file (" + errno_text(errno) + ")",
                           exit_code::kCheckpointWrite);
      if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char owner[128] = {0};
        const ssize_t n = ::pread(fd, owner, sizeof owner - 1, 0);
        ::close(fd);
        throw OffloadError(where + "in use by another fsdp job (" +
                               (n > 0 ? std::string(owner, std::size_t(n)) : "its lock is held") +
                               "); give each job its own offload.path",
                           exit_code::kCheckpointWrite);
      }
      // The holder may have removed the file between our open and our lock: lock the file
      // that is there now.
      struct stat held{}, now{};
      if (::fstat(fd, &held) == 0 && ::stat(f->lock_path_.c_str(), &now) == 0 &&
          held.st_ino == now.st_ino) {
        const std::string owner = "pid " + std::to_string(::getpid()) + " on " + host_name();
        if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, owner.data(), owner.size(), 0) < 0) {
          // The owner's name only helps the message of the job refused; not needed.
        }
        f->lock_fd_ = fd;
        break;
      }
      ::close(fd);
    }
    struct statvfs vfs{};
    if (::statvfs(dir.c_str(), &vfs) == 0) {
      const double avail = double(vfs.f_bavail) * double(vfs.f_frsize);
      if (avail < double(node_bytes))
        throw OffloadError(where + "no space left on device: " + mib(avail) +
                               " free, the ranks on this node need " + mib(double(node_bytes)),
                           exit_code::kCheckpointWrite);
    }
  }
  return f;
}

void OffloadFile::open(std::int64_t bytes) {
  const std::string where = "offload.path " + dir_ + ": ";
  size_ = io_round(bytes);
  // O_TMPFILE: a file without a name from the start. Where the file system lacks it, a named
  // file removed at once (a crash in between leaves one fsdp-offload.* file, never read).
  direct_ = true;
  int fd = ::open(dir_.c_str(), O_TMPFILE | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EINVAL) {
    direct_ = false;  // no O_DIRECT here (tmpfs): buffered I/O
    fd = ::open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  }
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    std::string tmpl = dir_ + "/fsdp-offload.XXXXXX";
    fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
    if (fd >= 0) {
      ::unlink(tmpl.c_str());
      const int flags = ::fcntl(fd, F_GETFL);
      direct_ = ::fcntl(fd, F_SETFL, flags | O_DIRECT) == 0;
    }
  }
  if (fd < 0)
    throw OffloadError(where + "cannot create this rank's offload file (" + errno_text(errno) + ")",
                       exit_code::kCheckpointWrite);
  fd_ = fd;
  if (size_ > 0) {
    const int rc = ::posix_fallocate(fd_, 0, size_);
    if (rc != 0)
      throw OffloadError(where + (rc == ENOSPC ? "no space left on device" : errno_text(rc)) +
                             ": cannot reserve " + mib(double(size_)) + " for this rank's state",
                         exit_code::kCheckpointWrite);
  }
  rank_ = world_rank();
  q_ = std::make_unique<Queue>();
  q_->worker = std::thread([this] {
    Queue& q = *q_;
    for (;;) {
      Queue::Request r;
      {
        std::unique_lock<std::mutex> lock(q.mu);
        q.work.wait(lock, [&] { return q.stop || !q.pending.empty(); });
        if (q.pending.empty()) return;
        r = q.pending.front();
        q.pending.pop_front();
      }
      std::string err;
      if (!q.error.empty()) {
        err = q.error;  // after a failure nothing more touches the file
      } else if (const int injected = faults::offload_io_error(rank_, r.ticket)) {
        err = errno_text(injected);
      } else {
        std::int64_t done = 0;
        while (done < r.bytes) {
          const ssize_t n = r.write ? ::pwrite(fd_, r.buf + done, std::size_t(r.bytes - done), r.off + done)
                                    : ::pread(fd_, r.buf + done, std::size_t(r.bytes - done), r.off + done);
          if (n < 0 && errno == EINTR) continue;
          if (n < 0) {
            err = errno_text(errno);
            break;
          }
          if (n == 0) {
            err = "unexpected end of file";
            break;
          }
          done += n;
        }
      }
      std::lock_guard<std::mutex> lock(q.mu);
      if (!err.empty() && q.error.empty())
        q.error = (r.write ? "writing " : "reading ") + mib(double(r.bytes)) + " at offset " +
                  std::to_string(r.off) + ": " + err;
      (r.write ? q.write_bytes : q.read_bytes) += double(r.bytes);
      (r.write ? q.total_write : q.total_read) += double(r.bytes);
      q.completed = r.ticket;
      q.done.notify_all();
    }
  });
}

std::unique_ptr<OffloadFile> OffloadFile::counting(std::int64_t bytes, StepLog* log) {
  std::unique_ptr<OffloadFile> f(new OffloadFile());
  f->counting_ = true;
  f->log_ = log;
  f->dir_ = "(counted)";
  f->size_ = io_round(bytes);
  return f;
}

OffloadFile::~OffloadFile() {
  if (q_) {
    {
      std::lock_guard<std::mutex> lock(q_->mu);
      q_->stop = true;
    }
    q_->work.notify_all();
    q_->worker.join();
  }
  if (fd_ >= 0) ::close(fd_);
  if (lock_fd_ >= 0) {
    ::unlink(lock_path_.c_str());  // still locked: no other job can hold this name now
    ::close(lock_fd_);
  }
}

void OffloadFile::begin_layout() {
  drain();
  if (written_) zero_all();
  next_ = 0;
}

std::int64_t OffloadFile::allocate(std::int64_t bytes) {
  const std::int64_t off = next_;
  next_ += io_round(bytes);
  if (next_ > size_)
    fatal("offload file: regions past its reserved " + std::to_string(size_) +
          " bytes (the state's layout and the file's size disagree)");
  return off;
}

OffloadFile::Ticket OffloadFile::submit(bool write, std::int64_t off, std::int64_t bytes, void* buf) {
  if (counting_) {
    const Transfer op = write ? Transfer::DiskWrite : Transfer::DiskRead;
    if (log_) logged_.push_back(log_->issue(op, -1, double(bytes)));
    return ++counted_;
  }
  if (!q_) fatal("offload file in " + dir_ + ": used before open()");
  if (off % kIoAlign || bytes % kIoAlign || reinterpret_cast<std::uintptr_t>(buf) % kIoAlign ||
      off + bytes > size_)
    fatal("offload file: an unaligned or out-of-range request (" + std::to_string(bytes) +
          " bytes at " + std::to_string(off) + ")");
  std::lock_guard<std::mutex> lock(q_->mu);
  const Ticket t = ++q_->issued;
  q_->pending.push_back({write, off, bytes, static_cast<char*>(buf), t});
  q_->work.notify_one();
  return t;
}

OffloadFile::Ticket OffloadFile::read(std::int64_t off, std::int64_t bytes, void* buf) {
  return submit(false, off, bytes, buf);
}

OffloadFile::Ticket OffloadFile::write(std::int64_t off, std::int64_t bytes, const void* buf) {
  written_ = true;
  // The worker only reads from a write's buffer.
  return submit(true, off, bytes, const_cast<void*>(buf));
}

void OffloadFile::wait(Ticket t) {
  // One queue in issue order: waiting for t is waiting for every request up to it.
  for (; log_ && waited_ < t && waited_ < logged_.size(); ++waited_) log_->wait(logged_[waited_]);
  if (!q_) return;
  std::unique_lock<std::mutex> lock(q_->mu);
  if (q_->completed < t) {
    const double t0 = now_s();
    q_->done.wait(lock, [&] { return q_->completed >= t; });
    const double w = now_s() - t0;
    q_->wait_s += w;
    q_->total_wait += w;
  }
  if (!q_->error.empty()) {
    const std::string e = q_->error;
    lock.unlock();
    fatal("offload file in " + dir_ + ": " + e +
              " (fsdp.offload = nvme: the disk failed mid-run; the last checkpoint stands)",
          exit_code::kCheckpointWrite);
  }
}

bool OffloadFile::done(Ticket t) const {
  if (!q_) return true;
  std::lock_guard<std::mutex> lock(q_->mu);
  return q_->completed >= t;
}

void OffloadFile::drain() {
  Ticket t = 0;
  if (q_) {
    std::lock_guard<std::mutex> lock(q_->mu);
    t = q_->issued;
  }
  wait(t);
}

namespace {
// Aligned scratch for the synchronous copies, released when done (they are not the hot path).
struct Bounce {
  explicit Bounce(std::int64_t bytes) : bytes(bytes) {
    void* p = nullptr;
    if (::posix_memalign(&p, std::size_t(kIoAlign), std::size_t(bytes)) != 0)
      fatal("offload file: cannot allocate a " + std::to_string(bytes) + "-byte bounce buffer");
    data = static_cast<char*>(p);
  }
  ~Bounce() { std::free(data); }
  std::int64_t bytes;
  char* data;
};
}  // namespace

void OffloadFile::read_now(std::int64_t off, std::int64_t bytes, void* dst) {
  if (bytes <= 0 || counting_) return;
  const std::int64_t lo = off / kIoAlign * kIoAlign, hi = io_round(off + bytes);
  Bounce b(hi - lo);
  wait(read(lo, hi - lo, b.data));
  std::memcpy(dst, b.data + (off - lo), std::size_t(bytes));
}

void OffloadFile::write_now(std::int64_t off, std::int64_t bytes, const void* src) {
  if (bytes <= 0 || counting_) return;
  const std::int64_t lo = off / kIoAlign * kIoAlign, hi = io_round(off + bytes);
  Bounce b(hi - lo);
  // The blocks at either end hold bytes outside the range: read them first.
  if (lo != off || hi != off + bytes) wait(read(lo, hi - lo, b.data));
  std::memcpy(b.data + (off - lo), src, std::size_t(bytes));
  wait(write(lo, hi - lo, b.data));
}

IoStats OffloadFile::take_stats() {
  IoStats s;
  if (!q_) return s;
  std::lock_guard<std::mutex> lock(q_->mu);
  s = {q_->read_bytes, q_->write_bytes, q_->wait_s};
  q_->read_bytes = q_->write_bytes = q_->wait_s = 0.0;
  return s;
}

IoStats OffloadFile::totals() const {
  IoStats s;
  if (!q_) return s;
  std::lock_guard<std::mutex> lock(q_->mu);
  return {q_->total_read, q_->total_write, q_->total_wait};
}

void OffloadFile::zero_all() {
  // FALLOC_FL_ZERO_RANGE keeps the blocks reserved (no ENOSPC later in the run); where the file
  // system lacks it, zeros are written, in rounds of at most 64 MiB.
  if (counting_) return;
  if (size_ > 0 && ::fallocate(fd_, FALLOC_FL_ZERO_RANGE, 0, size_) != 0) {
    const std::int64_t round = std::min<std::int64_t>(size_, std::int64_t(64) << 20);
    Bounce zeros(round);
    std::memset(zeros.data, 0, std::size_t(round));
    for (std::int64_t off = 0; off < size_; off += round)
      wait(write(off, std::min(round, size_ - off), zeros.data));
  }
  written_ = false;
}

}  // namespace fsdp
