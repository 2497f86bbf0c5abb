// SPDX-License-Identifier: MIT
#include "io/async_checkpointer.hpp"

#include <mpi.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

#include "core/clock.hpp"

#include "core/check.hpp"
#include "core/exit_codes.hpp"
#include "core/memory.hpp"

namespace fsdp {
bool AsyncCheckpointer::available() {
  int level = MPI_THREAD_SINGLE;
  FSDP_MPI_CHECK(MPI_Query_thread(&level));
  return level == MPI_THREAD_MULTIPLE;
}

AsyncCheckpointer::AsyncCheckpointer(Checkpointer& checkpointer, MemoryTracker& tracker,
                                     bool log, std::int64_t file_bytes)
    : checkpointer_(checkpointer), staged_(tracker), log_(log), file_bytes_(file_bytes) {
  writer_ = std::thread([this] { writer_loop(); });
}

AsyncCheckpointer::~AsyncCheckpointer() {
  wait();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  writer_.join();
}

AsyncCheckpointer::Written AsyncCheckpointer::wait(double* waited_s) {
  const double t0 = now_s();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !pending_; });
  if (waited_s) *waited_s = now_s() - t0;
  return last_;
}

AsyncCheckpointer::Started AsyncCheckpointer::save(CheckpointedState& live, const ckpt::Header& h) {
  Started s;
  wait(&s.waited_s);  // at most one save in flight
  const double t0 = now_s();
  staged_.stage(live);
  s.staged_s = now_s() - t0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    header_ = h;
    pending_ = true;
  }
  cv_.notify_all();
  return s;
}

void AsyncCheckpointer::writer_loop() {
  // Training comes first: on a node whose cores all run ranks (a CPU cluster), the writer takes
  // the time training leaves, in small pieces, rather than a core's fair half while it writes.
  // Measured on 2 vCPUs at np 2 (docs/checkpoints.md): the steps during a write lost 0.30-0.39 s
  // per save with it, 0.38-0.40 s without; nicer still (19, SCHED_IDLE) starves the writer and
  // the next save waits for it. The write itself takes longer (it mostly waits on the disk).
  // When training waits for the write (the next save, a stop, the end) the writer has the core
  // to itself. On Linux, setpriority with a thread id sets that thread's nice value alone;
  // raising it cannot fail (past 19 it is clamped).
  ::setpriority(PRIO_PROCESS, id_t(::gettid()), ::getpriority(PRIO_PROCESS, 0) + kWriterNice);
  for (;;) {
    ckpt::Header h;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return pending_ || stop_; });
      if (!pending_) return;  // stopped with nothing to write
      h = header_;
    }
    const double t0 = now_s(), cpu0 = thread_cpu_s();
    std::string path;
    try {
      path = checkpointer_.save(staged_, h);
    } catch (const std::exception& e) {
      // Every rank meets an agreed failure at the same point; ending here, in this thread, is
      // what a synchronous save's exit 7 does, without the training thread having to notice.
      fatal(std::string("checkpoint of step ") + std::to_string(h.step) + ": " + e.what(),
            exit_code::kCheckpointWrite);
    }
    const double write_s = now_s() - t0, cpu_s = thread_cpu_s() - cpu0;
    if (log_) {
      std::printf(
          "checkpoint %s: step %lld, %s written in the background in %.2f s (%.0f MB/s, %.2f s "
          "of CPU)\n",
          path.c_str(), (long long)h.step, format_bytes(file_bytes_).c_str(), write_s,
          double(file_bytes_) / write_s / 1e6, cpu_s);
      std::fflush(stdout);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      last_ = {path, h.step, write_s};
      pending_ = false;
    }
    cv_.notify_all();
  }
}

}  // namespace fsdp
