// SPDX-License-Identifier: MIT
// Reading GPT-2 weights from an llm.c parameter file (train_gpt2.py's write_model): a header of
// 256 int32 [magic 20240326, version (3 fp32, 5 bf16), maxT, V, L, NH, C, Vp], then the tensors
// back to back in llm.c's order, each stacked over the L layers:
//   wte (Vp, C)  wpe (maxT, C)  ln1w ln1b (L, C)  qkvw (L, 3C, C)  qkvb (L, 3C)
//   attprojw (L, C, C)  attprojb (L, C)  ln2w ln2b (L, C)  fcw (L, 4C, C)  fcb (L, 4C)
//   fcprojw (L, C, 4C)  fcprojb (L, C)  lnfw lnfb (C)
// The matrices are PyTorch Linear weights (out, in): the transpose of Hugging Face's Conv1D
// (in, out). wte's rows past V are padding and are not read.
#include <algorithm>
#include <map>
#include <vector>

#include "io/raw_file.hpp"
#include "io/weight_source.hpp"
#include "io/weights_error.hpp"
#include "io/weights_sources.hpp"

namespace fsdp::weights {
namespace {

constexpr std::uint64_t kHeaderBytes = 256 * 4;

// Where a Hugging Face tensor lies in the file: `base` in elements from the data start; when
// `transposed`, the file holds the (out, in) matrix of the HF (in, out) tensor.
struct Placement {
  std::int64_t base = 0;
  bool transposed = false;
  std::int64_t in = 0, out = 0;  // the HF tensor's rows and columns when transposed
};

class LlmcSource : public WeightSource {
 public:
  explicit LlmcSource(const std::string& path) : file_(path) {
    path_ = path;
    std::int32_t h[256] = {};
    if (file_.size() < kHeaderBytes)
      throw WeightsError(path + ": header: the file is shorter than llm.c's 1024-byte header");
    file_.read(0, kHeaderBytes, h, "header");
    if (h[0] != kLlmcParamsMagic)
      throw WeightsError(path + ": header: magic " + std::to_string(h[0]) +
                         " is not llm.c's parameter magic 20240326");
    if (h[1] != 3 && h[1] != 5)
      throw WeightsError(path + ": header: version " + std::to_string(h[1]) +
                         " (3 is fp32, 5 is bf16; no other is read)");
    bf16_ = h[1] == 5;
    const int maxT = h[2], V = h[3], L = h[4], NH = h[5], C = h[6], Vp = h[7];
    auto bad = [&](const char* what, long long v) {
      throw WeightsError(path + ": header: " + what + " " + std::to_string(v) + " is not valid");
    };
    if (maxT <= 0) bad("max_seq_len", maxT);
    if (V <= 0) bad("vocab_size", V);
    if (L <= 0 || L > 4096) bad("num_layers", L);
    if (C <= 0 || C > (1 << 16)) bad("channels", C);
    if (NH <= 0 || C % NH != 0) bad("num_heads", NH);
    if (Vp < V) bad("padded_vocab_size", Vp);
    shape_.arch = "gpt2";
    shape_.n_layer = L;
    shape_.n_head = NH;
    shape_.n_embd = C;
    shape_.vocab_size = V;
    shape_.n_positions = maxT;

    const std::int64_t c = C, l = L;
    std::int64_t at = 0;
    auto plain = [&](const std::string& name, std::int64_t numel) {
      place_[name] = {at, false, 0, 0};
      at += numel;
    };
    auto per_layer = [&](const std::string& suffix, std::int64_t numel, bool transposed,
                         std::int64_t in, std::int64_t out) {
      for (int k = 0; k < L; ++k)
        place_["h." + std::to_string(k) + "." + suffix] = {at + k * numel, transposed, in, out};
      at += l * numel;
    };
    plain("wte.weight", std::int64_t(Vp) * c);
    plain("wpe.weight", std::int64_t(maxT) * c);
    per_layer("ln_1.weight", c, false, 0, 0);
    per_layer("ln_1.bias", c, false, 0, 0);
    per_layer("attn.c_attn.weight", 3 * c * c, true, c, 3 * c);
    per_layer("attn.c_attn.bias", 3 * c, false, 0, 0);
    per_layer("attn.c_proj.weight", c * c, true, c, c);
    per_layer("attn.c_proj.bias", c, false, 0, 0);
    per_layer("ln_2.weight", c, false, 0, 0);
    per_layer("ln_2.bias", c, false, 0, 0);
    per_layer("mlp.c_fc.weight", 4 * c * c, true, c, 4 * c);
    per_layer("mlp.c_fc.bias", 4 * c, false, 0, 0);
    per_layer("mlp.c_proj.weight", 4 * c * c, true, 4 * c, c);
    per_layer("mlp.c_proj.bias", c, false, 0, 0);
    plain("ln_f.weight", c);
    plain("ln_f.bias", c);
    const std::uint64_t need = kHeaderBytes + std::uint64_t(at) * esize();
    if (file_.size() != need)
      throw WeightsError(path + ": " + std::to_string(file_.size()) + " bytes, but the header's " +
                         "shapes need " + std::to_string(need) +
                         (file_.size() < need ? " (truncated)" : " (trailing bytes)"));
  }

  void check(const std::vector<UnitLayout>& units) const override {
    for (const UnitLayout& u : units)
      for (const TensorSpec& t : u.tensors)
        if (!place_.count(t.name))
          throw WeightsError(path_ + ": " + t.name + ": not in an llm.c GPT-2 file");
  }

  void read(const TensorSpec& t, std::int64_t begin, std::int64_t end, float* out) const override {
    const Placement& p = place_.at(t.name);
    if (!p.transposed) {
      read_elems(p.base + begin, end - begin, out, t.name);
      return;
    }
    // HF element k = (i, o) with i = k / out is file element (o, i): the HF rows [i0, i1] are
    // the same columns of every file row, read as one short range per file row.
    const std::int64_t i0 = begin / p.out, i1 = (end - 1) / p.out, w = i1 - i0 + 1;
    std::vector<float> row(static_cast<std::size_t>(w));
    for (std::int64_t o = 0; o < p.out; ++o) {
      read_elems(p.base + o * p.in + i0, w, row.data(), t.name);
      for (std::int64_t i = i0; i <= i1; ++i) {
        const std::int64_t k = i * p.out + o;
        if (k >= begin && k < end) out[k - begin] = row[std::size_t(i - i0)];
      }
    }
  }

 private:
  std::uint64_t esize() const { return bf16_ ? 2 : 4; }
  void read_elems(std::int64_t at, std::int64_t n, float* out, const std::string& what) const {
    std::vector<char> raw(std::size_t(n) * esize());
    file_.read(kHeaderBytes + std::uint64_t(at) * esize(), raw.size(), raw.data(), what);
    widen_to_f32(raw.data(), bf16_, n, out);
  }

  RawFile file_;
  bool bf16_ = false;
  std::map<std::string, Placement> place_;
};

}  // namespace

std::unique_ptr<WeightSource> open_llmc(const std::string& path) {
  return std::make_unique<LlmcSource>(path);
}

}  // namespace fsdp::weights
