// SPDX-License-Identifier: MIT
#include "comm/progress_thread.hpp"

#include <cstdint>

namespace fsdp::comm {
namespace {

struct Job {
  std::function<void()> work;
  bool done = false;  // under State::m
  Clock::time_point finished{};
};

}  // namespace

struct ProgressThread::State {
  std::mutex m;
  std::condition_variable work_posted, work_done;
  std::deque<std::shared_ptr<Job>> queue;
  std::shared_ptr<Job> last;  // the newest posted job: drain() waits for it
  bool stop = false;
};

namespace {

class Ticket final : public detail::Pending {
 public:
  Ticket(std::shared_ptr<ProgressThread::State> s, std::shared_ptr<Job> job)
      : s_(std::move(s)), job_(std::move(job)) {}
  bool test() override {
    std::lock_guard<std::mutex> lock(s_->m);
    return job_->done;
  }
  void wait() override {
    std::unique_lock<std::mutex> lock(s_->m);
    s_->work_done.wait(lock, [&] { return job_->done; });
  }
  bool landed_at(Clock::time_point* t) const override {
    std::lock_guard<std::mutex> lock(s_->m);
    if (job_->done) *t = job_->finished;
    return job_->done;
  }

 private:
  std::shared_ptr<ProgressThread::State> s_;
  std::shared_ptr<Job> job_;
};

}  // namespace

ProgressThread::ProgressThread() : state_(std::make_shared<State>()) {
  thread_ = std::thread([this] { run(); });
}

ProgressThread::~ProgressThread() {
  {
    std::lock_guard<std::mutex> lock(state_->m);
    state_->stop = true;
  }
  state_->work_posted.notify_one();
  thread_.join();
}

std::unique_ptr<detail::Pending> ProgressThread::post(std::function<void()> work) {
  auto job = std::make_shared<Job>();
  job->work = std::move(work);
  {
    std::lock_guard<std::mutex> lock(state_->m);
    state_->queue.push_back(job);
    state_->last = job;
  }
  state_->work_posted.notify_one();
  return std::make_unique<Ticket>(state_, std::move(job));
}

void ProgressThread::drain() {
  std::unique_lock<std::mutex> lock(state_->m);
  const std::shared_ptr<Job> last = state_->last;
  if (last) state_->work_done.wait(lock, [&] { return last->done; });
}

void ProgressThread::run() {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.m);
  for (;;) {
    s.work_posted.wait(lock, [&] { return s.stop || !s.queue.empty(); });
    if (s.queue.empty()) return;  // stop, and nothing left to run
    const std::shared_ptr<Job> job = std::move(s.queue.front());
    s.queue.pop_front();
    lock.unlock();
    job->work();  // a failure inside is fatal() for the whole job, as on the compute thread
    job->work = nullptr;
    const Clock::time_point t = Clock::now();
    lock.lock();
    job->done = true;
    job->finished = t;
    s.work_done.notify_all();
  }
}

}  // namespace fsdp::comm
