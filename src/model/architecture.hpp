// SPDX-License-Identifier: MIT
// Everything fsdp needs to know about a decoder architecture, in one place (the spirit of
// torchtitan's ModelSpec): its units and their initialisation, the model itself, which unit
// the LM head reads, what a micro-batch allocates and computes (the planner's replay and the
// step log's MFU), and its Hugging Face form. The engine, planner, checkpoints and Hugging
// Face I/O see an architecture only through this; model/registry.hpp maps model.arch to one.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/memory.hpp"
#include "model/attention_path.hpp"
#include "model/decoder.hpp"
#include "model/model_choices.hpp"
#include "model/model_config.hpp"
#include "model/parallel_context.hpp"
#include "model/placement.hpp"
#include "model/unit_layout.hpp"

namespace fsdp {

struct DecoderOptions {
  int micro_batch = 1;
  // fsdp.mixed_precision = bf16: attention may take bf16 inputs (an architecture may ignore it).
  bool bf16_attention = false;
  // The process groups, placed units and execution space of the run (null: a model alone).
  const ParallelContext* parallel = nullptr;
  // The units the model computes with: the run's placed layout, or else `own`.
  const std::vector<UnitLayout>& units_or(const std::vector<UnitLayout>& own) const {
    return parallel && parallel->units ? *parallel->units : own;
  }
  // The run's choices: the units' cut, checkpointing, the attention kernel, the experts'.
  ModelChoices choices;
};

// A safetensors file's tensor shapes by name (null: the file has no such tensor).
using TensorShapes = std::function<const std::vector<std::int64_t>*(const std::string& name)>;

struct HfAdapter {
  std::string architectures;  // config.json's "architectures", e.g. "GPT2LMHeadModel"
  // config.json for model m whose tensors are stored as torch_dtype ("float32", "bfloat16").
  std::function<std::string(const ModelConfig& m, const std::string& torch_dtype)> config_json;
  // Whether a file's tensors are this architecture's (what --init-from reads it as).
  std::function<bool(const TensorShapes& tensors)> recognizes;
  // The shape that the tensors of `file` and, when there is one, its config.json (parsed, read
  // from config_path) imply (n_head 0 when nothing says). Throws std::invalid_argument with a
  // one-line reason that names the file and the tensor or key.
  std::function<ModelConfig(const TensorShapes& tensors, const std::string& file,
                            const nlohmann::json* config, const std::string& config_path)>
      read_shape;
  // The names a checkpoint tensor may have in a Hugging Face file, the one export writes first.
  std::function<std::vector<std::string>(const std::string& name)> stored_names;
  // read_shape fills every ModelConfig field the architecture computes with (the run takes
  // them all from the file); otherwise only the shape (layers, widths, vocabulary, positions).
  bool config_complete = false;
};

// A tensor of an llm.c parameter file, in the file's order: `numel` elements; `transposed`: the
// file holds the (out, in) matrix of the checkpoint's (in, out) tensor.
struct LlmcTensor {
  std::string name;
  std::int64_t numel = 0;
  bool transposed = false;
  std::int64_t in = 0, out = 0;
};

// llm.c's parameter file (train_gpt2.py's write_model), for the architecture whose model it
// holds: the shape its header says, and the tensors back to back.
struct LlmcAdapter {
  // header: [magic, version, maxT, V, L, NH, C, Vp]; a shape the header cannot describe is a
  // std::invalid_argument naming the header field.
  std::function<ModelConfig(const std::int32_t* header)> shape;
  std::function<std::vector<LlmcTensor>(const ModelConfig& m, int padded_vocab)> tensors;
};

// A rule between model.* keys that only this architecture has, checked with the deck's other
// cross-key rules: "" or the complaint about `key` (which depends on `other`).
struct ArchCheck {
  std::string key, other;
  std::function<std::string(const ModelConfig& m)> check;
};

// The check a dense architecture carries: model.n_experts must stay 0 (family: "GPT", "Llama").
ArchCheck no_experts_check(const std::string& family);

struct Architecture {
  std::string name;    // model.arch
  std::string family;  // what the planner's report calls it, e.g. "GPT"

  // The units in forward order, cut as c.sublayer_units says. The tensors, their names and
  // shapes do not depend on the cut; only the grouping does.
  std::function<std::vector<UnitLayout>(const ModelConfig& m, const ModelChoices& c)> units;
  // Initialises one unit's full flat buffer (counter-based: model/counter_init.hpp).
  std::function<void(const ModelConfig& m, const UnitLayout& unit, float* full,
                     std::uint64_t seed)>
      init_unit;
  // The unit whose parameters the LM head reads: a unit's tensor when the head is tied, the
  // unit that holds the head when it is not.
  std::function<int(const ModelConfig& m, const ModelChoices& c)> head_unit;
  std::function<std::unique_ptr<Decoder>(const ModelConfig& m, const DecoderOptions& o,
                                         MemoryTracker& tracker)>
      build;
  // The attention kernel the model runs (model.attention resolved for this architecture).
  std::function<AttentionPath(const ModelConfig& m, const ModelChoices& c)> attention =
      [](const ModelConfig& m, const ModelChoices& c) {
        return resolve_attention(c.attention, m.block_size);
      };

  // What build allocates for activations (all persistent), in elements of the activation
  // dtype, for micro-batch B, under the run's choices c (checkpointing, the unit cut, the
  // experts' parallelism).
  std::function<std::int64_t(const ModelConfig& m, const ModelChoices& c, int B)>
      activation_elements;
  // Elements of each of the two bf16 casts Decoder::use_bf16_gemms allocates.
  std::function<std::int64_t(const ModelConfig& m, int B)> bf16_scratch_elements;
  // Parameters one token computes with (mixtures of experts: all but the idle experts); null:
  // all of them.
  std::function<std::int64_t(const ModelConfig& m)> active_params;
  // Model FLOPs per token of a training step (forward and backward, no recompute): MFU.
  std::function<double(const ModelConfig& m)> flops_per_token;
  // The two counts in words, for the planner's list of assumptions.
  std::string flops_formula, recompute_formula;

  HfAdapter hf;
  LlmcAdapter llmc;  // empty (no functions) where llm.c writes no such model
  std::vector<ArchCheck> checks;
  // Placement p of its tensors' TensorSpec::part; most models keep everything in one.
  std::vector<Placement> placements{{"dense", 1}};
  // The model keys beyond the shape (model/model_keys.hpp) this architecture computes with:
  // what `fsdp-ckpt info` prints and --init-from takes from a file.
  std::vector<std::string> keys;
};

// A value quoted from a file in a read_shape message, clipped to one short line (a hostile
// file may hold megabytes).
std::string quoted_line(const std::string& s);

// Convenience over the registry: model m's architecture, units and parameter count.
const Architecture& architecture_of(const ModelConfig& m);
// One phrase for logs and plans: "Llama 4 layers x 128 channels (4 heads, 2 key/value; MLP 344;
// untied head), vocab 256, context 64" (GPT-2: "GPT 4 layers x 128 channels (4 heads), ...").
std::string describe_model(const ModelConfig& m);
// The tensors of model m in units cut as c says (default: one unit per block, which is what a
// checkpoint or a parameter count needs: the tensors do not depend on the cut).
// With c.lora on, the base's tensors frozen and the adapters added (model/layers/lora_layout.hpp).
std::vector<UnitLayout> model_units(const ModelConfig& m, const ModelChoices& c = {});
// Unit `unit`'s initial values at its offsets in `full`: the architecture's init, and the
// adapters' (PEFT's) for a LoRA run's.
void init_model_unit(const ModelConfig& m, const UnitLayout& unit, float* full, std::uint64_t seed);
std::int64_t num_params(const ModelConfig& m);
std::int64_t num_active_params(const ModelConfig& m);
// "30,532,122,624 parameters (3,353,032,704 active)", or "124,475,904 parameters".
std::string params_phrase(const ModelConfig& m);

}  // namespace fsdp
