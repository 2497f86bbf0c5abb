// SPDX-License-Identifier: MIT
// One rank's part of fsdp-data prepare: the documents of its byte share (input_shares), in
// input order, as tokens and trained flags. Stops at the first bad document of the share.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "prepare/document_encoder.hpp"
#include "prepare/first_error.hpp"
#include "prepare/input_list.hpp"
#include "prepare/input_shares.hpp"
#include "data/trained_mask.hpp"

namespace fsdp::prepare {

struct ShareOutput {
  std::vector<std::int32_t> tokens;
  TrainedMask mask;
  std::uint64_t documents = 0;
  FoundError error;  // the first bad document of this share
};

// Called after each document with the bytes of the share done so far.
using ShareProgress = std::function<void(std::uint64_t bytes, const ShareOutput&)>;

ShareOutput tokenize_share(const InputList& in, const ByteRange& share, bool last_rank,
                           DocumentEncoder& encoder, const ShareProgress& progress);

}  // namespace fsdp::prepare
