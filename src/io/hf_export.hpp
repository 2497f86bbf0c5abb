// SPDX-License-Identifier: MIT
// fsdp-ckpt export: a checkpoint's /model as a Hugging Face GPT-2 directory, model.safetensors
// (HF names and layouts; the LM head is tied to wte, so it is not stored, as save_pretrained
// does) and config.json (GPT2Config), loadable by GPT2LMHeadModel.from_pretrained(DIR).
// Streamed: each rank reads whole checksum blocks of one dataset at a time, verifies them
// against the checkpoint's own checksums, and writes them at their place in the file with
// MPI-IO; no rank ever holds more than kBlocksPerRead blocks. Written to *.tmp names and renamed
// once complete, so DIR never holds a half-written model.
#pragma once
#include <mpi.h>

#include <string>

#include "config/run_config.hpp"
#include "io/safetensors.hpp"

namespace fsdp::ckpt {

// 0 written; 1 the checkpoint is damaged (a checksum mismatch; nothing is left in DIR);
// 2 unreadable checkpoint or unwritable DIR. Rank 0 prints. Collective.
int export_hf(MPI_Comm comm, const std::string& checkpoint, const std::string& dir,
              weights::DType dtype);

// config.json for a GPT-2 of model m stored as `dtype`.
std::string hf_config_json(const fsdp::ModelConfig& m, weights::DType dtype);

}  // namespace fsdp::ckpt
