// SPDX-License-Identifier: MIT
// The run deck resolved once into the typed setup that the trainer, the engine and the planner
// all use (the engine never sees the raw deck):
// the strategy and the other fsdp.* choices as enums, the shard group, the micro-batches, the
// padding rule of the sharded units and every check that involves the number of ranks. The
// schema (config/schema.cpp) has checked each key and the cross-key rules that do not.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/mesh_shape.hpp"
#include "config/run_config.hpp"
#include "core/optimizer_kind.hpp"
#include "model/model_choices.hpp"
#include "model/placement.hpp"

namespace fsdp {

// What is sharded (fsdp/strategy.hpp says what each keeps and communicates).
enum class Strategy { DDP, Zero1, Zero2, Zero3, Hybrid };
// Optimizer, Params: host memory. Nvme: files on a local disk (core/offload_file.hpp), the
// moments always and the parameter shards with offload.params.
enum class Offload { None, Optimizer, Params, Nvme };
enum class Precision { FP32, BF16 };  // bf16: bf16 params/activations, fp32 master + moments

// Throw std::invalid_argument for a name the schema would not accept.
Strategy parse_strategy(const std::string& s);
Offload parse_offload(const std::string& s);
Precision parse_precision(const std::string& s);
const char* strategy_name(Strategy s);
const char* to_string(Offload o);
const char* to_string(Precision p);

// Deterministic mode sums the gradient norm in blocks of this many elements and pads every
// unit to whole blocks per shard, so block boundaries do not depend on the number of ranks.
constexpr std::int64_t kNormBlock = 1024;

// One training configuration on one machine size.
struct RunSetup {
  ModelConfig model;      // the model's shape
  ModelChoices choices;   // the run's choices the model computes with, decided once here
  TrainConfig train;  // the optimizer, its schedule, the seed
  MuonConfig muon;    // train.optimizer = muon
  OptimizerKind optimizer = OptimizerKind::AdamW;  // train.optimizer
  bool muon_optimizer() const { return optimizer == OptimizerKind::Muon; }
  Strategy strategy = Strategy::Zero3;
  int ranks = 1;
  int nodes = 1;
  int shard_group_size = 0;  // hybrid: ranks per shard group; 0 = ranks per node
  int prefetch = 1;
  bool reshard_after_forward = true;
  bool prefetch_across_steps = true;  // the optimizer issues the next step's first gathers
  Offload offload = Offload::None;
  std::string offload_path;     // offload.path (nvme)
  bool offload_params = false;  // offload.params (nvme)
  Precision precision = Precision::FP32;
  bool reduce_bf16 = false;  // fsdp.reduce_dtype = bf16
  // fsdp.gemm_dtype resolved: the linear layers' and LM head's GEMMs take bf16 weights and
  // activations and accumulate in fp32 (model/gemm/bf16_gemm.hpp).
  bool bf16_gemms = false;
  bool bf16_gemms_asked = false;  // fsdp.gemm_dtype = bf16 itself, for validate()
  // model.activation_checkpointing = blocks: the engine, its counted run (plan/counted_step.hpp)
  // and the model read this one decision.
  bool activation_checkpointing() const { return choices.checkpoint_blocks; }
  bool accumulate_sharded = false;  // fsdp.accumulate = sharded
  int micro_batch = 1;              // sequences per forward+backward on one rank
  int batch_size = 0;               // global sequences per step; 0 = one micro-batch per rank
  bool deterministic = false;       // train.deterministic: canonical tree sums (fp32 only)
  // checkpoint.every > 0 with checkpoint.async: each rank that writes its shard keeps a host
  // copy of it (parameters and both moments) for the background writer.
  bool checkpoint_staging = false;

  int ranks_per_node() const { return ranks / nodes; }
  // The parameter shards leave the device (host memory or disk); the gradient shards are then
  // in host memory, where the optimizer runs.
  bool offloads_params() const {
    return offload == Offload::Params || (offload == Offload::Nvme && offload_params);
  }
  // nvme: the parameter shards are in the offload file (validate() allows offload.params only
  // where the strategy shards the parameters), and so each unit has this many regions there.
  bool params_on_disk() const { return offload == Offload::Nvme && offload_params; }
  int offload_regions() const { return offload != Offload::Nvme ? 0 : params_on_disk() ? 3 : 2; }
  int shard_group() const;      // ddp 1, zero1/2/3 all ranks, hybrid the configured size
  int replicate_group() const { return ranks / shard_group(); }
  // The run's device mesh (comm/mesh_shape.hpp), decided here once: replicate x shard as the
  // strategy groups the ranks, fsdp.expert_parallel carved out of shard; context and tensor 1.
  comm::MeshShape mesh() const;
  // Placement p's groups on the mesh: the ranks one slice of its part is sharded over, and the
  // copies of each shard (placement 0 and a part not split: the shard and replicate groups).
  struct PartGroups {
    comm::MeshGroup shard, replicate;
  };
  PartGroups part_groups(int p) const;
  // The groups beyond the five dimensions that the parts need (comm::DeviceMesh's `extra`).
  std::vector<comm::MeshGroup> mesh_groups() const;
  // The mesh's parts (model/placement.hpp): the architecture's placements, and for placement p
  // the ranks one copy of its part is sharded over and the copies (0 from part_split: a split
  // the shard group cannot take, which validate() refuses). Placement 0 of an architecture with
  // one placement is the shard group itself.
  std::vector<Placement> placements{{"dense", 1}};
  int part_split(int p) const;
  // A by_expert placement's slices (fsdp.expert_parallel where the part is divided, else 1), and
  // whether its tensors join placement 0 instead (by_expert, not divided).
  int part_slices(int p) const;
  bool part_merged(int p) const { return placements[std::size_t(p)].by_expert && part_slices(p) == 1; }
  // The ranks one slice of the part is sharded over (a part not divided: one slice), and the
  // copies of each shard.
  int part_shard_group(int p) const { return mesh().size(part_groups(p).shard); }
  int part_replicate_group(int p) const { return mesh().size(part_groups(p).replicate); }
  // The mesh in words, outermost dimension first, e.g. "replicate 2 x shard 2; 'half' parts:
  // shard 1 x replicate 4" (what fsdp-train logs).
  std::string describe_mesh() const;
  int micro_batches() const;    // per rank per step
  std::int64_t global_batch() const {
    return batch_size > 0 ? batch_size : std::int64_t(ranks) * micro_batch;
  }
  // The padding rule of every sharded unit: a multiple of the shard group, of whole norm
  // blocks per shard in deterministic mode, of whole 4-byte words per bf16 shard, and of the
  // replicas under a bf16 reduction (its all-reduce splits each shard into even blocks).
  // Placement p's part follows the rule over its own groups.
  std::int64_t padding_quantum(int p = 0) const;
  std::int64_t padded_numel(std::int64_t numel, int p = 0) const;
  // Throws std::invalid_argument with the one-line reason the trainer reports (exit code 2):
  // divisibility over the ranks, the modes deterministic training refuses, offload needing
  // sharded parameters.
  void validate() const;

 private:
  void validate_lora() const;
};

// The deck's choices the model computes with (fsdp.unit, model.activation_checkpointing,
// model.attention, fsdp.expert_parallel, moe.*, and with train.deterministic the experts'
// gradients sent home): the one place they are decided.
ModelChoices model_choices(const RunConfig& cfg);

// The run deck on `ranks` ranks over `nodes` nodes. bf16_gemm_hardware: whether the machine
// the run is for computes bf16 GEMMs natively (fsdp.gemm_dtype = auto chooses them there);
// config/ does not probe the hardware itself: the trainer asks its own device
// (kernels::gemm_bf16_computes), a planner may answer for the machine it plans.
RunSetup setup_from_config(const RunConfig& cfg, int ranks, int nodes, bool bf16_gemm_hardware);

}  // namespace fsdp
