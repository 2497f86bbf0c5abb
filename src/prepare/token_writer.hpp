// SPDX-License-Identifier: MIT
// fsdp-data prepare's output, written by all ranks together: OUT.bin (an llm.c token file) and
// OUT.bin.trained (data/trained_mask.hpp). Each rank writes its own tokens at its offset in the
// file (an exclusive scan of the ranks' token counts) through MPI-IO, so no rank ever holds the
// whole token stream; the mask (1 bit a token, 1/16 or 1/32 of the tokens' bytes) is gathered
// to rank 0, since neighbouring ranks' bits share bytes. Both are written under temporary names
// and renamed only when every rank has written, so a failure leaves the old files as they were.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "data/trained_mask.hpp"

namespace fsdp::prepare {

// llm.c's headers: uint16 tokens (GPT-2's files) or, for vocabularies over 65,536, uint32
// tokens (the Llama 3 branch's), each a 256-int32 header of magic, version, token count.
struct LlmcFormat {
  std::int32_t magic, version;
  int width;  // bytes per token
};
LlmcFormat llmc_format_for(std::size_t vocab_size);

struct WriteResult {
  std::string error;  // one line, the same on every rank; empty when both files were renamed
  std::uint64_t tokens = 0, trained = 0;
};

// Collective over comm. tokens/mask: this rank's, in rank order the whole file; eos_id is
// recorded in the mask's header.
WriteResult write_token_files(MPI_Comm comm, const std::string& out_path, std::size_t vocab_size,
                              const std::vector<std::int32_t>& tokens, const TrainedMask& mask,
                              std::int32_t eos_id);

}  // namespace fsdp::prepare
