// SPDX-License-Identifier: MIT
// A decoder's shape and the model.* choices of the deck, owned by the model layer: config/
// fills it from the deck, checkpoints store
// it, the planner scales it. Which fields an architecture reads is its own business (GPT-2:
// all of them). B = micro-batch, T = block_size, C = n_embd, V = vocab_size, L = n_layer,
// H = n_head.
#pragma once
#include <string>

#include "model/registry.hpp"

namespace fsdp {

struct ModelConfig {
  std::string arch = kDefaultArch;  // model.arch: a name in model/registry.hpp
  int n_layer = 4;
  int n_head = 4;
  int n_embd = 128;
  int vocab_size = 256;
  int block_size = 64;
  int n_positions = 0;  // rows of the position table; 0 = block_size
  int positions() const { return n_positions > 0 ? n_positions : block_size; }
  std::string activation_checkpointing = "none";  // none | blocks
  std::string attention = "auto";                 // auto | fused | materialized

  // fsdp.unit = sublayer: each block is two units. Not a model.* key: the run's cut, which
  // config/run_setup.cpp sets; the tensors and a checkpoint are the same either way.
  bool sublayer_units = false;
};

}  // namespace fsdp
