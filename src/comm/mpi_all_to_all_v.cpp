// SPDX-License-Identifier: MIT
// The all-to-all-v over plain MPI, as one Irecv and one Isend per peer rather than
// MPI_Ialltoallv: the receiver's status says how much its sender sent, so counts that disagree
// are one clear error instead of undefined behaviour; displacements are pointers, not MPI's int
// (no 2^31-element limit on a buffer); and the requests progress in MPI_Testall like any other
// request. Empty blocks are still messages, so a sender and receiver that disagree about one
// never leave a send unmatched (which a later call's receive would then take).
// Several may be in flight: the communicator is private to its Communicator, messages between
// two ranks match in the order they were posted (MPI's non-overtaking rule), and every rank
// issues its collectives in the same order.
#include <cstring>
#include <vector>

#include "comm/mpi_collectives.hpp"
#include "core/check.hpp"

namespace fsdp::comm::mpi {
namespace {

constexpr int kTag = 0xa2a;  // below the 32767 every MPI allows

class PeerExchange final : public detail::Pending {
 public:
  PeerExchange(std::string where, int me) : where_(std::move(where)), me_(me) {}

  void expect_from(int peer, int count, MPI_Request r) {
    from_.push_back(peer);
    expected_.push_back(count);
    reqs_.push_back(r);
  }
  void sent(MPI_Request r) { reqs_.push_back(r); }  // after every expect_from

  bool test() override {
    if (done_) return true;
    int flag = 0;
    check(MPI_Testall(int(reqs_.size()), reqs_.data(), &flag, statuses()), "MPI_Testall");
    if (flag) verify();
    return done_;
  }

  void wait() override {
    if (done_) return;
    check(MPI_Waitall(int(reqs_.size()), reqs_.data(), statuses()), "MPI_Waitall");
    verify();
  }

 private:
  MPI_Status* statuses() {
    statuses_.resize(reqs_.size());
    return statuses_.data();
  }

  // A sender that sends more than its receiver posted shows up as a truncated receive.
  void check(int rc, const char* call) {
    if (rc == MPI_SUCCESS) return;
    if (rc == MPI_ERR_IN_STATUS)
      for (std::size_t i = 0; i < from_.size(); ++i) {
        int cls = MPI_SUCCESS;
        MPI_Error_class(statuses_[i].MPI_ERROR, &cls);
        if (cls == MPI_ERR_TRUNCATE)
          fatal(where_ + ": rank " + std::to_string(from_[i]) + " sends rank " +
                std::to_string(me_) + " more than the " +
                std::to_string(std::int64_t(expected_[i]) * 4) + " bytes it expects");
      }
    mpi_failed(rc, call, __FILE__, __LINE__);
  }

  void verify() {
    for (std::size_t i = 0; i < from_.size(); ++i) {
      int got = 0;
      FSDP_MPI_CHECK(MPI_Get_count(&statuses_[i], MPI_FLOAT, &got));
      check_sent_matches(where_, from_[i], me_, std::int64_t(got) * 4,
                         std::int64_t(expected_[i]) * 4, "bytes");
    }
    done_ = true;  // the requests are MPI_REQUEST_NULL now: never wait on them again
  }

  std::string where_;
  int me_;
  std::vector<int> from_,
      expected_;  // per receive request, expected in floats (the first from_.size() requests)
  std::vector<MPI_Request> reqs_;
  std::vector<MPI_Status> statuses_;
  bool done_ = false;
};

}  // namespace

std::unique_ptr<detail::Pending> all_to_all_v(MPI_Comm comm, const float* send,
                                              const PeerBlocks& send_blocks, float* recv,
                                              const PeerBlocks& recv_blocks,
                                              const std::string& where, bool blocking) {
  int n = 0, me = 0;
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &n));
  FSDP_MPI_CHECK(MPI_Comm_rank(comm, &me));
  auto op = std::make_unique<PeerExchange>(where, me);
  // post(peer, offset, count) for every peer but this rank, with its block of `b`.
  auto each_peer = [&](const PeerBlocks& b, const auto& post) {
    for (int q = 0; q < n; ++q)
      if (q != me)
        post(q, b.displs[std::size_t(q)],
             checked_count(std::size_t(b.counts[std::size_t(q)]), "all_to_all_v"));
  };
  // Receives first, so blocks that arrive early land in place rather than in MPI's buffers.
  each_peer(recv_blocks, [&](int p, std::int64_t at, int c) {
    MPI_Request r = MPI_REQUEST_NULL;
    FSDP_MPI_CHECK(MPI_Irecv(recv + at, c, MPI_FLOAT, p, kTag, comm, &r));
    op->expect_from(p, c, r);
  });
  each_peer(send_blocks, [&](int q, std::int64_t at, int c) {
    MPI_Request r = MPI_REQUEST_NULL;
    FSDP_MPI_CHECK(MPI_Isend(send + at, c, MPI_FLOAT, q, kTag, comm, &r));
    op->sent(r);
  });
  // This rank's own block (the caller checked both sides agree) while the messages fly.
  const std::size_t own = std::size_t(send_blocks.counts[std::size_t(me)]);
  if (own > 0)
    std::memcpy(recv + recv_blocks.displs[std::size_t(me)],
                send + send_blocks.displs[std::size_t(me)], own * sizeof(float));
  if (blocking) {
    op->wait();
    return nullptr;
  }
  return op;
}

}  // namespace fsdp::comm::mpi
