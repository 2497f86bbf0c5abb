// SPDX-License-Identifier: MIT
#include "io/checkpoint_tools.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <vector>

#include "core/check.hpp"
#include "model/model_keys.hpp"
#include "core/memory.hpp"
#include "comm/agree.hpp"
#include "io/block_hash.hpp"
#include "io/checkpoint_format.hpp"
#include "io/checkpoint_scan.hpp"
#include "io/h5_io.hpp"
#include "model/architecture.hpp"

namespace fsdp::ckpt {
namespace {

using h5::FlatRange;

// The run's choices that decide which tensors a checkpoint of header h holds: its adapters.
ModelChoices lora_choices(const Header& h) {
  ModelChoices c;
  c.lora = h.lora;
  return c;
}

// Verifies one dataset; "" when good.
std::string verify_dataset(const Comm& c, hid_t file, const Expected& e, std::int64_t B) {
  std::string bad = check_shape(file, e);
  if (!bad.empty()) return bad;
  h5::Dataset d{FSDP_H5_ID(H5Dopen2(file, e.path.c_str(), H5P_DEFAULT))};
  const std::int64_t n = h5::numel(e.dims);
  std::vector<std::uint64_t> stored;
  try {
    stored = stored_checksums(d.get(), n, B);
  } catch (const h5::H5Error& ex) {
    return ex.what();
  }
  std::vector<std::uint64_t> table(stored.size(), 0);
  std::vector<float> buf;
  std::string read_error;
  for_my_pieces(c, n, B, [&](FlatRange r) {
    buf.resize(std::size_t(r.size()));
    try {
      h5::read_flat(d.get(), r, buf.data(), H5P_DEFAULT);  // independent: ranks read unevenly
      hash_whole_blocks(buf.data(), r, n, B, table);
    } catch (const std::exception& ex) {
      if (read_error.empty()) read_error = ex.what();
    }
  });
  read_error = agree_on_error(c.comm, read_error);
  if (!read_error.empty()) return read_error;
  if (!table.empty())
    FSDP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, table.data(), int(table.size()), MPI_UINT64_T,
                                 MPI_BOR, c.comm));
  for (std::size_t k = 0; k < table.size(); ++k)
    if (table[k] != stored[k])
      return "checksum mismatch in block " + std::to_string(k) + " of " +
             std::to_string(table.size()) + " (elements " + std::to_string(std::int64_t(k) * B) +
             ".." + std::to_string(std::min(std::int64_t(k + 1) * B, n) - 1) + ")";
  return {};
}

}  // namespace

int info(MPI_Comm comm, const std::string& path, bool datasets, bool deck) {
  const Comm c(comm);
  Opened o = open_checkpoint(c, path);
  if (!o.error.empty()) {
    if (c.rank == 0) std::fprintf(stderr, "fsdp-ckpt: %s\n", o.error.c_str());
    return 2;
  }
  if (c.rank != 0) return 0;
  const Header& h = o.header;
  const ModelConfig& m = h.model;
  std::error_code ec;
  const auto file_bytes = std::filesystem::file_size(path, ec);
  std::printf("file               %s (%s)\n", path.c_str(),
              format_bytes(std::int64_t(file_bytes)).c_str());
  std::printf("format             %s v%lld, XXH3-64 per %lld-element block\n", kFormatName,
              (long long)kFormatVersion, (long long)h.checksum_block_elems);
  std::printf("step               %lld (tokens seen %lld, optimizer steps %lld)\n",
              (long long)h.step, (long long)h.tokens_seen, (long long)h.optimizer_steps);
  std::printf("lr schedule        step %lld, lr %.6g\n", (long long)h.lr_step, h.lr);
  std::printf("sampler            seed %llu (counter-based: continues at step %lld)\n",
              (unsigned long long)h.sampler_seed, (long long)h.step);
  std::printf(
      "model              %s, n_layer %d, n_head %d, n_embd %d, vocab_size %d, block_size %d, "
      "n_positions %d (%lld parameters)\n",
      m.arch.c_str(), m.n_layer, m.n_head, m.n_embd, m.vocab_size, m.block_size, m.positions(),
      (long long)num_params(m));
  std::string keys;  // the model keys this architecture computes with (model/model_keys.hpp)
  for (const std::string& key : architecture(m.arch).keys) {
    const ModelKey& k = model_key(key);
    if (k.applies(m)) keys += (keys.empty() ? "" : ", ") + key + " " + k.show(m);
  }
  if (!keys.empty()) std::printf("                   %s\n", keys.c_str());
  std::printf("saved by           %lld ranks, strategy %s, shard group %lld\n",
              (long long)h.saved_ranks, h.strategy.c_str(), (long long)h.shard_group_size);
  const std::vector<Expected> all = expected_datasets(m, h.optimizer, h.lora);
  std::printf("optimizer          %s\n", to_string(h.optimizer));
  if (h.lora.on()) {
    std::string targets;
    for (const std::string& t : h.lora.targets) targets += " " + t;
    std::printf("adapters           lora rank %d, alpha %g%s, on%s; the base frozen (no optimizer "
                "state): fsdp-ckpt export --peft DIR\n",
                h.lora.rank, h.lora.alpha, h.lora.rslora ? " (rslora)" : "", targets.c_str());
  }
  for (Part p : kParts) {
    std::size_t n = 0;
    std::int64_t elems = 0;
    for (const UnitLayout& u : model_units(m, lora_choices(h)))
      for (const TensorSpec& t : u.tensors)
        if (stores(p, t, h.optimizer)) {
          ++n;
          elems += t.numel;
        }
    if (n > 0)
      std::printf("%-18s %zu datasets, %s\n", group_path(p), n, format_bytes(4 * elems).c_str());
  }
  if (datasets)
    for (const Expected& e : all)
      std::printf("  %-44s %s\n", e.path.c_str(), h5::shape_text(e.dims).c_str());
  if (deck) std::printf("run deck:\n%s\n", h.run_config.c_str());
  return 0;
}

int verify(MPI_Comm comm, const std::string& path) {
  const Comm c(comm);
  Opened o = open_checkpoint(c, path);
  if (!o.error.empty()) {
    if (c.rank == 0) std::fprintf(stderr, "fsdp-ckpt verify: %s\n", o.error.c_str());
    return 2;
  }
  int bad = 0;
  std::int64_t elems = 0;
  const std::vector<Expected> all = expected_datasets(o.header.model, o.header.optimizer, o.header.lora);
  for (const Expected& e : all) {
    std::string why;
    try {
      why = verify_dataset(c, o.file.get(), e, o.header.checksum_block_elems);
    } catch (const std::exception& ex) {  // metadata reads are collective: every rank is here
      why = ex.what();
    }
    why = agree_on_error(comm, why);
    if (!why.empty()) {
      ++bad;
      if (c.rank == 0)
        std::fprintf(stderr, "fsdp-ckpt verify: %s: %s: %s\n", path.c_str(), e.path.c_str(),
                     why.c_str());
    }
    elems += h5::numel(e.dims);
  }
  if (c.rank == 0) {
    if (bad)
      std::fprintf(stderr, "fsdp-ckpt verify: %s: BAD, %d of %zu datasets fail\n", path.c_str(),
                   bad, all.size());
    else
      std::printf("verify %s: ok, %zu datasets, %s, every checksum matches\n", path.c_str(),
                  all.size(), format_bytes(4 * elems).c_str());
  }
  return bad ? 1 : 0;
}

int diff(MPI_Comm comm, const std::string& pa, const std::string& pb) {
  const Comm c(comm);
  Opened a = open_checkpoint(c, pa), b = open_checkpoint(c, pb);
  for (const Opened* o : {&a, &b})
    if (!o->error.empty()) {
      if (c.rank == 0) std::fprintf(stderr, "fsdp-ckpt diff: %s\n", o->error.c_str());
      return 2;
    }
  if (c.rank == 0)
    std::printf("diff %s (step %lld) %s (step %lld)\n", pa.c_str(), (long long)a.header.step,
                pb.c_str(), (long long)b.header.step);
  const std::int64_t B = kChecksumBlockElems;
  double worst_abs = 0.0, worst_rel = 0.0;
  int differing = 0;
  if (a.header.optimizer != b.header.optimizer) {
    if (c.rank == 0)
      std::printf("%s holds %s state, %s holds %s state: compared by their parameters and the "
                  "state both hold\n", pa.c_str(), to_string(a.header.optimizer), pb.c_str(),
                  to_string(b.header.optimizer));
  }
  std::vector<Expected> all;
  for (const Expected& e : expected_datasets(a.header.model, a.header.optimizer, a.header.lora))
    for (const Expected& f : expected_datasets(a.header.model, b.header.optimizer, b.header.lora))
      if (e.path == f.path) all.push_back(e);
  for (const Expected& e : all) {
    std::string why;
    double m[2] = {0.0, 0.0};  // max abs, max rel
    try {
      why = check_shape(a.file.get(), e);
      if (why.empty()) {
        why = check_shape(b.file.get(), e);
        if (!why.empty()) why = pb + ": " + why;
      } else {
        why = pa + ": " + why;
      }
      if (why.empty()) {
        h5::Dataset da{FSDP_H5_ID(H5Dopen2(a.file.get(), e.path.c_str(), H5P_DEFAULT))};
        h5::Dataset db{FSDP_H5_ID(H5Dopen2(b.file.get(), e.path.c_str(), H5P_DEFAULT))};
        std::vector<float> x, y;
        std::string read_error;
        for_my_pieces(c, h5::numel(e.dims), B, [&](FlatRange r) {
          x.resize(std::size_t(r.size()));
          y.resize(x.size());
          try {
            h5::read_flat(da.get(), r, x.data(), H5P_DEFAULT);
            h5::read_flat(db.get(), r, y.data(), H5P_DEFAULT);
          } catch (const std::exception& ex) {
            if (read_error.empty()) read_error = ex.what();
            return;
          }
          for (std::size_t i = 0; i < x.size(); ++i) {
            const double p = x[i], q = y[i];
            if (p == q || (std::isnan(p) && std::isnan(q))) continue;
            const double d = std::isfinite(p - q) ? std::abs(p - q) : HUGE_VAL;
            m[0] = std::max(m[0], d);
            m[1] = std::max(m[1], d / std::max(std::abs(p), std::abs(q)));
          }
        });
        why = agree_on_error(comm, read_error);
      }
    } catch (const std::exception& ex) {
      why = ex.what();
    }
    why = agree_on_error(comm, why);
    FSDP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, m, 2, MPI_DOUBLE, MPI_MAX, comm));
    if (!why.empty() || m[0] > 0) ++differing;
    worst_abs = std::max(worst_abs, m[0]);
    worst_rel = std::max(worst_rel, m[1]);
    if (c.rank == 0) {
      if (!why.empty())
        std::printf("  %-44s %s\n", e.path.c_str(), why.c_str());
      else
        std::printf("  %-44s max abs %-10.4g max rel %.4g\n", e.path.c_str(), m[0], m[1]);
    }
  }
  if (c.rank == 0)
    std::printf("max abs diff %.6g, max rel diff %.6g: %s (%d of %zu tensors differ)\n", worst_abs,
                worst_rel, differing ? "different" : "identical", differing, all.size());
  return differing ? 1 : 0;
}

}  // namespace fsdp::ckpt
