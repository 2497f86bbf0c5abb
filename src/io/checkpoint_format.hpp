// SPDX-License-Identifier: MIT
// The checkpoint file, format version 1, and the checkpoint directory. One ordinary HDF5 file:
//   /model/<name>               float32 parameter in its natural shape, Hugging Face GPT-2 name
//   /optim/exp_avg/<name>       AdamW first moment, same shape
//   /optim/exp_avg_sq/<name>    AdamW second moment, same shape
//   /optim/momentum/<name>      train.optimizer = muon: the hidden matrices' Muon momentum,
//                               in place of their two AdamW moments (the root's `optimizer`
//                               attribute says which; a file without it is AdamW's)
// Each dataset has `xxh3_blocks` (uint64[ceil(numel / checksum_block_elems)], the XXH3-64 of
// each block of its row-major contents) and `xxh3` (uint64, XXH3-64 of that table). The root's
// attributes are the Header below. The directory holds step_NNNNNN.h5 files (written as
// step_NNNNNN.h5.<run id>.tmp and renamed once complete), `latest`, the name of the file last
// written, and `.fsdp-lock`; io/checkpoint_dir.hpp says who owns which file.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/optimizer_kind.hpp"
#include "model/model_choices.hpp"
#include "model/model_config.hpp"
#include "model/unit_layout.hpp"
#include "io/h5_handles.hpp"

namespace fsdp::ckpt {

inline constexpr const char* kFormatName = "fsdp-checkpoint";
inline constexpr std::int64_t kFormatVersion = 1;

// One line, the same on every rank: "<file>: <dataset or attribute>: <what is wrong>".
struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class Part { Params, ExpAvg, ExpAvgSq, Momentum };
inline constexpr Part kParts[] = {Part::Params, Part::ExpAvg, Part::ExpAvgSq, Part::Momentum};
// "/model", "/optim/exp_avg", "/optim/exp_avg_sq", "/optim/momentum"
const char* group_path(Part p);
// Whether a checkpoint of `optimizer` holds part p of tensor t: parameters always; a hidden
// matrix (model/unit_layout.hpp's muon_matrix) Muon's momentum under muon, AdamW's moments else.
bool stores(Part p, const TensorSpec& t, OptimizerKind optimizer);
// A resume with the other optimizer's state: refused (exit 5), never skipped for an older file.
struct OptimizerMismatch : CheckpointError {
  using CheckpointError::CheckpointError;
};

// The root attributes.
struct Header {
  std::int64_t step = 0;             // completed training steps; the run continues at this step
  std::int64_t tokens_seen = 0;      // step * batch_size * block_size
  std::uint64_t sampler_seed = 0;    // the sampler is counter-based: its state is (seed, step)
  std::int64_t optimizer_steps = 0;  // AdamW's bias-correction count (differs after skipped steps)
  std::int64_t lr_step = 0;          // the LR schedule's position (the next step's index)
  double lr = 0.0;                   // the schedule's learning rate at lr_step
  ModelConfig model;                 // n_positions is stored resolved (the position table's rows)
  std::string run_config;            // the resolved run deck as TOML
  std::int64_t saved_ranks = 0, shard_group_size = 0;
  std::string strategy;
  std::int64_t checksum_block_elems = 0;
  std::string run_id;  // the run that wrote it (io/checkpoint_dir.hpp); "" in older files
  OptimizerKind optimizer = OptimizerKind::AdamW;  // train.optimizer of the run that wrote it
  // moe.balance = bias: the routers' per-expert biases ([sparse layers x experts], their float
  // bits in the attribute moe_router_bias); empty (no attribute) otherwise.
  std::vector<float> router_bias;
  // lora.enabled: the adapters beside the base (attributes lora_rank, lora_alpha, lora_rslora,
  // lora_targets; none without adapters). Its tensors are model_units(model, {.lora}).
  LoraChoices lora;
};
void write_header(hid_t file, const Header& h);  // collective in a parallel file
// Throws h5::H5Error when the file is not an fsdp checkpoint of a version this code reads.
Header read_header(hid_t file);
// "" when a checkpoint of model `saved` fits a run of model `run` (the same parameter shapes
// and heads), else the differences, e.g. "n_embd 32 (this run: 64)".
std::string model_mismatch(const ModelConfig& saved, const ModelConfig& run);

// "no such file" or "not an HDF5 file ..." when path cannot be an HDF5 file, else "".
// (HDF5's own message for this, "file signature not found", names neither the file nor why.)
std::string not_hdf5(const std::string& path);

// MPI-IO over comm with collective metadata reads and writes; the 1.8 file format, whose
// metadata (superblock, object headers, heaps) carries checksums of its own.
h5::Plist file_access(MPI_Comm comm);
// Contiguous float32 storage, allocated at creation, never pre-filled, no timestamps.
// Creation lists without object times, for the file's root group and its groups: the same
// state gives the same bytes whenever it is written (a background save is the synchronous file).
h5::Plist file_creation();
h5::Plist group_creation();
h5::Plist dataset_creation();

std::string file_name(std::int64_t step);  // "step_000010.h5"
struct Entry {
  std::int64_t step = 0;
  std::string path;
};
// Complete checkpoints (step_*.h5, never *.tmp) in dir, the one `latest` names first, then
// by step, newest first; none if dir is missing.
std::vector<Entry> list_complete(const std::string& dir);
// Points dir/latest at `name`, atomically (written to latest.tmp, then renamed).
void write_latest(const std::string& dir, const std::string& name);
// fsync of a file or directory, so a rename is never durable before the data it names.
void sync_path(const std::string& path);

}  // namespace fsdp::ckpt
