// SPDX-License-Identifier: MIT
// Reading weights from an llm.c parameter file (train_gpt2.py's write_model): a header of 256
// int32 [magic 20240326, version (3 fp32, 5 bf16), maxT, V, L, NH, C, Vp], then the tensors back
// to back in the order the architecture's LlmcAdapter lists them (GPT-2's: model/gpt2/).
#include <algorithm>
#include <map>
#include <vector>

#include "io/raw_file.hpp"
#include "model/architecture.hpp"
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
    // The architecture llm.c's files hold (model/architecture.hpp's LlmcAdapter) lays them out.
    const Architecture* arch = nullptr;
    for (const std::string& n : architecture_names())
      if (architecture(n).llmc.shape) arch = &architecture(n);
    if (!arch) throw WeightsError(path + ": no architecture reads llm.c files");
    try {
      shape_ = arch->llmc.shape(h);
    } catch (const std::invalid_argument& e) {
      throw WeightsError(path + ": header: " + e.what());
    }
    std::int64_t at = 0;
    for (const LlmcTensor& t : arch->llmc.tensors(shape_, h[7])) {
      place_[t.name] = {at, t.transposed, t.in, t.out};
      at += t.numel;
    }
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
          throw WeightsError(path_ + ": " + t.name + ": not in an llm.c " + shape_.arch + " file");
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
