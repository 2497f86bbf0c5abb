// SPDX-License-Identifier: MIT
#include "prepare/mapped_file.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "core/input_file.hpp"

namespace fsdp::prepare {
namespace {

// A file truncated while it is mapped turns a read of its lost pages into SIGBUS, which would
// kill the rank with a backtrace. The handler below maps a page of zeros over the lost one
// and marks the mapping, so the read goes on (into zeros) and the reader, which asks
// changed() before it trusts what it read, reports the file instead. Nothing unwinds through
// the handler: it only calls mmap and stores atomics. A SIGBUS outside these mappings goes to
// whatever handled SIGBUS before (the fault repeats under it).
struct Slot {
  std::atomic<char*> begin{nullptr};
  std::atomic<std::size_t> size{0};
  std::atomic<bool> hit{false};
};
constexpr int kSlots = 16;
Slot g_slots[kSlots];
struct sigaction g_previous;
std::size_t g_page = 4096;
std::once_flag g_installed;

void on_sigbus(int, siginfo_t* info, void*) {
  char* addr = static_cast<char*>(info->si_addr);
  for (Slot& s : g_slots) {
    char* b = s.begin.load();
    const std::size_t n = s.size.load();
    if (!b || addr < b || addr >= b + n) continue;
    char* page = b + std::size_t(addr - b) / g_page * g_page;  // b is page-aligned
    if (::mmap(page, g_page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
        MAP_FAILED) {
      s.hit.store(true);
      return;
    }
  }
  ::sigaction(SIGBUS, &g_previous, nullptr);
}

void install() {
  g_page = std::size_t(::sysconf(_SC_PAGESIZE));
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, &g_previous);
}

}  // namespace

MappedFile::MappedFile(const std::string& path) {
  const InputFile in(path, "input");  // closed at return: the mapping outlives the descriptor
  size_ = std::size_t(in.size());
  if (size_ == 0) return;  // mmap refuses an empty mapping
  data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, in.fd(), 0);
  if (data_ == MAP_FAILED) {
    data_ = nullptr;
    throw InputError(path + ": cannot map input: " + std::strerror(errno));
  }
  // Read front to back once.
  ::madvise(data_, size_, MADV_SEQUENTIAL);
  fd_ = ::dup(in.fd());  // for changed(): the file's size now
  std::call_once(g_installed, install);
  for (int k = 0; k < kSlots; ++k) {
    char* expected = nullptr;
    if (g_slots[k].begin.compare_exchange_strong(expected, static_cast<char*>(data_))) {
      g_slots[k].hit.store(false);
      g_slots[k].size.store(size_);  // nothing has been read yet
      slot_ = k;
      break;
    }
  }
}

bool MappedFile::changed() const {
  if (slot_ >= 0 && g_slots[slot_].hit.load()) return true;
  // Cut inside the last page it keeps: no SIGBUS, the page's tail reads as zeros.
  struct stat st {};
  return fd_ >= 0 && ::fstat(fd_, &st) == 0 && std::uint64_t(st.st_size) != size_;
}

MappedFile::~MappedFile() {
  if (slot_ >= 0) g_slots[slot_].begin.store(nullptr);
  if (data_) ::munmap(data_, size_);
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace fsdp::prepare
