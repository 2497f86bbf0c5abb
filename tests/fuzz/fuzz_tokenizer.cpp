// SPDX-License-Identifier: MIT
// libFuzzer target for the tokenizer.json reader (fsdp-data, fsdp-sample --tokenizer): the input
// is a tokenizer.json, loaded from a scratch directory beside a fixed tokenizer_config.json,
// then, when accepted, used to encode and decode a short text. Only a DataError naming the file
// may leave it: no crash, no other exception, no allocation sized by an id (the vocabulary's
// ids are bounded by its entries) and no recursion past the nesting limit (data/nesting.hpp).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <typeinfo>

#include "data/data_error.hpp"
#include "data/tokenizer.hpp"

namespace {

const std::string& scratch() {
  static const std::string dir = [] {
    const std::string d =
        (std::filesystem::temp_directory_path() / ("fuzz_tokenizer." + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(d);
    std::ofstream(d + "/tokenizer_config.json") << "{}";
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string file = scratch() + "/tokenizer.json";
  {
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), std::streamsize(size));
    if (!f) std::abort();
  }
  try {
    const fsdp::Tokenizer t = fsdp::Tokenizer::load(scratch());
    const std::vector<std::int32_t> ids = t.encode("Hello, world! 12 é\n<|end|>", true);
    for (std::int32_t id : ids)
      if (id < 0 || std::size_t(id) >= t.vocab_size()) {
        std::fprintf(stderr, "fuzz_tokenizer: id %d outside the vocabulary of %zu\n", id, t.vocab_size());
        std::abort();
      }
    (void)t.decode(ids);
  } catch (const fsdp::DataError&) {
    // The expected way to refuse a file.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_tokenizer: %s escaped: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
  return 0;
}
