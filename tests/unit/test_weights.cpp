// SPDX-License-Identifier: MIT
// The weight-file formats against hand-computed bytes, and the token choice of sampling against
// its definition (the end-to-end comparisons with numpy and a float64 GPT-2 are in
// tests/e2e/hf_weights.sh).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "core/bf16.hpp"
#include "io/safetensors.hpp"
#include "io/weight_source.hpp"
#include "io/weights_error.hpp"
#include "train/sample.hpp"

using namespace fsdp;
using namespace fsdp::weights;

namespace {

std::string temp_path(const std::string& name) { return "/tmp/fsdp_test_weights_" + name; }

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace

TEST_CASE("a written safetensors header reads back, aligned, with its offsets", "[weights]") {
  std::map<std::string, StoredTensor> t{{"a", {DType::F32, {2, 3}, 0, 0}},
                                        {"b", {DType::BF16, {5}, 0, 0}}};
  const std::string header = safetensors_header({"b", "a"}, t, {{"format", "pt"}});
  REQUIRE(header.size() % 8 == 0);
  const std::uint64_t start = header.size();
  CHECK(t["b"].begin == start);
  CHECK(t["b"].end == start + 10);
  CHECK(t["a"].begin == start + 10);
  CHECK(t["a"].end == start + 34);
  write_file(temp_path("h.safetensors"), header + std::string(34, '\0'));
  const SafetensorsHeader h = SafetensorsHeader::read(temp_path("h.safetensors"));
  CHECK(h.data_start == start);
  CHECK(h.metadata.at("format") == "pt");
  CHECK(h.tensors.at("a").shape == std::vector<std::int64_t>{2, 3});
  CHECK(h.tensors.at("a").begin == t["a"].begin);
  CHECK(h.tensors.at("b").dtype == DType::BF16);
  // One byte short: b's bytes no longer fit.
  write_file(temp_path("short.safetensors"), header + std::string(33, '\0'));
  CHECK_THROWS_AS(SafetensorsHeader::read(temp_path("short.safetensors")), WeightsError);
  std::remove(temp_path("h.safetensors").c_str());
  std::remove(temp_path("short.safetensors").c_str());
}

TEST_CASE("hostile safetensors headers are refused with one line naming the tensor", "[weights]") {
  auto refuse = [](const std::string& json, std::uint64_t data_bytes, const std::string& want) {
    std::string len(8, '\0');
    for (int i = 0; i < 8; ++i) len[std::size_t(i)] = char((json.size() >> (8 * i)) & 0xff);
    write_file(temp_path("bad"), len + json + std::string(data_bytes, '\0'));
    try {
      SafetensorsHeader::read(temp_path("bad"));
      FAIL("accepted " << json);
    } catch (const WeightsError& e) {
      const std::string what = e.what();
      CHECK(what.find('\n') == std::string::npos);
      CHECK_THAT(what, Catch::Contains(want));
    }
  };
  refuse(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4, "w: data_offsets [0, 8] lie outside");
  refuse(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, "w: data_offsets span 8 bytes");
  refuse(R"({"w":{"dtype":"I8","shape":[8],"data_offsets":[0,8]}})", 8, "w: dtype I8");
  refuse(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8, "w: shape holds");
  refuse(R"({"w":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,8]}})", 8,
         "w: shape is too large");
  refuse(R"({"w":{"dtype":"F32","shape":[2]}})", 8, "w: needs dtype, shape and data_offsets");
  refuse(R"([1,2])", 0, "header: not a JSON object");
  refuse(R"({"w":)", 0, "header: not valid JSON");
  refuse(R"({")" + std::string(200, 'x') + R"(":{"dtype":"F32","shape":[2]}})", 0, "xxx...");
  // Offsets must tile the data region, as Hugging Face's reader demands.
  refuse(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
         R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12,
         "b: data_offsets begin at 4, but the tensor before it ends at 8 (they overlap)");
  refuse(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
         R"("b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})", 20,
         "b: data_offsets begin at 12, but the tensors before it end at 8 (a gap no tensor covers)");
  refuse(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12, "a: data_offsets begin at 4");
  refuse(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 9,
         "the tensors cover 8 of the 9 data bytes");
  // A NUL or newline in a name is shown escaped, not cut or split.
  refuse(R"({"a\u0000\nb":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4,
         "a\\x00\\x0ab: data_offsets span 4 bytes");
  std::remove(temp_path("bad").c_str());
}

TEST_CASE("sampling's token choice", "[sample]") {
  const std::vector<float> z = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
  CHECK(pick_token(z, 0.0, 0, 0.3) == 1);  // greedy: the lowest id among the maxima
  CHECK(pick_token(z, 1.0, 1, 0.999) == 1);  // top-1 is greedy at any temperature
  // top-2 holds ids 1 and 3 with equal weight: u below 1/2 picks 1, above picks 3.
  CHECK(pick_token(z, 1.0, 2, 0.49) == 1);
  CHECK(pick_token(z, 1.0, 2, 0.51) == 3);
  // The whole vocabulary at T = 1: the cumulative softmax in the order largest first.
  double sum = 0;
  for (float v : z) sum += std::exp(double(v) - 2.0);
  const double p1 = 1 / sum, p3 = 1 / sum, p4 = std::exp(-1.0) / sum;
  CHECK(pick_token(z, 1.0, 0, p1 + p3 + 0.5 * p4) == 4);
  CHECK(pick_token(z, 1.0, 0, p1 + p3 + p4 + 1e-9) == 0);
}

TEST_CASE("byte tokens print as one escaped line", "[sample]") {
  CHECK(bytes_as_text({'a', '\n', 0x96, '\\'}, true) == "a\\n\\x96\\\\");
  CHECK(bytes_as_text({'a', '\n', 'b'}, false) == "a\nb");
}
