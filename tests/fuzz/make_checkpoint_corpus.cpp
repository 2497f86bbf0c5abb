// SPDX-License-Identifier: MIT
// Writes the checkpoint seed corpus from one real (tiny) checkpoint: truncations, garbage, and
// copies whose root attributes or checksum tables lie (a model too large to exist, zero heads,
// a checksum block of 2^63-1 elements, ...). Random mutations rarely get past HDF5's own
// metadata checksums, so these hand-made lies are what reach the reader's own checks.
//   make_checkpoint_corpus REAL.h5 OUT_DIR
#include <hdf5.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_all(const fs::path& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error(path.string() + ": cannot write");
}

void check(herr_t rc, const char* what) {
  if (rc < 0) throw std::runtime_error(std::string("HDF5: ") + what);
}

// A copy of `real` at out/name with `edit` applied to the open file (read-write, default driver).
void edited(const std::string& real, const fs::path& out, const std::string& name,
            const std::function<void(hid_t)>& edit) {
  const fs::path path = out / name;
  fs::copy_file(real, path, fs::copy_options::overwrite_existing);
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) throw std::runtime_error(path.string() + ": cannot open");
  edit(f);
  check(H5Fclose(f), "close");
}

void set_i64(hid_t obj, const char* name, std::int64_t v) {
  const hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  if (a < 0) throw std::runtime_error(std::string("no attribute ") + name);
  check(H5Awrite(a, H5T_NATIVE_INT64, &v), name);
  check(H5Aclose(a), name);
}

void set_u64s(hid_t obj, const char* name, const std::vector<std::uint64_t>& v) {
  if (H5Aexists(obj, name) > 0) check(H5Adelete(obj, name), name);
  const hsize_t n = v.size();
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  const hid_t a = H5Acreate2(obj, name, H5T_NATIVE_UINT64, space, H5P_DEFAULT, H5P_DEFAULT);
  const std::uint64_t none = 0;  // HDF5 wants a buffer even for no elements
  check(H5Awrite(a, H5T_NATIVE_UINT64, v.empty() ? &none : v.data()), name);
  check(H5Aclose(a), name);
  check(H5Sclose(space), name);
}

void on_dataset(hid_t f, const char* path, const std::function<void(hid_t)>& fn) {
  const hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
  if (d < 0) throw std::runtime_error(std::string("no dataset ") + path);
  fn(d);
  check(H5Dclose(d), path);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_checkpoint_corpus REAL.h5 OUT_DIR\n");
    return 2;
  }
  const std::string real = argv[1];
  const fs::path out = argv[2];
  try {
    fs::create_directories(out);
    const std::vector<char> bytes = read_all(real);
    if (bytes.size() < 64) throw std::runtime_error(real + ": too small to be a checkpoint");

    // Truncations: inside the superblock, inside the metadata, one byte short.
    for (std::size_t keep : {std::size_t(48), bytes.size() / 8, bytes.size() / 2, bytes.size() - 1})
      write_all(out / ("truncated_" + std::to_string(keep)),
                std::vector<char>(bytes.begin(), bytes.begin() + std::ptrdiff_t(keep)));
    // Garbage, with and without an HDF5 signature in front.
    std::mt19937 rng(12345);
    std::vector<char> junk(2048);
    for (char& c : junk) c = char(rng());
    write_all(out / "garbage", junk);
    const char sig[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
    std::copy(sig, sig + 8, junk.begin());
    write_all(out / "signature_then_garbage", junk);
    write_all(out / "empty", {});
    // The real file with its superblock and its last metadata bytes zeroed.
    std::vector<char> holed = bytes;
    std::fill(holed.begin() + 8, holed.begin() + 40, '\0');
    write_all(out / "superblock_zeroed", holed);

    // Root attributes that lie.
    const std::int64_t big = std::numeric_limits<std::int64_t>::max();
    struct Lie {
      const char* file;
      const char* attr;
      std::int64_t value;
    };
    for (const Lie& l : {Lie{"model_huge_n_layer", "model_n_layer", 1 << 30},
                         Lie{"model_n_layer_overflows_int", "model_n_layer", big},
                         Lie{"model_zero_heads", "model_n_head", 0},
                         Lie{"model_negative_n_embd", "model_n_embd", -4},
                         Lie{"model_huge_vocab", "model_vocab_size", 1LL << 40},
                         Lie{"model_zero_positions", "model_n_positions", 0},
                         Lie{"checksum_block_huge", "checksum_block_elems", big},
                         Lie{"checksum_block_one", "checksum_block_elems", 1},
                         Lie{"format_version_2", "format_version", 2},
                         Lie{"step_negative", "step", -1}})
      edited(real, out, l.file, [&](hid_t f) { set_i64(f, l.attr, l.value); });
    edited(real, out, "no_step_attribute", [](hid_t f) { check(H5Adelete(f, "step"), "step"); });
    edited(real, out, "no_format_attribute",
           [](hid_t f) { check(H5Adelete(f, "format"), "format"); });
    // Checksum tables that lie, and a dataset gone.
    edited(real, out, "xxh3_blocks_empty", [](hid_t f) {
      on_dataset(f, "/model/wte.weight", [](hid_t d) { set_u64s(d, "xxh3_blocks", {}); });
    });
    edited(real, out, "xxh3_blocks_long", [](hid_t f) {
      on_dataset(f, "/model/wte.weight",
                 [](hid_t d) { set_u64s(d, "xxh3_blocks", std::vector<std::uint64_t>(9, 7)); });
    });
    edited(real, out, "dataset_missing", [](hid_t f) {
      check(H5Ldelete(f, "/optim/exp_avg/wpe.weight", H5P_DEFAULT), "delete");
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_checkpoint_corpus: %s\n", e.what());
    return 1;
  }
  return 0;
}
