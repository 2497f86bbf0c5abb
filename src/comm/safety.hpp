// SPDX-License-Identifier: MIT
// Guards against the two classic distributed-training failures: ranks that disagree about which
// collective comes next (fingerprints, debug.check_collectives) and a collective that never
// completes (a watchdog, comm.timeout_s, naming the operation and the ranks that did not arrive).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace fsdp::comm {

// Names the collectives this thread issues while it lives: a tag (e.g. the unit) and the call
// site, both part of the fingerprint.
class CallSite {
 public:
  CallSite(const std::string& tag, const char* file, int line);
  ~CallSite();
  CallSite(const CallSite&) = delete;
  CallSite& operator=(const CallSite&) = delete;
  static std::string current();

 private:
  std::string previous_;
};
#define FSDP_COMM_SITE(tag) ::fsdp::comm::CallSite fsdp_comm_site_((tag), __FILE__, __LINE__)

// What a rank is about to do, compared across the ranks of a communicator before it does it.
struct Fingerprint {
  char op[24];
  char group[16];
  char dtype[8];
  char site[120];
  std::uint64_t count;
};
Fingerprint make_fingerprint(const char* op, const std::string& group, const char* dtype,
                             std::uint64_t count);
std::string describe(const Fingerprint& f);
bool same(const Fingerprint& a, const Fingerprint& b);

// Per-communicator arrival counters in a one-node shared window: each rank stores how many
// collectives it has entered, so a rank stuck in one can tell who has not arrived. Each rank's
// watchdog thread also stamps the time into it every 100 ms: a rank that arrived and then
// stopped (SIGSTOP, a debugger, swapped out) falls silent, and is named as such.
class ArrivalBoard {
 public:
  // nullptr where the communicator spans nodes or the window cannot be made (collective).
  static std::unique_ptr<ArrivalBoard> create(MPI_Comm comm);
  ~ArrivalBoard();
  void arrive(std::uint64_t seq);
  std::string missing(std::uint64_t seq) const;  // "1, 3" or ""
  // The ranks whose watchdog has not stamped the board for `seconds`: "1 (silent 31.2 s)" or "".
  std::string silent(double seconds) const;
  void beat(std::uint64_t now_ns);  // the watchdog thread's stamp

 private:
  ArrivalBoard(MPI_Win win, int rank, int size, std::uint64_t* mine);
  MPI_Win win_;
  int rank_, size_;
  std::uint64_t* mine_;
  std::vector<std::uint64_t*> peers_;
};

// Starts the process-wide watchdog thread (idempotent). A watched operation running longer than
// timeout_s prints what it was and who had not arrived, then ends this process with exit code 6,
// which makes the launcher end the job.
// Called again, it sets the timeout only (0 or less: watched operations are no longer timed).
void start_watchdog(double timeout_s);

// Watched while waiting for the other ranks to finish work of their own (tokenizing shares of
// unequal cost): ended only when one of them has been silent (stopped) for the timeout, not
// while all are alive; without an ArrivalBoard (across nodes) it is not timed.
struct WhileAlive {};

// Every app starts the watchdog at this timeout on its first lines and watches its start-up
// (reading the deck, weights and data, the first collectives), so nothing waits unbounded
// before the deck's comm.timeout_s is known; a FIFO or a stuck disk ends with exit code 6.
inline constexpr double kStartupTimeoutS = 30.0;

bool watchdog_started();

// Marks an operation the watchdog should time while it lives. `what` describes it for the
// report; it is only built when the watchdog runs (a callable returning the text), so an
// unwatched collective pays no string building. Watches nest: a collective inside a watched
// phase (a checkpoint write, start-up) times itself, then the phase's own clock resumes.
class Watch {
 public:
  Watch(std::string what, const ArrivalBoard* board = nullptr, std::uint64_t seq = 0);
  Watch(std::string what, const ArrivalBoard* board, WhileAlive);
  template <class Describe, class = std::enable_if_t<std::is_invocable_r_v<std::string, Describe>>>
  Watch(const Describe& what, const ArrivalBoard* board = nullptr, std::uint64_t seq = 0)
      : Watch(watchdog_started() ? what() : std::string(), board, seq) {}
  ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

 private:
  struct Saved;
  std::unique_ptr<Saved> outer_;  // the enclosing watch, restored on destruction
};

}  // namespace fsdp::comm
