// SPDX-License-Identifier: MIT
// fsdp-ckpt export --peft DIR: a LoRA checkpoint's adapters as Hugging Face PEFT writes them
// (PeftModel.save_pretrained): adapter_model.safetensors with each adapter under PEFT's key,
// "base_model.model.<the base's module>.lora_A.weight" [r, in] and ".lora_B.weight" [out, r]
// (fp32), and adapter_config.json (peft_type LORA, r, lora_alpha, target_modules,
// lora_dropout, use_rslora, task_type CAUSAL_LM, base_model_name_or_path). Both files are
// written under temporary names and renamed in together, and only over files an earlier fsdp
// export provably wrote (io/hf_export_owned.hpp).
#pragma once
#include <mpi.h>

#include <map>
#include <string>
#include <vector>

#include "io/checkpoint_scan.hpp"

namespace fsdp {
struct Architecture;
}

namespace fsdp::ckpt {

// PEFT's key of adapter tensor t: "base_model.model.<the module in the base's Hugging Face
// file>.lora_A.weight" (or lora_B).
std::string peft_key(const Architecture& arch, const TensorSpec& t);

// The adapters of the opened LoRA checkpoint o, every one whole on every rank (collective),
// each checked against its stored checksums: by tensor name. On a problem, err (unreadable,
// exit 2) or damaged (a checksum, exit 1) is set, the same on every rank.
std::map<std::string, std::vector<float>> read_adapters(MPI_Comm comm, const std::string& checkpoint,
                                                        Opened& o, std::string& err, std::string& damaged);

// Collective over comm. base: what adapter_config.json names as the base model ("" for null).
// Returns the exit code: 0, 1 a damaged dataset, 2 unreadable input, no adapters in the file,
// or an unwritable directory.
int export_peft(MPI_Comm comm, const std::string& checkpoint, const std::string& dir,
                const std::string& base);

}  // namespace fsdp::ckpt
