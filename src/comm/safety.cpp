// SPDX-License-Identifier: MIT
#include "comm/safety.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "core/check.hpp"

namespace fsdp::comm {
namespace {

thread_local std::string t_site;

void copy(char* dst, std::size_t n, const std::string& s) {
  std::memset(dst, 0, n);
  std::memcpy(dst, s.data(), std::min(n - 1, s.size()));
}

std::string base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

// One watched operation per thread at a time (the training thread and a checkpoint writer
// each have their own); a nested watch saves its thread's enclosing one.
struct WatchSlot {
  bool active = false;
  std::chrono::steady_clock::time_point since;
  std::string what;
  const ArrivalBoard* board = nullptr;
  std::uint64_t seq = 0;
  bool while_alive = false;
};

struct WatchdogState {
  std::mutex mu;
  std::condition_variable cv;
  bool started = false;
  double timeout_s = 0.0;
  std::map<std::thread::id, WatchSlot> slots;
  std::vector<ArrivalBoard*> boards;  // stamped by the watchdog thread (heartbeats)
  // This process's last stop (a gap past 2 s in its own loop): how long, and when it ended.
  double frozen_s = 0;
  std::uint64_t frozen_until_ns = 0;
};

std::uint64_t now_ns() {  // CLOCK_MONOTONIC: one clock for every process of a node
  return std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count());
}

// Never destroyed: the detached watchdog thread may still read it while the process exits.
WatchdogState& watchdog() {
  static WatchdogState* w = new WatchdogState;
  return *w;
}

[[noreturn]] void watchdog_fire(const WatchdogState& ws, const WatchSlot& w, double waited) {
  std::string who = w.board && !w.while_alive ? w.board->missing(w.seq) : "";
  // A rank that arrived and then stopped has stopped stamping the board.
  const std::string silent = w.board ? w.board->silent(2.0) : "";
  if (who.empty() && !silent.empty()) who = "none, but rank " + silent + " shows no sign of life (stopped?)";
  else if (!silent.empty()) who += "; silent: rank " + silent;
  // seq 0: a phase of file I/O and collectives (a checkpoint), whose arrivals are not counted.
  if (who.empty() && w.board && w.seq == 0 && !w.while_alive)
    who = "none stopped (all ranks alive: a slow file system, or the transport)";
  if (who.empty()) who = w.board ? "none (all arrived and alive; the transport is stuck)"
                                 : "unknown (not tracked across nodes)";
  // Resumed after a stop (SIGCONT before the launcher's kill): the wait was this rank's own.
  const auto since_ns = std::uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(w.since.time_since_epoch()).count());
  if (ws.frozen_until_ns > since_ns) {
    char buf[80];
    std::snprintf(buf, sizeof buf, "; this rank itself was stopped for %.1f s", ws.frozen_s);
    who += buf;
  }
  std::fprintf(stderr,
               "fsdp: watchdog on rank %d (%s): %s has not completed after %.1f s "
               "(comm.timeout_s = %g); ranks that have not arrived: %s\n",
               world_rank(), host_name().c_str(), w.what.c_str(), waited, ws.timeout_s,
               who.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  _exit(6);  // MPI_Abort from a second thread is not safe under MPI_THREAD_SINGLE
}

void watchdog_loop() {
  WatchdogState& w = watchdog();
  std::unique_lock<std::mutex> lock(w.mu);
  std::uint64_t last = now_ns();
  for (;;) {
    w.cv.wait_for(lock, std::chrono::milliseconds(100));
    const std::uint64_t now = now_ns();
    if (now - last > 2000000000ull) w.frozen_s = double(now - last) * 1e-9, w.frozen_until_ns = now;
    last = now;
    for (ArrivalBoard* b : w.boards) b->beat(now);
    if (w.timeout_s <= 0) continue;  // comm.timeout_s = 0 after the start-up watch: off
    for (const auto& [id, slot] : w.slots) {
      if (!slot.active) continue;
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - slot.since).count();
      if (waited <= w.timeout_s) continue;
      // Waiting on ranks that work: only a silent one ends it (named by the report).
      if (slot.while_alive && (!slot.board || slot.board->silent(w.timeout_s).empty())) continue;
      watchdog_fire(w, slot, waited);
    }
  }
}

}  // namespace

CallSite::CallSite(const std::string& tag, const char* file, int line) : previous_(t_site) {
  t_site = tag + " @ " + base_name(file) + ":" + std::to_string(line);
}
CallSite::~CallSite() { t_site = previous_; }
std::string CallSite::current() { return t_site.empty() ? "(untagged)" : t_site; }

Fingerprint make_fingerprint(const char* op, const std::string& group, const char* dtype,
                             std::uint64_t count) {
  Fingerprint f;
  copy(f.op, sizeof f.op, op);
  copy(f.group, sizeof f.group, group);
  copy(f.dtype, sizeof f.dtype, dtype);
  copy(f.site, sizeof f.site, CallSite::current());
  f.count = count;
  return f;
}

std::string describe(const Fingerprint& f) {
  return std::string(f.op) + "(" + std::to_string(f.count) + " x " + f.dtype + ") on '" +
         f.group + "' from " + f.site;
}

bool same(const Fingerprint& a, const Fingerprint& b) {
  return std::strcmp(a.op, b.op) == 0 && std::strcmp(a.group, b.group) == 0 &&
         std::strcmp(a.dtype, b.dtype) == 0 && std::strcmp(a.site, b.site) == 0 &&
         a.count == b.count;
}

std::unique_ptr<ArrivalBoard> ArrivalBoard::create(MPI_Comm comm) {
  int rank = 0, size = 0, node_size = 0;
  FSDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  MPI_Comm node = MPI_COMM_NULL;
  FSDP_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  FSDP_MPI_CHECK(MPI_Comm_size(node, &node_size));
  FSDP_MPI_CHECK(MPI_Comm_free(&node));
  int one_node = node_size == size ? 1 : 0, all = 0;
  FSDP_MPI_CHECK(MPI_Allreduce(&one_node, &all, 1, MPI_INT, MPI_MIN, comm));
  if (!all) return nullptr;
  std::uint64_t* mine = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  FSDP_MPI_CHECK(MPI_Win_allocate_shared(64, 1, MPI_INFO_NULL, comm, &mine, &win));
  mine[0] = 0;
  mine[1] = 0;  // no stamp yet: never counted as silent
  std::unique_ptr<ArrivalBoard> b(new ArrivalBoard(win, rank, size, mine));
  for (int q = 0; q < size; ++q) {
    MPI_Aint bytes = 0;
    int disp = 0;
    void* p = nullptr;
    FSDP_MPI_CHECK(MPI_Win_shared_query(win, q, &bytes, &disp, &p));
    b->peers_[q] = static_cast<std::uint64_t*>(p);
  }
  FSDP_MPI_CHECK(MPI_Barrier(comm));
  {
    WatchdogState& w = watchdog();
    std::lock_guard<std::mutex> lock(w.mu);
    w.boards.push_back(b.get());
  }
  b->beat(now_ns());
  return b;
}

ArrivalBoard::ArrivalBoard(MPI_Win win, int rank, int size, std::uint64_t* mine)
    : win_(win), rank_(rank), size_(size), mine_(mine), peers_(size, nullptr) {}

ArrivalBoard::~ArrivalBoard() {
  {
    WatchdogState& w = watchdog();
    std::lock_guard<std::mutex> lock(w.mu);
    w.boards.erase(std::remove(w.boards.begin(), w.boards.end(), this), w.boards.end());
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Win_free(&win_);
}

void ArrivalBoard::arrive(std::uint64_t seq) { __atomic_store_n(mine_, seq, __ATOMIC_RELEASE); }

std::string ArrivalBoard::missing(std::uint64_t seq) const {
  std::string out;
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    if (__atomic_load_n(peers_[q], __ATOMIC_ACQUIRE) < seq)
      out += (out.empty() ? "" : ", ") + std::to_string(q);
  }
  return out;
}

void ArrivalBoard::beat(std::uint64_t now) { __atomic_store_n(mine_ + 1, now, __ATOMIC_RELEASE); }

std::string ArrivalBoard::silent(double seconds) const {
  std::string out;
  const std::uint64_t now = now_ns();
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    const std::uint64_t stamp = __atomic_load_n(peers_[q] + 1, __ATOMIC_ACQUIRE);
    if (stamp == 0 || stamp >= now) continue;
    const double quiet = double(now - stamp) * 1e-9;
    if (quiet < seconds) continue;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%d (silent %.1f s)", q, quiet);
    out += (out.empty() ? "" : ", ") + std::string(buf);
  }
  return out;
}

void start_watchdog(double timeout_s) {
  WatchdogState& w = watchdog();
  std::lock_guard<std::mutex> lock(w.mu);
  w.timeout_s = timeout_s;
  if (w.started || timeout_s <= 0) return;
  w.started = true;
  std::thread(watchdog_loop).detach();
}

bool watchdog_started() { return watchdog().started; }

struct Watch::Saved {
  bool active;
  std::chrono::steady_clock::time_point since;
  std::string what;
  const ArrivalBoard* board;
  std::uint64_t seq;
  bool while_alive;
};

Watch::Watch(std::string what, const ArrivalBoard* board, WhileAlive)
    : Watch(std::move(what), board, 0) {
  WatchdogState& w = watchdog();
  if (!w.started) return;
  std::lock_guard<std::mutex> lock(w.mu);
  w.slots[std::this_thread::get_id()].while_alive = true;
}

Watch::Watch(std::string what, const ArrivalBoard* board, std::uint64_t seq) {
  WatchdogState& w = watchdog();
  if (!w.started) return;
  std::lock_guard<std::mutex> lock(w.mu);
  WatchSlot& s = w.slots[std::this_thread::get_id()];
  if (s.active)
    outer_.reset(new Saved{true, s.since, std::move(s.what), s.board, s.seq, s.while_alive});
  s.active = true;
  s.since = std::chrono::steady_clock::now();
  s.what = std::move(what);
  s.board = board;
  s.seq = seq;
  s.while_alive = false;
}

Watch::~Watch() {
  WatchdogState& w = watchdog();
  if (!w.started) return;
  std::lock_guard<std::mutex> lock(w.mu);
  WatchSlot& s = w.slots[std::this_thread::get_id()];
  s.active = false;
  if (!outer_) return;
  s.active = true;
  s.since = outer_->since;
  s.what = std::move(outer_->what);
  s.board = outer_->board;
  s.seq = outer_->seq;
  s.while_alive = outer_->while_alive;
}

}  // namespace fsdp::comm
