// SPDX-License-Identifier: MIT
// Reading a checkpoint back: every rank its own slices at whatever rank count wrote it, each
// block's hash checked against the file's table, and the newest complete file of a directory.
#include <cstdio>
#include <filesystem>
#include <optional>

#include "comm/agree.hpp"
#include "comm/safety.hpp"
#include "core/check.hpp"
#include "core/exit_codes.hpp"
#include "core/faults.hpp"
#include "io/block_hash.hpp"
#include "io/checkpoint.hpp"
#include "io/checkpoint_dir.hpp"
#include "io/checkpoint_slices.hpp"
#include "io/h5_io.hpp"

namespace fsdp {
namespace fs = std::filesystem;
using ckpt::Part;
using h5::FlatRange;
using namespace ckpt_slices;

ckpt::Header Checkpointer::load(const std::string& path, CheckpointedState& state) {
  return read(path, state, {Part::Params, Part::ExpAvg, Part::ExpAvgSq, Part::Momentum});
}

ckpt::Header Checkpointer::load_params(const std::string& path, CheckpointedState& state) {
  return read(path, state, {Part::Params});
}

ckpt::Header Checkpointer::read(const std::string& path, CheckpointedState& state,
                                const std::vector<Part>& parts) {
  MPI_Comm comm = comm_.get();
  auto fail_together = [&](const std::string& mine) {
    const std::string err = agree_on_error(comm, mine);
    if (!err.empty()) throw CheckpointError(path + ": " + err);
  };
  const std::vector<UnitShard> shards = state.unit_shards();
  const ShardMap map = shard_map(comm, shards);

  // Phase 1: every header, shape and checksum table. Metadata reads are collective (rank 0
  // reads, all receive), so every rank meets the same problem at the same place.
  struct Stored {
    h5::Dataset d;
    std::vector<std::uint64_t> blocks;
  };
  h5::File file;
  std::vector<Stored> stored;  // declared after file: closed before it
  ckpt::Header h;
  std::string where, err;
  std::optional<comm::Watch> watch;
  watch.emplace("reading checkpoint " + path + ": its headers, shapes and checksum tables",
                board_.get());
  try {
    if (const std::string why = ckpt::not_hdf5(path); !why.empty()) throw h5::H5Error(why);
    const h5::Plist fapl = ckpt::file_access(comm);
    file = h5::File{FSDP_H5_ID(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()))};
    where = "root attributes";
    h = ckpt::read_header(file.get());
    const std::string mismatch = ckpt::model_mismatch(h.model, run_.model);
    if (!mismatch.empty()) throw h5::H5Error("written for a different model: " + mismatch);
    // The adapters are tensors of their own: a file holds them (and their state) or not.
    const auto adapters = [](const LoraChoices& l) {
      if (!l.on()) return std::string("no adapters");
      std::string s = "lora.rank " + std::to_string(l.rank) + " on";
      for (const std::string& t : l.targets) s += " " + t;
      return s;
    };
    if (adapters(h.lora) != adapters(run_.lora))
      throw h5::H5Error("written with " + adapters(h.lora) + ", but this run has " + adapters(run_.lora) +
                        (run_.lora.on() && !h.lora.on()
                             ? " (to fine-tune these weights, export them with fsdp-ckpt export --hf "
                               "and start from the directory with --init-from)"
                             : ""));
    // The other optimizer's state cannot continue this run's: refused, not skipped for an older
    // file (fsdp-train exits 5); --init-from reads the weights alone.
    if (parts.size() > 1 && h.optimizer != run_.optimizer)
      throw ckpt::OptimizerMismatch(
          path + ": holds train.optimizer = " + to_string(h.optimizer) +
          " state, but this run's is " + to_string(run_.optimizer) +
          "; resume with train.optimizer = " + to_string(h.optimizer) +
          ", or start from its weights alone with --init-from");
    const std::int64_t B = h.checksum_block_elems;
    for (Part p : parts)
      for (const UnitShard& su : shards)
        for (std::size_t i = 0; i < su.layout->tensors.size(); ++i) {
          const TensorSpec& t = su.layout->tensors[i];
          if (!stores(p, su, i)) continue;
          where = dataset_path(p, t);
          const htri_t exists = H5Lexists(file.get(), where.c_str(), H5P_DEFAULT);
          if (exists <= 0) throw h5::H5Error("missing");
          Stored s{h5::Dataset{FSDP_H5_ID(H5Dopen2(file.get(), where.c_str(), H5P_DEFAULT))}, {}};
          const std::vector<hsize_t> dims = h5::dims_of(s.d.get());
          if (dims != dims_of(t))
            throw h5::H5Error("shape " + h5::shape_text(dims) + ", but this model's is " +
                              h5::shape_text(dims_of(t)));
          h5::Type type{FSDP_H5_ID(H5Dget_type(s.d.get()))};
          if (H5Tget_class(type.get()) != H5T_FLOAT || H5Tget_size(type.get()) != 4)
            throw h5::H5Error("not float32");
          s.blocks = h5::read_attr_u64s(s.d.get(), "xxh3_blocks");
          if (std::int64_t(s.blocks.size()) != (t.numel + B - 1) / B)
            throw h5::H5Error("xxh3_blocks has " + std::to_string(s.blocks.size()) +
                              " entries, not one per block");
          if (table_hash(s.blocks) != h5::read_attr_u64(s.d.get(), "xxh3"))
            throw h5::H5Error("xxh3 does not match xxh3_blocks: the checksums are damaged");
          stored.push_back(std::move(s));
        }
  } catch (const ckpt::OptimizerMismatch&) {
    throw;  // the header is read collectively: every rank throws it here
  } catch (const std::exception& e) {
    err = (where.empty() ? "" : where + ": ") + e.what();
  }
  fail_together(err);

  // Phase 2: each rank reads its slice (independently: nobody waits on a slow neighbour), then
  // per unit the writers recompute the tables and all compare and agree. A rank whose read
  // failed still joins the unit's collectives.
  std::size_t k = 0;
  for (Part p : parts)
    for (const UnitShard& su : shards) {
      watch.emplace("reading checkpoint " + path + ": " + ckpt::group_path(p) + "/" +
                        su.layout->name,
                    board_.get());
      bool any = false;  // a part none of whose tensors the file holds (Muon's, under AdamW)
      for (std::size_t i = 0; i < su.layout->tensors.size(); ++i) any = any || stores(p, su, i);
      if (!any) continue;
      const ShardVec shard = part_shard(su, p);
      // The padding stays 0. Under Muon, exp_avg holds AdamW's first moments and the matrices'
      // momentum, read from two groups: each read keeps what the other put there.
      const bool shared = su.muon && (p == Part::ExpAvg || p == Part::Momentum);
      std::vector<float> host = shared ? shard.values() : std::vector<float>(std::size_t(shard.size()), 0.f);
      std::vector<DistributedArray> arrays;
      const bool writer = map.writes(su, rank_);
      std::vector<const TensorSpec*> read;  // the tensors this part stores, in order
      for (std::size_t i = 0; i < su.layout->tensors.size(); ++i) {
        const TensorSpec& t = su.layout->tensors[i];
        if (!stores(p, su, i)) continue;
        read.push_back(&t);
        const FlatRange mine = slice(su, map.pos_of(su, rank_), t);
        float* local = mine.empty() ? nullptr : host.data() + local_at(p, su, i, mine);
        try {
          h5::read_flat(stored[k + arrays.size()].d.get(), mine, local, H5P_DEFAULT);
        } catch (const std::exception& e) {
          if (err.empty()) err = dataset_path(p, t) + ": " + e.what();
        }
        arrays.push_back({hash_ranges(map, su, t), writer ? local : nullptr, t.numel});
      }
      const auto tables = block_hashes(comm, arrays, h.checksum_block_elems);
      for (std::size_t i = 0; i < arrays.size(); ++i, ++k) {
        const TensorSpec& t = *read[i];
        const std::string bad =
            compare_tables(stored[k].blocks, tables[i], t.numel, h.checksum_block_elems);
        if (err.empty() && !bad.empty()) err = dataset_path(p, t) + ": " + bad;
        stored[k].d.reset();
      }
      fail_together(err);
      shard.copy_from(host.data());
    }
  stored.clear();
  file.reset();  // read-only: nothing to flush

  state.shards_loaded();
  if (parts.size() == std::size(ckpt::kParts)) state.set_optimizer_steps(int(h.optimizer_steps));
  return h;
}

std::string Checkpointer::load_newest(CheckpointedState& state, ckpt::Header& header,
                                      const std::function<void(const std::string&)>& warn) {
  // Rank 0 lists the directory so every rank tries the same files in the same order.
  std::string names;
  if (rank_ == 0)
    for (const ckpt::Entry& e : ckpt::list_complete(dir_)) names += e.path + "\n";
  names = broadcast_string(comm_.get(), names, 0);
  for (std::size_t at = 0; at < names.size();) {
    const std::size_t nl = names.find('\n', at);
    const std::string path = names.substr(at, nl - at);
    at = nl + 1;
    try {
      header = load(path, state);
      return path;
    } catch (const ckpt::OptimizerMismatch&) {
      throw;  // not a damaged file: a run that must not continue from it
    } catch (const CheckpointError& e) {
      warn(std::string(e.what()) + "; skipping it");
    }
  }
  return {};
}

}  // namespace fsdp
