// SPDX-License-Identifier: MIT
#include "comm/null_communicator.hpp"

#include <cstring>

namespace fsdp::comm {

namespace {
// A collective in flight on the log: waiting for it (or seeing it done) is where the engine
// would wait for its data.
class LoggedPending final : public detail::Pending {
 public:
  LoggedPending(StepLog& log, int handle) : log_(log), handle_(handle) {}
  bool test() override {
    wait();
    return true;
  }
  void wait() override {
    if (waited_) return;
    waited_ = true;
    log_.wait(handle_);
  }

 private:
  StepLog& log_;
  int handle_;
  bool waited_ = false;
};
}  // namespace

NullCommunicator::NullCommunicator(int rank, const std::vector<int>& members, std::string name,
                                   StepLog* log)
    : Communicator(rank, int(members.size()), std::move(name), {}), log_(log) {
  if (log_) group_ = log_->group(this->name(), members);
}

std::unique_ptr<detail::Pending> NullCommunicator::note(Transfer op, double bytes, bool blocking,
                                                        bool scalars) {
  if (!log_) return nullptr;
  const int h = log_->issue(op, group_, bytes, scalars);
  if (blocking) {
    log_->wait(h);
    return nullptr;
  }
  return std::make_unique<LoggedPending>(*log_, h);
}

std::unique_ptr<detail::Pending> NullCommunicator::start_all_to_all_v(
    ConstVec, const PeerBlocks& send_blocks, Vec, const PeerBlocks&, bool blocking) {
  double sent = 0.0;
  for (std::int64_t c : send_blocks.counts) sent += double(c);
  return note(Transfer::AllToAll, 4.0 * sent, blocking);
}

void NullCommunicator::all_gather_bytes(const void* send, void* recv, std::size_t bytes) {
  note(Transfer::AllReduce, double(bytes), true, true);
  for (int q = 0; q < size(); ++q)
    std::memcpy(static_cast<char*>(recv) + std::size_t(q) * bytes, send, bytes);
}

// What this rank sends peer q is what q sends it: the counts of a balanced exchange.
void NullCommunicator::all_to_all_bytes(const void* send, void* recv, std::size_t bytes) {
  std::memcpy(recv, send, std::size_t(size()) * bytes);
}

}  // namespace fsdp::comm
