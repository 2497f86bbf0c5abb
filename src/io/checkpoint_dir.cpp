// SPDX-License-Identifier: MIT
#include "io/checkpoint_dir.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/input_file.hpp"
#include "core/memory.hpp"
#include "io/checkpoint_format.hpp"
#include "io/h5_io.hpp"
#include "model/architecture.hpp"

namespace fsdp::ckpt {
namespace fs = std::filesystem;

namespace {

bool is_run_id(const std::string& s) {
  return s.size() == 16 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit((unsigned char)c); });
}

}  // namespace

std::string new_run_id() {
  std::random_device rd;
  const std::uint64_t t = std::uint64_t(
      std::chrono::system_clock::now().time_since_epoch().count());
  std::uint64_t x = (std::uint64_t(rd()) << 32) ^ rd() ^ (t * 0x9E3779B97F4A7C15ull) ^
                    (std::uint64_t(::getpid()) << 17);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
  return buf;
}

std::string partial_name(const std::string& name, const std::string& run) {
  return name + "." + run + ".tmp";
}

std::string run_file_name(std::int64_t step, const std::string& run) {
  const std::string plain = file_name(step);  // "step_000010.h5"
  return plain.substr(0, plain.size() - 3) + "." + run + ".h5";
}

bool parse_name(const std::string& name, DirFile& out) {
  // step_<digits>[.<run>].h5[.<run>.tmp]
  if (name.rfind("step_", 0) != 0) return false;
  std::size_t at = 5;
  while (at < name.size() && name[at] >= '0' && name[at] <= '9') ++at;
  const std::string digits = name.substr(5, at - 5);
  if (digits.empty() || digits.size() > 18) return false;
  DirFile f;
  f.name = name;
  f.step = std::stoll(digits);
  auto run_at = [&](std::size_t pos, std::string& run) {
    if (pos + 17 > name.size() || name[pos] != '.') return false;
    run = name.substr(pos + 1, 16);
    return is_run_id(run);
  };
  std::string named_run;
  if (name.compare(at, 3, ".h5") != 0) {
    if (!run_at(at, named_run)) return false;
    at += 17;
    if (name.compare(at, 3, ".h5") != 0) return false;
  }
  at += 3;
  if (at == name.size()) {
    f.kind = DirFile::Complete;
  } else {
    if (!run_at(at, f.run) || name.substr(at + 17) != ".tmp") return false;
    f.kind = DirFile::Partial;
  }
  out = f;
  return true;
}

std::vector<std::string> retention_victims(const std::vector<DirFile>& files,
                                           const std::string& run, int keep,
                                           const std::vector<std::string>& protect) {
  auto kept = [&](const std::string& n) {
    return std::find(protect.begin(), protect.end(), n) != protect.end();
  };
  std::vector<const DirFile*> mine;
  std::vector<std::string> out;
  if (run.empty()) return out;
  for (const DirFile& f : files) {
    if (f.run != run) continue;
    if (f.kind == DirFile::Partial) {
      if (!kept(f.name)) out.push_back(f.name);
    } else {
      mine.push_back(&f);
    }
  }
  // The `keep` written last stay, counted among all the run's complete files; a protected
  // file (the one just written, the one resumed from) stays besides, so a resume from an old
  // step does not cost a user one of the K newest files (issue 44, finding 6).
  std::sort(mine.begin(), mine.end(), [](const DirFile* a, const DirFile* b) {
    return a->written != b->written ? a->written > b->written : a->step > b->step;
  });
  for (std::size_t i = std::size_t(std::max(keep, 0)); i < mine.size(); ++i)
    if (!kept(mine[i]->name)) out.push_back(mine[i]->name);
  return out;
}

std::string read_run_id(const std::string& path) {
  h5::silence_errors();
  if (!not_hdf5(path).empty()) return {};
  try {
    h5::File f{FSDP_H5_ID(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT))};
    if (!h5::has_attr(f.get(), "run_id")) return {};
    const std::string id = h5::read_attr_str(f.get(), "run_id");
    return is_run_id(id) ? id : std::string();
  } catch (const std::exception&) {
    return {};
  }
}

std::vector<DirFile> scan_dir(const std::string& dir) {
  std::vector<DirFile> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    DirFile f;
    if (!parse_name(e.path().filename().string(), f)) continue;
    std::error_code ec2;
    if (!e.is_regular_file(ec2) || e.is_symlink(ec2)) continue;  // never someone's link
    f.written = std::int64_t(fs::last_write_time(e.path(), ec2).time_since_epoch().count());
    if (f.kind == DirFile::Complete) f.run = read_run_id(e.path().string());
    out.push_back(f);
  }
  return out;
}

std::string read_latest(const std::string& dir) {
  // A hint only: anything but a small regular file (a FIFO planted as `latest` would block a
  // plain open for ever) reads as no hint, and the directory's scan decides.
  std::string text;
  try {
    text = read_input(dir + "/latest", "", 4096);
  } catch (const InputError&) {
    return {};
  }
  const std::string name = text.substr(0, text.find('\n'));
  DirFile f;
  return parse_name(name, f) && f.kind == DirFile::Complete ? name : std::string();
}

std::int64_t checkpoint_bytes(const ModelConfig& m, OptimizerKind optimizer, const LoraChoices& lora) {
  ModelChoices c;
  c.lora = lora;
  // Per dataset: its object header and attributes (~0.8 KiB measured; 2 KiB allowed) and its
  // checksum table (8 bytes per 2^18 elements); the superblock and groups in the 64 KiB.
  std::int64_t bytes = 64 << 10;
  for (Part p : kParts) {
    std::int64_t data = 0, datasets = 0;
    for (const UnitLayout& u : model_units(m, c))
      for (const TensorSpec& t : u.tensors)
        if (stores(p, t, optimizer)) {
          data += t.numel;
          ++datasets;
        }
    bytes += 4 * data + datasets * 2048 + 8 * (data / (1 << 18) + datasets);
  }
  return bytes;
}

std::string space_problem(const std::string& dir, std::int64_t bytes) {
  struct statvfs s{};
  if (::statvfs(dir.c_str(), &s) != 0) return {};  // unknown: the write itself will tell
  const double free = double(s.f_bavail) * double(s.f_frsize);
  if (free >= double(bytes)) return {};
  return "no space left on device: " + format_bytes(std::int64_t(free)) + " free in " + dir +
         ", the checkpoint needs " + format_bytes(bytes);
}

std::string prepare_dir(const std::string& dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (fs::exists(st) && !fs::is_directory(st))
    return "checkpoint.dir " + dir + ": exists and is not a directory";
  if (!fs::exists(st)) {
    fs::create_directories(dir, ec);
    if (ec) return "checkpoint.dir " + dir + ": cannot be created: " + ec.message();
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return "checkpoint.dir " + dir + ": not writable (" + std::strerror(errno) + ")";
  return {};
}

std::string dir_problem(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec);
  if (ec) return "checkpoint.dir " + dir + ": " + ec.message();
  if (fs::exists(p, ec) && !fs::is_directory(p, ec))
    return "checkpoint.dir " + dir + ": exists and is not a directory";
  while (!fs::exists(p, ec) && p.has_parent_path() && p.parent_path() != p) p = p.parent_path();
  if (!fs::is_directory(p, ec))
    return "checkpoint.dir " + dir + ": " + p.string() + " is not a directory";
  if (::access(p.c_str(), W_OK | X_OK) != 0)
    return "checkpoint.dir " + dir + ": " + (p == fs::absolute(dir, ec) ? std::string("") : p.string() + " ") +
           "not writable (" + std::strerror(errno) + ")";
  return {};
}

std::string DirLock::take(const std::string& dir, const std::string& who, DirLock& out,
                          std::string& warning) {
  const std::string path = dir + "/.fsdp-lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);  // never through a planted link
  if (fd < 0) return path + ": cannot be opened: " + std::strerror(errno);
  struct flock l{};
  l.l_type = F_WRLCK;
  l.l_whence = SEEK_SET;
  if (::fcntl(fd, F_SETLK, &l) != 0) {
    const int err = errno;
    if (err == ENOLCK) {
      warning = "checkpoint.dir " + dir + ": the file system has no locks; make sure no other "
                "job uses this directory";
      ::close(fd);
      return {};
    }
    std::string holder(256, '\0');
    const ssize_t n = ::pread(fd, holder.data(), holder.size(), 0);
    holder.resize(n > 0 ? std::size_t(n) : 0);
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
    ::close(fd);
    if (err != EAGAIN && err != EACCES) return path + ": cannot be locked: " + std::strerror(err);
    return "checkpoint.dir " + dir + " is in use by another job (" +
           (holder.empty() ? std::string("unknown") : holder) +
           "): give each job its own checkpoint.dir";
  }
  const std::string text = who + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) < 0) {
    // The lock holds even if the note about who holds it cannot be written.
  }
  out = DirLock();
  out.fd_ = fd;
  return {};
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);
}

DirLock& DirLock::operator=(DirLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

}  // namespace fsdp::ckpt
