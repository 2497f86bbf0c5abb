// SPDX-License-Identifier: MIT
// fsdp-train --init-from PATH: a run that starts (step 0, fresh optimizer, fresh data order)
// from weights in a file: a Hugging Face safetensors directory or file, an llm.c parameter file,
// or an fsdp checkpoint's /model group (io/weight_source.hpp, io/checkpoint.hpp).
#pragma once
#include <mpi.h>

#include <string>

#include "config/run_config.hpp"
#include "fsdp/engine.hpp"
#include "io/checkpoint.hpp"

namespace fsdp {

// The run deck with the model shape of the weights at `path`: a model key that neither the
// deck nor a --set gave takes the file's value; one they gave that disagrees is a WeightsError
// naming the key, both values and where the deck set it. Reads only the file's header; every
// rank computes the same answer. The result is validated and its resolved_toml rebuilt.
RunConfig with_init_shape(const RunConfig& cfg, const std::string& path);

// Fills this rank's parameter shards from `path` (reading only their byte ranges) and rebuilds
// the full parameters that ddp, zero1 and zero2 keep. Collective over the engine's ranks
// (`world`); a problem on any rank throws the same WeightsError (or CheckpointError) on all.
// A non-finite parameter is a WeightsError naming the tensor and index, unless
// `allow_nonfinite` (train.allow_nonfinite_weights).
void init_weights(const std::string& path, Engine& engine, Checkpointer& checkpointer,
                  MPI_Comm world, bool allow_nonfinite = false);

// --adapter DIR (a PEFT adapter directory, io/peft_import.hpp): the run deck with its lora.*
// taken from DIR's adapter_config.json. A lora key the deck or a --set gave that disagrees is a
// WeightsError naming the key, both values and where the deck set it. note: what the run will
// not apply (a lora_dropout), or "".
RunConfig with_adapter(const RunConfig& cfg, const std::string& dir, std::string& note);

// The adapters of DIR's adapter_model.safetensors into this rank's shards (after the base's).
// Collective; problems throw the same WeightsError on every rank.
void load_adapter(const std::string& dir, Engine& engine, MPI_Comm world);

}  // namespace fsdp
