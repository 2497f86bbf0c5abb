// SPDX-License-Identifier: MIT
#include "io/checkpoint.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "core/check.hpp"
#include "core/faults.hpp"
#include "io/agree.hpp"
#include "io/block_hash.hpp"
#include "io/h5_io.hpp"

namespace fsdp {
namespace fs = std::filesystem;
using ckpt::Part;
using h5::FlatRange;

namespace {

// Where every rank's shard lies: its position in its shard group (unit u's shard is flat
// elements [pos * shard, (pos + 1) * shard)) and whether it is the copy that writes and hashes.
struct ShardMap {
  std::vector<int> pos;
  std::vector<int> writer;
};

ShardMap shard_map(MPI_Comm comm, const std::vector<UnitShard>& shards, bool writes) {
  int size = 1;
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  const UnitShard& su = shards.front();
  const int mine[2] = {int(su.shard_begin / su.shard), writes ? 1 : 0};
  std::vector<int> all(2 * std::size_t(size));
  FSDP_MPI_CHECK(MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm));
  ShardMap m;
  for (int q = 0; q < size; ++q) {
    m.pos.push_back(all[2 * q]);
    m.writer.push_back(all[2 * q + 1]);
  }
  return m;
}

// The elements of tensor t (in its own flat coordinates) inside shard position `pos` of su.
FlatRange slice(const UnitShard& su, int pos, const TensorSpec& t) {
  const FlatRange r =
      h5::intersect({pos * su.shard, (pos + 1) * su.shard}, {t.offset, t.offset + t.numel});
  if (r.empty()) return {};
  return {r.begin - t.offset, r.end - t.offset};
}

// Each rank's part in hashing tensor t: writers their slice, replicas nothing.
std::vector<FlatRange> hash_ranges(const ShardMap& m, const UnitShard& su, const TensorSpec& t) {
  std::vector<FlatRange> r(m.pos.size());
  for (std::size_t q = 0; q < r.size(); ++q)
    if (m.writer[q]) r[q] = slice(su, m.pos[q], t);
  return r;
}

Vec part_shard(const UnitShard& su, Part p) {
  switch (p) {
    case Part::Params:
      return su.params;
    case Part::ExpAvg:
      return su.exp_avg;
    case Part::ExpAvgSq:
      return su.exp_avg_sq;
  }
  return {};
}

std::string dataset_path(Part p, const TensorSpec& t) {
  return std::string(ckpt::group_path(p)) + "/" + t.name;
}

std::vector<hsize_t> dims_of(const TensorSpec& t) {
  return std::vector<hsize_t>(t.shape.begin(), t.shape.end());
}

// The first block whose hash differs, as a message; "" when the tables agree.
std::string compare_tables(const std::vector<std::uint64_t>& stored,
                           const std::vector<std::uint64_t>& got, std::int64_t numel,
                           std::int64_t B) {
  for (std::size_t k = 0; k < got.size(); ++k)
    if (stored[k] != got[k]) {
      const std::int64_t a = std::int64_t(k) * B, b = std::min(a + B, numel) - 1;
      return "checksum mismatch in block " + std::to_string(k) + " of " +
             std::to_string(got.size()) + " (elements " + std::to_string(a) + ".." +
             std::to_string(b) + "): the data is damaged";
    }
  return {};
}

}  // namespace

Checkpointer::Checkpointer(MPI_Comm world, const RunConfig& cfg)
    : comm_(comm::OwnedComm::dup(world)), cfg_(cfg), dir_(cfg.checkpoint.dir) {
  FSDP_MPI_CHECK(MPI_Comm_rank(comm_.get(), &rank_));
  FSDP_MPI_CHECK(MPI_Comm_size(comm_.get(), &size_));
  h5::silence_errors();
  if (cfg_.checkpoint.every <= 0) return;
  // Find an unusable directory now rather than at the first checkpoint, hours in.
  std::string err;
  if (rank_ == 0) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec)
      err = "checkpoint.dir " + dir_ + ": " + ec.message();
    else if (::access(dir_.c_str(), W_OK) != 0)
      err = "checkpoint.dir " + dir_ + ": not writable";
  }
  err = agree_on_error(comm_.get(), err);
  if (!err.empty()) throw CheckpointError(err);
}

std::string Checkpointer::save(CheckpointedState& state, ckpt::Header h) {
  MPI_Comm comm = comm_.get();
  h.model = cfg_.model;
  h.run_config = cfg_.resolved_toml;
  h.saved_ranks = size_;
  h.strategy = cfg_.fsdp.strategy;
  h.shard_group_size = state.shard_group_size();
  const std::vector<UnitShard> shards = state.unit_shards();
  h.checksum_block_elems = kChecksumBlockElems;
  const std::string name = ckpt::file_name(h.step), path = dir_ + "/" + name, tmp = path + ".tmp";

  std::string err;
  if (rank_ == 0) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) err = dir_ + ": " + ec.message();
  }
  err = agree_on_error(comm, err);
  if (!err.empty()) throw CheckpointError(err);

  Kokkos::fence();  // the shards are final before they are read on the host
  const ShardMap map = shard_map(comm, shards, state.writes_shard());
  const bool writer = map.writer[std::size_t(rank_)];
  const int pos = map.pos[std::size_t(rank_)];
  std::string where = "file";
  try {
    const h5::Plist fapl = ckpt::file_access(comm);
    h5::File file{FSDP_H5_ID(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()))};
    where = "root attributes";
    ckpt::write_header(file.get(), h);
    const h5::Plist dcpl = ckpt::dataset_creation(), dxpl = ckpt::collective_transfer();
    h5::Group{FSDP_H5_ID(H5Gcreate2(file.get(), "/optim", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT))};
    for (Part p : ckpt::kParts) {
      h5::Group g{FSDP_H5_ID(
          H5Gcreate2(file.get(), ckpt::group_path(p), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT))};
      for (const UnitShard& su : shards) {
        // On a host build this is the shard itself; on a GPU build, a host copy of it.
        const auto host = Kokkos::create_mirror_view_and_copy(HostSpace(), part_shard(su, p));
        std::vector<DistributedArray> arrays;
        for (const TensorSpec& t : su.layout->tensors) {
          const FlatRange mine = writer ? slice(su, pos, t) : FlatRange{};
          const float* local =
              mine.empty() ? nullptr : host.data() + (t.offset + mine.begin - su.shard_begin);
          arrays.push_back({hash_ranges(map, su, t), local, t.numel});
        }
        where = std::string(ckpt::group_path(p)) + "/" + su.layout->name + " (checksums)";
        const auto tables = block_hashes(comm, arrays);
        for (std::size_t i = 0; i < arrays.size(); ++i) {
          const TensorSpec& t = su.layout->tensors[i];
          where = dataset_path(p, t);
          const std::vector<hsize_t> dims = dims_of(t);
          h5::Space space{FSDP_H5_ID(H5Screate_simple(int(dims.size()), dims.data(), nullptr))};
          h5::Dataset d{FSDP_H5_ID(H5Dcreate2(g.get(), t.name.c_str(), H5T_IEEE_F32LE, space.get(),
                                              H5P_DEFAULT, dcpl.get(), H5P_DEFAULT))};
          const FlatRange mine = writer ? slice(su, pos, t) : FlatRange{};
          h5::write_flat(d.get(), mine, arrays[i].local, dxpl.get());
          h5::write_attr_u64s(d.get(), "xxh3_blocks", tables[i]);
          h5::write_attr_u64(d.get(), "xxh3", table_hash(tables[i]));
        }
      }
      if (p == Part::Params) faults::pause_in_checkpoint_write(rank_);
    }
    where = "file";
    FSDP_H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));  // MPI_File_sync on every rank
    file.close();
  } catch (const std::exception& e) {
    // Ranks may be inside different collectives now: end the job; the last checkpoint stands.
    fatal("writing checkpoint " + tmp + ": " + where + ": " + e.what());
  }

  FSDP_MPI_CHECK(MPI_Barrier(comm));  // every rank has closed the file
  if (rank_ == 0) {
    try {
      fs::rename(tmp, path);
      ckpt::sync_path(dir_);
      ckpt::write_latest(dir_, name);
      ckpt::prune(dir_, cfg_.checkpoint.keep);
    } catch (const std::exception& e) {
      err = e.what();
    }
  }
  err = agree_on_error(comm, err);
  if (!err.empty()) throw CheckpointError(path + ": " + err);
  return path;
}

ckpt::Header Checkpointer::load(const std::string& path, CheckpointedState& state) {
  return read(path, state, {Part::Params, Part::ExpAvg, Part::ExpAvgSq});
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
  const ShardMap map = shard_map(comm, shards, state.writes_shard());
  const bool writer = map.writer[std::size_t(rank_)];
  const int pos = map.pos[std::size_t(rank_)];

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
  try {
    if (const std::string why = ckpt::not_hdf5(path); !why.empty()) throw h5::H5Error(why);
    const h5::Plist fapl = ckpt::file_access(comm);
    file = h5::File{FSDP_H5_ID(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()))};
    where = "root attributes";
    h = ckpt::read_header(file.get());
    const std::string mismatch = ckpt::model_mismatch(h.model, cfg_.model);
    if (!mismatch.empty()) throw h5::H5Error("written for a different model: " + mismatch);
    const std::int64_t B = h.checksum_block_elems;
    for (Part p : parts)
      for (const UnitShard& su : shards)
        for (const TensorSpec& t : su.layout->tensors) {
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
      const Vec shard = part_shard(su, p);
      const auto host = Kokkos::create_mirror_view(HostSpace(), shard);
      Kokkos::deep_copy(host, 0.f);  // the padding beyond the unit's numel stays 0
      std::vector<DistributedArray> arrays;
      for (const TensorSpec& t : su.layout->tensors) {
        const FlatRange mine = slice(su, pos, t);
        float* local =
            mine.empty() ? nullptr : host.data() + (t.offset + mine.begin - su.shard_begin);
        try {
          h5::read_flat(stored[k + arrays.size()].d.get(), mine, local, H5P_DEFAULT);
        } catch (const std::exception& e) {
          if (err.empty()) err = dataset_path(p, t) + ": " + e.what();
        }
        arrays.push_back({hash_ranges(map, su, t), writer ? local : nullptr, t.numel});
      }
      const auto tables = block_hashes(comm, arrays, h.checksum_block_elems);
      for (std::size_t i = 0; i < arrays.size(); ++i, ++k) {
        const TensorSpec& t = su.layout->tensors[i];
        const std::string bad =
            compare_tables(stored[k].blocks, tables[i], t.numel, h.checksum_block_elems);
        if (err.empty() && !bad.empty()) err = dataset_path(p, t) + ": " + bad;
        stored[k].d.reset();
      }
      fail_together(err);
      Kokkos::deep_copy(shard, host);
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
    } catch (const CheckpointError& e) {
      warn(std::string(e.what()) + "; skipping it");
    }
  }
  return {};
}

}  // namespace fsdp
