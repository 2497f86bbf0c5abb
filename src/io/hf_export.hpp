// SPDX-License-Identifier: MIT
// fsdp-ckpt export: a checkpoint's /model as a Hugging Face directory in its architecture's
// form (model/architecture.hpp, HfAdapter): model.safetensors (HF names and layouts; a tied
// head is not stored, as save_pretrained does) and config.json, loadable by
// AutoModelForCausalLM.from_pretrained(DIR).
// Streamed: each rank reads whole checksum blocks of one dataset at a time, verifies them
// against the checkpoint's own checksums, and writes them at their place in the file with
// MPI-IO; no rank ever holds more than kBlocksPerRead blocks. Written to *.tmp names and renamed
// once complete, so DIR never holds a half-written model.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>

#include "model/model_config.hpp"
#include "io/safetensors.hpp"

namespace fsdp::ckpt {

// save_pretrained's default max_shard_size, "5GB".
constexpr std::uint64_t kDefaultMaxShardBytes = 5000000000ULL;

// 0 written; 1 the checkpoint is damaged (a checksum mismatch; nothing is left in DIR);
// 2 unreadable checkpoint or unwritable DIR. Rank 0 prints. Collective. max_shard_bytes > 0:
// tensors in files of at most that much data each (save_pretrained's sharding:
// model-0000k-of-0000n.safetensors and model.safetensors.index.json) when one file would hold
// more; 0: always one file. A LoRA checkpoint's export is its base; merge: each adapted weight
// plus its adapter's scale B A (docs/lora.md), in the base's own format (refused, exit 2, for a
// checkpoint without adapters).
int export_hf(MPI_Comm comm, const std::string& checkpoint, const std::string& dir,
              weights::DType dtype, std::uint64_t max_shard_bytes = kDefaultMaxShardBytes,
              bool merge = false);

// config.json for model m stored as `dtype`, as its architecture writes it.
std::string hf_config_json(const fsdp::ModelConfig& m, weights::DType dtype);

}  // namespace fsdp::ckpt
