// SPDX-License-Identifier: MIT
// A thread that runs one communicator's non-blocking shared-memory collectives, in the order
// they were issued, while the compute thread goes on. Without it a CPU collective moves its data
// inside the issue call, and waits there for late peers: communication the compute cannot
// overlap. With it the issue only queues the work, as a NCCL launch does on a GPU.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "comm/communicator.hpp"

namespace fsdp::comm {

class ProgressThread {
 public:
  ProgressThread();
  ~ProgressThread();  // runs what is queued, then joins
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  // Queues work behind everything posted before it; the result completes once it has run.
  std::unique_ptr<detail::Pending> post(std::function<void()> work);
  // Returns once everything posted so far has run: a blocking collective may then use the
  // transport from the calling thread without overtaking the queue.
  void drain();

  struct State;  // shared with the pendings, which may outlive a drained thread

 private:
  void run();

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace fsdp::comm
