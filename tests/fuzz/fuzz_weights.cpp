// SPDX-License-Identifier: MIT
// libFuzzer target for the weight-file readers behind fsdp-train --init-from and fsdp-sample:
// arbitrary bytes as a safetensors or llm.c file; or, when the input starts with 'C' or 'X',
// the rest as the config.json or the model.safetensors.index.json of a Hugging Face directory
// whose safetensors files hold a valid one-layer Llama (the JSON readers of the Llama form).
// Only WeightsError may leave the readers; a file they accept must be fully readable for the
// model its header describes.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "io/safetensors.hpp"
#include "io/weight_source.hpp"
#include "io/weights_error.hpp"
#include "model/architecture.hpp"

namespace {

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "fuzz_weights: %s\n", what.c_str());
  std::abort();
}

void write(const std::string& path, const void* data, std::size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), std::streamsize(size));
  if (!f) bug("cannot write " + path);
}

// A one-layer Llama (V 8, C 4, two heads sharing one key/value head, F 6, untied) split over two
// safetensors files, a.safetensors and b.safetensors, in `dir`. Returns the directory.
std::string llama_dir() {
  namespace fs = std::filesystem;
  const std::string dir = "/tmp/fuzz_weights_llama." + std::to_string(::getpid());
  fs::create_directories(dir);
  using fsdp::weights::StoredTensor;
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>> a = {
      {"model.embed_tokens.weight", {8, 4}},
      {"model.layers.0.input_layernorm.weight", {4}},
      {"model.layers.0.self_attn.q_proj.weight", {4, 4}},
      {"model.layers.0.self_attn.k_proj.weight", {2, 4}},
      {"model.layers.0.self_attn.v_proj.weight", {2, 4}},
      {"model.layers.0.self_attn.o_proj.weight", {4, 4}}};
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>> b = {
      {"model.layers.0.post_attention_layernorm.weight", {4}},
      {"model.layers.0.mlp.gate_proj.weight", {6, 4}},
      {"model.layers.0.mlp.up_proj.weight", {6, 4}},
      {"model.layers.0.mlp.down_proj.weight", {4, 6}},
      {"model.norm.weight", {4}},
      {"lm_head.weight", {8, 4}}};
  for (const auto& [file, list] : {std::pair{std::string("a"), a}, std::pair{std::string("b"), b}}) {
    std::map<std::string, StoredTensor> tensors;
    std::vector<std::string> order;
    std::size_t bytes = 0;
    for (const auto& [name, shape] : list) {
      StoredTensor t;
      t.shape = shape;
      tensors[name] = t;
      order.push_back(name);
      bytes += std::size_t(t.numel()) * 4;
    }
    std::string out = fsdp::weights::safetensors_header(order, tensors, {});
    out.append(bytes, '\0');
    write(dir + "/" + file + ".safetensors", out.data(), out.size());
  }
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string file = "/tmp/fuzz_weights." + std::to_string(::getpid());
  static const std::string dir = llama_dir();
  std::string path = file;
  if (size > 0 && (data[0] == 'C' || data[0] == 'X')) {
    // Both JSON files at once: the fuzzed one and a fixed valid other.
    static const std::string config =
        R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4, "intermediate_size": 6,
            "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
            "vocab_size": 8, "max_position_embeddings": 16, "tie_word_embeddings": false})";
    std::string index = R"({"weight_map": {)";
    for (const char* t : {"model.embed_tokens.weight", "model.layers.0.input_layernorm.weight",
                          "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
                          "model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.o_proj.weight"})
      index += std::string("\"") + t + "\": \"a.safetensors\", ";
    for (const char* t : {"model.layers.0.post_attention_layernorm.weight", "model.layers.0.mlp.gate_proj.weight",
                          "model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.down_proj.weight",
                          "model.norm.weight"})
      index += std::string("\"") + t + "\": \"b.safetensors\", ";
    index += R"("lm_head.weight": "b.safetensors"}})";
    const bool is_config = data[0] == 'C';
    write(dir + "/config.json", is_config ? data + 1 : static_cast<const void*>(config.data()),
          is_config ? size - 1 : config.size());
    write(dir + "/model.safetensors.index.json", is_config ? static_cast<const void*>(index.data()) : data + 1,
          is_config ? index.size() : size - 1);
    path = dir;
  } else {
    write(file, data, size);
  }
  try {
    const auto src = fsdp::weights::open_weights(path);
    const fsdp::ModelConfig& s = src->shape();
    if (s.n_layer <= 0 || s.n_embd <= 0 || s.vocab_size <= 0 || s.n_positions <= 0) return 0;
    fsdp::ModelConfig m = s;
    if (m.n_head <= 0) m.n_head = 1;  // a file without a head count (GPT-2 without config.json)
    m.block_size = s.n_positions;
    const std::vector<fsdp::UnitLayout> units = fsdp::model_units(m);
    src->check(units);  // from here on every tensor's bytes are inside the file
    std::vector<float> buf;
    for (const fsdp::UnitLayout& u : units)
      for (const fsdp::TensorSpec& t : u.tensors) {
        buf.resize(std::size_t(t.numel));
        src->read(t, 0, t.numel, buf.data());
        if (t.numel > 2) src->read(t, 1, t.numel - 1, buf.data());  // a range cutting rows
      }
  } catch (const fsdp::weights::WeightsError&) {
    return 0;  // the one clean rejection
  } catch (const std::exception& e) {
    bug(std::string("escaped exception (not WeightsError): ") + e.what());
  }
  return 0;
}
