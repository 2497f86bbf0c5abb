// SPDX-License-Identifier: MIT
// The checkpoint.* section of the deck (config/ fills it) and what a checkpointer records of
// the run it saves: io's own structs, so io needs nothing from config/.
#pragma once
#include <string>

#include "core/optimizer_kind.hpp"
#include "model/model_choices.hpp"
#include "model/model_config.hpp"

namespace fsdp {

struct CheckpointConfig {
  std::string dir = "checkpoints";
  int every = 0;  // steps; 0 = off
  int keep = 2;
  // Periodic saves copy the state and write the file in the background
  // (io/async_checkpointer.hpp); the same file as a synchronous save.
  bool async = true;
};

struct CheckpointRun {
  CheckpointConfig checkpoint;
  ModelConfig model;     // the deck's model.* (its shape; the run's cut is not stored)
  std::string run_toml;  // the resolved run deck, recorded in every file
  std::string strategy;  // fsdp.strategy, recorded for fsdp-ckpt info
  OptimizerKind optimizer = OptimizerKind::AdamW;  // which optimizer state the files hold
  LoraChoices lora;  // lora.*: the adapters the files hold beside the base (off: none)
};

}  // namespace fsdp
