// SPDX-License-Identifier: MIT
#include "io/checkpoint_format.hpp"

#include "model/layers/lora_layout.hpp"

#include "io/atomic_output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

#include "model/architecture.hpp"
#include "model/model_keys.hpp"
#include "model/registry.hpp"
#include <regex>

#include "core/input_file.hpp"
#include "io/checkpoint_dir.hpp"
#include "io/h5_io.hpp"

namespace fsdp::ckpt {
namespace fs = std::filesystem;

const char* group_path(Part p) {
  switch (p) {
    case Part::Params:
      return "/model";
    case Part::ExpAvg:
      return "/optim/exp_avg";
    case Part::ExpAvgSq:
      return "/optim/exp_avg_sq";
    case Part::Momentum:
      return "/optim/momentum";
  }
  return "?";
}

bool stores(Part p, const TensorSpec& t, OptimizerKind optimizer) {
  const bool muon = optimizer == OptimizerKind::Muon && muon_matrix(t);
  if (p != Part::Params && !t.trainable) return false;  // a frozen tensor has no optimizer state
  switch (p) {
    case Part::Params:
      return true;
    case Part::ExpAvg:
    case Part::ExpAvgSq:
      return !muon;
    case Part::Momentum:
      return muon;
  }
  return false;
}

void write_header(hid_t f, const Header& h) {
  using namespace h5;
  write_attr_str(f, "format", kFormatName);
  write_attr_i64(f, "format_version", kFormatVersion);
  write_attr_i64(f, "step", h.step);
  write_attr_i64(f, "tokens_seen", h.tokens_seen);
  write_attr_u64(f, "sampler_seed", h.sampler_seed);
  write_attr_i64(f, "optimizer_steps", h.optimizer_steps);
  write_attr_i64(f, "lr_schedule_step", h.lr_step);
  write_attr_f64(f, "lr", h.lr);
  // Only where it is not AdamW: AdamW's files stay what they always were, byte for byte.
  if (h.optimizer != OptimizerKind::AdamW) write_attr_str(f, "optimizer", to_string(h.optimizer));
  write_attr_str(f, "model_arch", h.model.arch);
  write_attr_i64(f, "model_n_layer", h.model.n_layer);
  write_attr_i64(f, "model_n_head", h.model.n_head);
  write_attr_i64(f, "model_n_embd", h.model.n_embd);
  write_attr_i64(f, "model_vocab_size", h.model.vocab_size);
  write_attr_i64(f, "model_block_size", h.model.block_size);
  write_attr_i64(f, "model_n_positions", h.model.positions());
  // The model keys beyond the shape (model/model_keys.hpp), written for every architecture: a
  // file says all that built its model, and the tools (export, sample) rebuild it from the
  // header alone. A key marked omit_default is left out at its default, as files before it were.
  for (const ModelKey& k : model_keys()) {
    if (k.omit_default && k.is_default(h.model)) continue;
    if (k.is_text()) {
      write_attr_str(f, k.attribute.c_str(), k.text(h.model));
      continue;
    }
    if (k.is_int() || k.is_bool()) write_attr_i64(f, k.attribute.c_str(), std::int64_t(k.number(h.model)));
    else write_attr_f64(f, k.attribute.c_str(), k.number(h.model));
  }
  write_attr_str(f, "run_config", h.run_config);
  if (h.lora.on()) {
    write_attr_i64(f, "lora_rank", h.lora.rank);
    write_attr_f64(f, "lora_alpha", h.lora.alpha);
    write_attr_i64(f, "lora_rslora", h.lora.rslora ? 1 : 0);
    std::string targets;
    for (const std::string& t : h.lora.targets) targets += (targets.empty() ? "" : " ") + t;
    write_attr_str(f, "lora_targets", targets);
  }
  write_attr_i64(f, "saved_ranks", h.saved_ranks);
  write_attr_str(f, "saved_strategy", h.strategy);
  write_attr_i64(f, "saved_shard_group_size", h.shard_group_size);
  write_attr_str(f, "checksum_algorithm", "XXH3_64bits");
  write_attr_i64(f, "checksum_block_elems", h.checksum_block_elems);
  if (!h.run_id.empty()) write_attr_str(f, "run_id", h.run_id);
  if (!h.router_bias.empty()) {
    std::vector<std::uint64_t> bits(h.router_bias.size());
    for (std::size_t i = 0; i < bits.size(); ++i) {
      std::uint32_t b = 0;
      std::memcpy(&b, &h.router_bias[i], 4);
      bits[i] = b;
    }
    write_attr_u64s(f, "moe_router_bias", bits);
  }
}

namespace {
// The model keys beyond the shape (model/model_keys.hpp); files written before a key existed
// hold models that did not use it, whose value is the default. Each is range-checked as the
// deck's key is: the file is untrusted.
void read_model_extras(hid_t f, ModelConfig& m) {
  using namespace h5;
  for (const ModelKey& k : model_keys()) {
    const char* a = k.attribute.c_str();
    if (!has_attr(f, a)) continue;
    if (k.is_text()) {
      const std::string v = read_attr_str(f, a);
      if (k.choices.empty() ? !k.valid(v).empty()
                            : std::find(k.choices.begin(), k.choices.end(), v) == k.choices.end())
        throw H5Error(k.attribute + " '" + v.substr(0, 32) + "' is not one of the model's choices");
      k.set_text(m, v);
      continue;
    }
    const double v = (k.is_int() || k.is_bool()) ? double(read_attr_i64(f, a)) : read_attr_f64(f, a);
    if (!(v >= k.lo && v <= k.hi))
      throw H5Error(k.attribute + " " + std::to_string(v) + " is not in [" +
                    std::to_string(k.lo) + ", " + std::to_string(k.hi) + "]");
    k.set_number(m, v);
  }
  if (m.kv_heads() < 1 || m.kv_heads() > m.n_head || m.n_head % m.kv_heads() != 0)
    throw H5Error("model_n_kv_head " + std::to_string(m.kv_heads()) + " does not divide model_n_head " +
                  std::to_string(m.n_head));
}
}  // namespace

Header read_header(hid_t f) {
  using namespace h5;
  if (!has_attr(f, "format") || read_attr_str(f, "format") != kFormatName)
    throw H5Error(std::string("not an fsdp checkpoint (no root attribute format = \"") +
                  kFormatName + "\")");
  const std::int64_t version = read_attr_i64(f, "format_version");
  if (version != kFormatVersion)
    throw H5Error("format_version " + std::to_string(version) + " is not one this program reads (" +
                  std::to_string(kFormatVersion) + ")");
  if (read_attr_str(f, "checksum_algorithm") != "XXH3_64bits")
    throw H5Error("checksum_algorithm is not XXH3_64bits");
  Header h;
  h.step = read_attr_i64(f, "step");
  h.tokens_seen = read_attr_i64(f, "tokens_seen");
  h.sampler_seed = read_attr_u64(f, "sampler_seed");
  h.optimizer_steps = read_attr_i64(f, "optimizer_steps");
  h.lr_step = read_attr_i64(f, "lr_schedule_step");
  h.lr = read_attr_f64(f, "lr");
  const std::string optimizer = has_attr(f, "optimizer") ? read_attr_str(f, "optimizer") : "adamw";
  if (has_attr(f, "moe_router_bias")) {
    const std::vector<std::uint64_t> bits = read_attr_u64s(f, "moe_router_bias");
    for (std::uint64_t b : bits) {
      if (b > 0xffffffffULL) throw H5Error("moe_router_bias holds a value that is not a float's bits");
      const std::uint32_t w = std::uint32_t(b);
      float v = 0.f;
      std::memcpy(&v, &w, 4);
      h.router_bias.push_back(v);
    }
  }
  if (!parse_optimizer(optimizer))
    throw H5Error("optimizer '" + optimizer + "' is not adamw or muon");
  h.optimizer = *parse_optimizer(optimizer);
  // The file is untrusted: every number must describe a model that can exist before anything
  // is sized from it (a lying n_layer would otherwise allocate without bound, a lying block
  // size overflow the checksum arithmetic).
  auto dim = [&](const char* key) {
    const std::int64_t v = read_attr_i64(f, key);
    if (v < 1 || v > std::numeric_limits<int>::max())
      throw H5Error(std::string(key) + " " + std::to_string(v) + " is not a positive 32-bit count");
    return int(v);
  };
  // Files written before model.arch existed are GPT-2's.
  h.model.arch = has_attr(f, "model_arch") ? read_attr_str(f, "model_arch") : kDefaultArch;
  if (!has_architecture(h.model.arch)) {
    throw H5Error("model_arch '" + h.model.arch.substr(0, 64) +
                  "' is not an architecture this program has (" + architecture_list() + ")");
  }
  h.model.n_layer = dim("model_n_layer");
  h.model.n_head = dim("model_n_head");
  h.model.n_embd = dim("model_n_embd");
  h.model.vocab_size = dim("model_vocab_size");
  h.model.block_size = dim("model_block_size");
  h.model.n_positions = dim("model_n_positions");
  read_model_extras(f, h.model);
  if (h.model.head_size == 0 && h.model.n_embd % h.model.n_head != 0)
    throw H5Error("model_n_embd " + std::to_string(h.model.n_embd) +
                  " is not a multiple of model_n_head " + std::to_string(h.model.n_head));
  H5G_info_t model_group{};
  if (H5Lexists(f, "model", H5P_DEFAULT) <= 0 ||
      H5Gget_info_by_name(f, "model", &model_group, H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);
    throw H5Error("no /model group");
  }
  if (hsize_t(h.model.n_layer) > model_group.nlinks)  // every layer has datasets of its own
    throw H5Error("model_n_layer " + std::to_string(h.model.n_layer) + ", but /model holds only " +
                  std::to_string(model_group.nlinks) + " datasets");
  // Within the deck's ranges (and n_layer bounded by the datasets the file holds), counting the
  // architecture's parameters is cheap and cannot overflow.
  if (h.model.n_layer > 10000 || h.model.n_embd > (1 << 20) || h.model.vocab_size > (1 << 20) ||
      h.model.n_head > (1 << 16) || h.model.n_positions > (1 << 24))
    throw H5Error("model_n_layer, n_embd, vocab_size, n_head or n_positions is beyond the deck's range");
  if (double(num_params(h.model)) > 0x1p50) throw H5Error("the stored model has more than 2^50 parameters");
  h.run_config = read_attr_str(f, "run_config");
  if (has_attr(f, "lora_rank")) {
    h.lora.rank = int(read_attr_i64(f, "lora_rank"));
    h.lora.alpha = read_attr_f64(f, "lora_alpha");
    h.lora.rslora = read_attr_i64(f, "lora_rslora") != 0;
    h.lora.targets = lora_targets(read_attr_str(f, "lora_targets"));
    if (h.lora.rank < 1 || h.lora.rank > (1 << 16) || !(h.lora.alpha > 0) || h.lora.targets.empty())
      throw H5Error("lora_rank, lora_alpha or lora_targets is out of range");
  }
  h.saved_ranks = read_attr_i64(f, "saved_ranks");
  h.strategy = read_attr_str(f, "saved_strategy");
  h.shard_group_size = read_attr_i64(f, "saved_shard_group_size");
  h.checksum_block_elems = read_attr_i64(f, "checksum_block_elems");
  if (has_attr(f, "run_id")) h.run_id = read_attr_str(f, "run_id");
  if (h.checksum_block_elems <= 0 || h.checksum_block_elems > (std::int64_t(1) << 40))
    throw H5Error("checksum_block_elems " + std::to_string(h.checksum_block_elems) +
                  " is not in [1, 2^40]");
  if (h.step < 0 || h.tokens_seen < 0 || h.optimizer_steps < 0 || h.lr_step < 0)
    throw H5Error("step, tokens_seen, optimizer_steps and lr_schedule_step must not be negative");
  return h;
}

std::string model_mismatch(const ModelConfig& saved, const ModelConfig& run) {
  // block_size alone may change (a longer context over the same position table); everything
  // that shapes a parameter, and the head count, may not.
  if (saved.arch != run.arch)
    return "arch " + saved.arch + " (this run: " + run.arch + ")";
  std::string out;
  auto cmp = [&](const char* key, long long a, long long b) {
    if (a == b) return;
    if (!out.empty()) out += ", ";
    out += std::string(key) + " " + std::to_string(a) + " (this run: " + std::to_string(b) + ")";
  };
  cmp("n_layer", saved.n_layer, run.n_layer);
  cmp("n_head", saved.n_head, run.n_head);
  cmp("n_embd", saved.n_embd, run.n_embd);
  cmp("vocab_size", saved.vocab_size, run.vocab_size);
  cmp("n_positions", saved.positions(), run.positions());
  for (const ModelKey& k : model_keys()) {
    if (!k.shapes_params) continue;
    if (!k.is_text()) {
      cmp(k.key.c_str(), std::llround(k.number(saved)), std::llround(k.number(run)));
    } else if (k.text(saved) != k.text(run)) {
      out += (out.empty() ? "" : ", ") + k.key + " \"" + k.text(saved) + "\" (this run: \"" + k.text(run) + "\")";
    }
  }
  return out;
}

std::string not_hdf5(const std::string& path) {
  // Opened as an input: a FIFO or a device is named by its kind and never waited on (HDF5's
  // own open would block on a FIFO).
  std::optional<InputFile> in;
  try {
    in.emplace(path, "");
  } catch (const InputError& e) {
    return std::string(e.what()).substr(path.size() + 2);  // "<path>: <why>"
  }
  // The signature sits at 0 or, after a user block, at 512, 1024, 2048, ...
  static const char sig[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  const std::uint64_t size = in->size();
  for (std::uint64_t at = 0; at + 8 <= size; at = at == 0 ? 512 : 2 * at) {
    char buf[8] = {};
    try {
      in->read_at(at, 8, buf, "signature");
    } catch (const InputError& e) {
      return std::string(e.what()).substr(path.size() + 2);
    }
    if (std::equal(buf, buf + 8, sig)) return {};
  }
  return "not an HDF5 file (no HDF5 signature)";
}

h5::Plist file_access(MPI_Comm comm) {
  h5::Plist p{FSDP_H5_ID(H5Pcreate(H5P_FILE_ACCESS))};
  FSDP_H5_CHECK(H5Pset_fapl_mpio(p.get(), comm, MPI_INFO_NULL));
  FSDP_H5_CHECK(H5Pset_all_coll_metadata_ops(p.get(), true));
  FSDP_H5_CHECK(H5Pset_coll_metadata_write(p.get(), true));
  FSDP_H5_CHECK(H5Pset_libver_bounds(p.get(), H5F_LIBVER_V18, H5F_LIBVER_V18));
  return p;
}

h5::Plist file_creation() {
  h5::Plist p{FSDP_H5_ID(H5Pcreate(H5P_FILE_CREATE))};
  FSDP_H5_CHECK(H5Pset_obj_track_times(p.get(), false));  // the root group's, as the datasets'
  return p;
}

h5::Plist group_creation() {
  h5::Plist p{FSDP_H5_ID(H5Pcreate(H5P_GROUP_CREATE))};
  FSDP_H5_CHECK(H5Pset_obj_track_times(p.get(), false));
  return p;
}

h5::Plist dataset_creation() {
  h5::Plist p{FSDP_H5_ID(H5Pcreate(H5P_DATASET_CREATE))};
  FSDP_H5_CHECK(H5Pset_layout(p.get(), H5D_CONTIGUOUS));
  FSDP_H5_CHECK(H5Pset_alloc_time(p.get(), H5D_ALLOC_TIME_EARLY));
  FSDP_H5_CHECK(H5Pset_fill_time(p.get(), H5D_FILL_TIME_NEVER));  // every element is written
  FSDP_H5_CHECK(H5Pset_obj_track_times(p.get(), false));          // same state, same bytes
  return p;
}

std::string file_name(std::int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%06lld.h5", static_cast<long long>(step));
  return buf;
}

std::vector<Entry> list_complete(const std::string& dir) {
  std::vector<Entry> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    DirFile f;
    if (e.is_regular_file(ec) && parse_name(e.path().filename().string(), f) &&
        f.kind == DirFile::Complete)
      out.push_back({f.step, e.path().string()});
  }
  const std::string latest = read_latest(dir);
  auto rank = [&](const Entry& e) { return fs::path(e.path).filename() == latest ? 1 : 0; };
  std::sort(out.begin(), out.end(), [&](const Entry& a, const Entry& b) {
    return rank(a) != rank(b) ? rank(a) > rank(b) : a.step > b.step;
  });
  return out;
}

void sync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error(path + ": " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL)  // EINVAL: the file system cannot sync directories; nothing to do
    throw std::runtime_error(path + ": fsync: " + std::strerror(err));
}

void write_latest(const std::string& dir, const std::string& name) {
  io::write_file_atomically(dir + "/latest", name + "\n");  // never through a planted link
}

}  // namespace fsdp::ckpt
