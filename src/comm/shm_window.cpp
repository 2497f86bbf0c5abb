// SPDX-License-Identifier: MIT
#include "comm/shm_window.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <ctime>

#include "comm/owned_comm.hpp"
#include "core/check.hpp"

namespace fsdp::comm {
namespace {

// The PeerInfo header, padded so the data after it starts on a page.
constexpr std::size_t kHeaderBytes = 4096;
// MPI promises no alignment for a shared segment (Open MPI's start 264 bytes into a page, even
// with alloc_shared_noncontig): each is allocated one page longer and used from its first page
// boundary, so PeerInfo is 64-byte aligned and the data page-aligned, as their types promise.
constexpr std::size_t kSegmentAlign = 4096;

// Every rank must take the same branch, so each local verdict is combined first.
bool all_true(bool local, MPI_Comm comm) {
  int in = local ? 1 : 0, out = 0;
  FSDP_MPI_CHECK(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, comm));
  return out == 1;
}

void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();  // lets a hyperthread sibling (maybe the peer) use the core
#endif
}

// The futex word is the epoch's low half; the window is a shared mapping, so the futex is
// keyed by the page, not the process (no FUTEX_PRIVATE_FLAG).
std::uint32_t* futex_word(std::uint64_t* epoch) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the low half must come first");
  return reinterpret_cast<std::uint32_t*>(epoch);
}

void futex_wake_all(std::uint64_t* epoch) {
  syscall(SYS_futex, futex_word(epoch), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

// Sleeps until peer's epoch reaches e (or a spurious wake-up: the caller re-checks). The
// timeout bounds the cost of a lost wake-up to a millisecond; none is expected.
void sleep_on(PeerInfo& peer, std::uint64_t e) {
  __atomic_add_fetch(&peer.sleepers, 1u, __ATOMIC_SEQ_CST);
  const std::uint64_t seen = __atomic_load_n(&peer.epoch, __ATOMIC_SEQ_CST);
  if (seen < e) {
    const timespec limit{0, 1000000};
    syscall(SYS_futex, futex_word(&peer.epoch), FUTEX_WAIT, std::uint32_t(seen), &limit,
            nullptr, 0);
  }
  __atomic_sub_fetch(&peer.sleepers, 1u, __ATOMIC_SEQ_CST);
}

}  // namespace

std::unique_ptr<ShmWindow> ShmWindow::create(MPI_Comm comm, std::size_t bytes_per_rank) {
  int size = 0;
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  MPI_Comm node_raw = MPI_COMM_NULL;
  FSDP_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node_raw));
  const OwnedComm node = OwnedComm::adopt(node_raw);
  int node_size = 0;
  FSDP_MPI_CHECK(MPI_Comm_size(node.get(), &node_size));
  if (!all_true(node_size == size, comm)) return nullptr;

  // Two cache-line-aligned halves per segment (the collectives double-buffer).
  const std::size_t bytes = kHeaderBytes + (bytes_per_rank + 127) / 128 * 128;
  MPI_Info info = MPI_INFO_NULL;
  FSDP_MPI_CHECK(MPI_Info_create(&info));
  // Separate, page-aligned segments: each rank's pages are its own (first touch below).
  FSDP_MPI_CHECK(MPI_Info_set(info, "alloc_shared_noncontig", "true"));
  void* base = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  // Not checked by FSDP_MPI_CHECK on purpose: a failure here means "fall back", not "abort".
  const int rc = MPI_Win_allocate_shared(MPI_Aint(bytes + kSegmentAlign), sizeof(float), info,
                                         comm, &base, &win);
  FSDP_MPI_CHECK(MPI_Info_free(&info));
  if (!all_true(rc == MPI_SUCCESS, comm)) {
    if (rc == MPI_SUCCESS) FSDP_MPI_CHECK(MPI_Win_free(&win));
    return nullptr;
  }
  // Fault the pages in now, not inside the first timed collective.
  std::memset(base, 0, bytes + kSegmentAlign);
  FSDP_MPI_CHECK(MPI_Barrier(comm));  // every header is zeroed before anyone reads an epoch
  return std::make_unique<ShmWindow>(Key{}, comm, win, (bytes - kHeaderBytes) / sizeof(float));
}

ShmWindow::ShmWindow(Key, MPI_Comm comm, MPI_Win win, std::size_t floats)
    : win_(win), floats_(floats) {
  int size = 0;
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  FSDP_MPI_CHECK(MPI_Comm_rank(comm, &rank_));
  FSDP_MPI_CHECK(MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN));
  // One passive epoch for the window's life; MPI_Win_sync inside it orders the plain loads and
  // stores of the collectives.
  FSDP_MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_));
  for (int q = 0; q < size; ++q) {
    MPI_Aint seg_bytes = 0;
    int disp = 0;
    void* p = nullptr;
    FSDP_MPI_CHECK(MPI_Win_shared_query(win_, q, &seg_bytes, &disp, &p));
    char* seg = static_cast<char*>(p);
    seg += (kSegmentAlign - reinterpret_cast<std::uintptr_t>(seg) % kSegmentAlign) % kSegmentAlign;
    infos_.push_back(reinterpret_cast<PeerInfo*>(seg));
    segments_.push_back(reinterpret_cast<float*>(seg + kHeaderBytes));
  }
}

ShmWindow::~ShmWindow() {
  int finalized = 0;
  FSDP_MPI_CHECK(MPI_Finalized(&finalized));
  if (finalized) return;
  FSDP_MPI_CHECK(MPI_Win_unlock_all(win_));
  FSDP_MPI_CHECK(MPI_Win_free(&win_));
}

void ShmWindow::sync(SyncWait how) {
  if (how == SyncWait::Spin)
    FSDP_MPI_CHECK(MPI_Win_sync(win_));
  else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  const std::uint64_t e = ++epoch_;
  PeerInfo& mine = *infos_[std::size_t(rank_)];
  __atomic_store_n(&mine.epoch, e, __ATOMIC_SEQ_CST);
  // A sleeper registers before it re-reads the epoch, and this store comes before this load
  // (both sequentially consistent): either it sees the new epoch or this sees it and wakes it.
  if (__atomic_load_n(&mine.sleepers, __ATOMIC_SEQ_CST) > 0) futex_wake_all(&mine.epoch);
  for (PeerInfo* peer : infos_) {
    for (int spins = 0; __atomic_load_n(&peer->epoch, __ATOMIC_ACQUIRE) < e;) {
      if (spins < 256) {
        ++spins;
        relax();
      } else if (how == SyncWait::Spin) {
        sched_yield();
      } else {
        sleep_on(*peer, e);
      }
    }
  }
  if (how == SyncWait::Spin)
    FSDP_MPI_CHECK(MPI_Win_sync(win_));
  else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

}  // namespace fsdp::comm
