// SPDX-License-Identifier: MIT
#include "prepare/gather_mask.hpp"

#include <algorithm>
#include <vector>

#include "core/check.hpp"

namespace fsdp::prepare {
namespace {

constexpr std::size_t kChunk = std::size_t(1) << 28;  // bytes per message: under INT_MAX
constexpr int kTag = 7201;

}  // namespace

TrainedMask gather_mask(MPI_Comm comm, const TrainedMask& mine) {
  int rank = 0, size = 1;
  FSDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  std::vector<std::int64_t> counts(std::size_t(size), 0);
  const std::int64_t n = mine.size();
  FSDP_MPI_CHECK(MPI_Gather(&n, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, 0, comm));
  if (rank != 0) {
    const auto& b = mine.bytes();
    for (std::size_t at = 0; at < b.size(); at += kChunk)
      FSDP_MPI_CHECK(MPI_Send(b.data() + at, int(std::min(kChunk, b.size() - at)), MPI_BYTE, 0,
                              kTag, comm));
    return TrainedMask();
  }
  std::int64_t total = 0;
  for (std::int64_t c : counts) total += c;
  TrainedMask whole(total);
  std::vector<std::uint8_t> bytes;
  std::int64_t first = 0;
  for (int r = 0; r < size; ++r) {
    const std::int64_t c = counts[std::size_t(r)];
    if (r == 0) {
      bytes = mine.bytes();
    } else {
      bytes.assign(std::size_t((c + 7) / 8), 0);
      for (std::size_t at = 0; at < bytes.size(); at += kChunk)
        FSDP_MPI_CHECK(MPI_Recv(bytes.data() + at, int(std::min(kChunk, bytes.size() - at)),
                                MPI_BYTE, r, kTag, comm, MPI_STATUS_IGNORE));
    }
    for (std::int64_t i = 0; i < c; ++i)
      if ((bytes[std::size_t(i >> 3)] >> (i & 7)) & 1) whole.set(first + i, true);
    first += c;
  }
  return whole;
}

}  // namespace fsdp::prepare
