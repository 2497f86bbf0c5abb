// SPDX-License-Identifier: MIT
#include "model/gpt2/gpt2_layout.hpp"

#include <cmath>

#include "model/counter_init.hpp"
#include "model/decoder/skeleton_units.hpp"

namespace fsdp {
namespace {

// Weight decay for the 2-D weights; every 2-D weight but the position table (which the
// embedding reads together with wte) is a GEMM operand.
// The block's matrices are hidden ones, stored [in, out] as Hugging Face's Conv1D keeps them.
void add(UnitLayout& u, const std::string& name, std::vector<std::int64_t> shape) {
  const bool matrix = shape.size() == 2;
  const bool table = name == "wte.weight" || name == "wpe.weight";
  add_tensor(u, name, std::move(shape), matrix, matrix && name != "wpe.weight");
  u.tensors.back().hidden = u.tensors.back().in_major = matrix && !table;
}

}  // namespace

BlockSpec gpt2_block_spec(const ModelConfig& m) {
  BlockSpec s;
  s.tag = "gpt2";
  s.norm = NormKind::LayerNorm;
  s.positions = Positions::Learned;
  s.input_major = true;
  s.biases = true;
  s.mlp = MlpKind::Gelu;
  s.H = s.KV = m.n_head;
  s.D = m.n_embd / m.n_head;
  s.F = 4 * m.n_embd;
  s.attn_norm = "ln_1.weight";
  s.qkv = "attn.c_attn.weight";
  s.o = "attn.c_proj.weight";
  s.mlp_norm = "ln_2.weight";
  s.up = "mlp.c_fc.weight";
  s.down = "mlp.c_proj.weight";
  s.embedding = "wte.weight";
  s.positions_table = "wpe.weight";
  s.final_norm = "ln_f.weight";
  return s;
}

std::vector<UnitLayout> gpt2_units(const ModelConfig& m, const ModelChoices& c) {
  const std::int64_t C = m.n_embd, V = m.vocab_size, T = m.positions();
  UnitLayout emb, lnf;
  emb.name = "embedding";
  add(emb, "wte.weight", {V, C});
  add(emb, "wpe.weight", {T, C});
  lnf.name = "ln_f";
  add(lnf, "ln_f.weight", {C});
  add(lnf, "ln_f.bias", {C});
  return skeleton_units(
      m, c, std::move(emb), [](int l) { return "h." + std::to_string(l) + "."; }, "attn",
      [C](UnitLayout& a, const std::string& p) {
        add(a, p + "ln_1.weight", {C});
        add(a, p + "ln_1.bias", {C});
        add(a, p + "attn.c_attn.weight", {C, 3 * C});
        add(a, p + "attn.c_attn.bias", {3 * C});
        add(a, p + "attn.c_proj.weight", {C, C});
        add(a, p + "attn.c_proj.bias", {C});
      },
      [C](UnitLayout& b, const std::string& p) {
        add(b, p + "ln_2.weight", {C});
        add(b, p + "ln_2.bias", {C});
        add(b, p + "mlp.c_fc.weight", {C, 4 * C});
        add(b, p + "mlp.c_fc.bias", {4 * C});
        add(b, p + "mlp.c_proj.weight", {4 * C, C});
        add(b, p + "mlp.c_proj.bias", {C});
      },
      std::move(lnf));
}

void gpt2_init_unit(const UnitLayout& unit, float* full, std::uint64_t seed, int n_layer) {
  const float resid_std = 0.02f / std::sqrt(2.0f * n_layer);
  for (const auto& t : unit.tensors) {
    float* p = full + t.offset;
    if (ends_with(t.name, ".bias")) {
      for (std::int64_t i = 0; i < t.numel; ++i) p[i] = 0.f;
    } else if (ends_with(t.name, "ln_1.weight") || ends_with(t.name, "ln_2.weight") ||
               t.name == "ln_f.weight") {
      for (std::int64_t i = 0; i < t.numel; ++i) p[i] = 1.f;
    } else {
      const bool resid = ends_with(t.name, "attn.c_proj.weight") ||
                         ends_with(t.name, "mlp.c_proj.weight");
      const float std = resid ? resid_std : 0.02f;
      const std::uint64_t key = tensor_stream(seed, t.name);
      for (std::int64_t i = 0; i < t.numel; ++i) p[i] = std * normal_at(key, i);
    }
  }
}

}  // namespace fsdp
