// SPDX-License-Identifier: MIT
#include "io/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "comm/safety.hpp"
#include "core/check.hpp"
#include "core/exit_codes.hpp"
#include "core/faults.hpp"
#include "comm/agree.hpp"
#include "io/block_hash.hpp"
#include "io/checkpoint_dir.hpp"
#include "io/direct_file_writer.hpp"
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

ShardVec part_shard(const UnitShard& su, Part p) {
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

struct Checkpointer::Lock {
  ckpt::DirLock lock;
};

Checkpointer::Checkpointer(MPI_Comm world, const CheckpointRun& run, Use use)
    : comm_(comm::OwnedComm::dup(world)), run_(run), dir_(run.checkpoint.dir) {
  FSDP_MPI_CHECK(MPI_Comm_rank(comm_.get(), &rank_));
  FSDP_MPI_CHECK(MPI_Comm_size(comm_.get(), &size_));
  h5::silence_errors();
  run_id_ = broadcast_string(comm_.get(), rank_ == 0 ? ckpt::new_run_id() : std::string(), 0);
  if (use == Use::Read) return;
  writes_ = true;
  // Found now rather than when a checkpoint is due (hours in, or at a preemption signal). A run
  // that checkpoints on a schedule takes the directory for itself now; one that writes only
  // when stopped by a signal (checkpoint.every = 0) takes it then.
  std::string err = rank_ == 0 ? ckpt::dir_problem(dir_) : std::string();
  err = agree_on_error(comm_.get(), err);
  if (err.empty() && run_.checkpoint.every > 0) err = take_dir();
  if (!err.empty()) throw CheckpointWriteError(err);
}

std::string Checkpointer::take_dir() {
  std::string err, warning;
  if (rank_ == 0 && !lock_) {
    err = ckpt::prepare_dir(dir_);
    auto lock = std::make_unique<Lock>();
    if (err.empty())
      err = ckpt::DirLock::take(dir_,
                                "host " + host_name() + ", pid " + std::to_string(::getpid()) +
                                    ", " + std::to_string(size_) + " ranks",
                                lock->lock, warning);
    if (err.empty()) lock_ = std::move(lock);
    if (!warning.empty()) std::fprintf(stderr, "fsdp-train: warning: %s\n", warning.c_str());
  }
  return agree_on_error(comm_.get(), err);
}

Checkpointer::~Checkpointer() = default;

void Checkpointer::adopt_run(const std::string& id, const std::string& path) {
  if (!id.empty()) run_id_ = id;
  resumed_from_ = fs::path(path).filename().string();
  if (fs::path(path).parent_path() != fs::path(dir_)) {
    std::error_code ec;  // a file elsewhere is not retention's to remove either way
    if (!fs::equivalent(fs::path(path).parent_path(), fs::path(dir_), ec)) resumed_from_.clear();
  }
}

std::string Checkpointer::in_the_way(const std::string& name) const {
  const std::string path = dir_ + "/" + name;
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (!fs::exists(st)) return {};
  if (!fs::is_regular_file(st))
    return path + " exists and is not a regular file: refusing to replace it";
  const std::string owner = ckpt::read_run_id(path);
  if (owner == run_id_) return {};
  return path + " belongs to " + (owner.empty() ? "another run (no run id)" : "run " + owner) +
         ", not this run (" + run_id_ + ")";
}

std::string Checkpointer::save(CheckpointedState& state, ckpt::Header h) {
  MPI_Comm comm = comm_.get();
  h.model = run_.model;
  h.run_config = run_.run_toml;
  h.saved_ranks = size_;
  h.strategy = run_.strategy;
  h.shard_group_size = state.shard_group_size();
  h.checksum_block_elems = kChecksumBlockElems;
  h.run_id = run_id_;
  // Everything that can be known before writing, agreed, so all ranks stop here together and
  // nothing is half-written. A name another run's file holds is left to it: this run's
  // checkpoint takes a name of its own (step_N.<run>.h5) instead.
  std::string name = ckpt::file_name(h.step);
  std::string err = writes_ ? take_dir() : std::string();
  if (!err.empty())
    throw CheckpointWriteError("cannot write checkpoint " + dir_ + "/" + name + ": " + err);
  if (rank_ == 0) {
    // A directory removed under a running job was removed on purpose (a purge, a user):
    // recreating it would also write without the lock that kept other jobs out.
    std::error_code ec;
    if (lock_ && !fs::is_directory(dir_, ec))
      err = "checkpoint.dir " + dir_ + ": was removed during the run (with this job's lock in "
            "it): not recreating it";
    else
      err = ckpt::prepare_dir(dir_);
    if (err.empty() && !in_the_way(name).empty()) {
      std::fprintf(stderr, "fsdp-train: %s; this run's checkpoint is %s instead\n",
                   in_the_way(name).c_str(), ckpt::run_file_name(h.step, run_id_).c_str());
      name = ckpt::run_file_name(h.step, run_id_);
      err = in_the_way(name);
    }
    if (err.empty() && !faults::skip_space_check())
      err = ckpt::space_problem(dir_, ckpt::checkpoint_bytes(run_.model));
    if (!err.empty()) err = "cannot write checkpoint " + dir_ + "/" + name + ": " + err;
  }
  err = agree_on_error(comm, err);
  if (!err.empty()) throw CheckpointWriteError(err);
  name = broadcast_string(comm, name, 0);
  const std::string path = dir_ + "/" + name, tmp = dir_ + "/" + ckpt::partial_name(name, run_id_);
  // H5Fcreate truncates through a link: whatever is at the temporary name (a planted link, a
  // killed attempt's partial file) is removed and the name created afresh, exclusively.
  if (rank_ == 0) {
    ::unlink(tmp.c_str());  // ENOENT is the usual answer; O_EXCL below catches the rest
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) err = "cannot write checkpoint " + tmp + ": " + std::strerror(errno);
    else if (::close(fd) != 0) err = "cannot write checkpoint " + tmp + ": " + std::strerror(errno);
  }
  err = agree_on_error(comm, err);
  if (!err.empty()) throw CheckpointWriteError(err);

  write_file(state, h, tmp);

  {
    comm::Watch watch("checkpoint " + tmp + ": the barrier after closing it");
    FSDP_MPI_CHECK(MPI_Barrier(comm));  // every rank has closed the file
  }
  if (rank_ == 0) {
    try {
      fs::rename(tmp, path);
      ckpt::sync_path(dir_);
      ckpt::write_latest(dir_, name);
      for (const std::string& victim : ckpt::retention_victims(
               ckpt::scan_dir(dir_), run_id_, run_.checkpoint.keep, {name, resumed_from_})) {
        std::error_code ec;
        fs::remove(dir_ + "/" + victim, ec);
      }
    } catch (const std::exception& e) {
      err = e.what();
    }
  }
  err = agree_on_error(comm, err);
  if (!err.empty()) throw CheckpointWriteError(path + ": " + err);
  return path;
}

void Checkpointer::write_file(CheckpointedState& state, const ckpt::Header& h,
                              const std::string& tmp) noexcept {
  // A failure on one rank leaves the others inside different collectives: no unwinding (the
  // parallel file's close is collective); the job ends with exit 7 and the last checkpoint
  // stands. noexcept makes an escaping exception end here, through the terminate handler.
  FatalContext fatal_context("writing checkpoint " + tmp, exit_code::kCheckpointWrite);
  MPI_Comm comm = comm_.get();
  const std::vector<UnitShard> shards = state.unit_shards();
  ExecSpace().fence();  // the shards are final before they are read on the host
  const ShardMap map = shard_map(comm, shards, state.writes_shard());
  const bool writer = map.writer[std::size_t(rank_)];
  const int pos = map.pos[std::size_t(rank_)];
  const char* stall_hint = " (a full disk or quota, a stalled file system or a stopped rank)";
  h5::File file;
  {
    comm::Watch watch("checkpoint " + tmp + ": creating it" + stall_hint);
    const h5::Plist fapl = ckpt::file_access(comm);
    const h5::Plist fcpl = ckpt::file_creation();
    file = h5::File{FSDP_H5_ID(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()))};
    fatal_context.set("writing checkpoint " + tmp + ": root attributes");
    ckpt::write_header(file.get(), h);
  }
  // HDF5 lays the file out: metadata, attributes and every dataset's contiguous extent,
  // allocated at creation and never filled. Once it has closed the file, each rank writes its
  // slices' bytes at the datasets' offsets itself, bypassing the page cache
  // (io/direct_file_writer.hpp): the same bytes H5Dwrite would have put there. After the close,
  // not during: an MPI-IO collective metadata write may read-modify-write a span around the
  // metadata (ROMIO's two-phase I/O over holes), which must not race with data writes.
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "datasets are float32 little-endian");
  // The shard in host memory: itself where it lives there (offloaded, or a background save's
  // staged copy), else a host copy of the device's (made once per pass).
  auto host_of = [](const ShardVec& shard, std::vector<float>& copy) {
    if (shard.in_host_memory()) return static_cast<const float*>(shard.host().data());
    copy = shard.values();
    return static_cast<const float*>(copy.data());
  };
  // Every dataset's checksum table first, a gigabyte of the model's tensors per call (two
  // collectives each), rather than two collectives per unit and part: in a background save this
  // thread shares the cores with training, and a collective that waits for another rank's
  // writer spins on a core that training needs. The grouping depends on the model alone, so
  // every rank makes the same calls; a device shard's host copies live for one group.
  std::vector<std::vector<std::uint64_t>> tables;
  {
    fatal_context.set("writing checkpoint " + tmp + ": checksums");
    comm::Watch watch("checkpoint " + tmp + ": checksums");
    constexpr std::int64_t kGroupBytes = std::int64_t(1) << 30;
    std::vector<std::vector<float>> copies;
    std::vector<DistributedArray> arrays;
    std::int64_t group_bytes = 0;
    auto hash_group = [&] {
      for (std::vector<std::uint64_t>& t : block_hashes(comm, arrays)) tables.push_back(std::move(t));
      arrays.clear();
      copies.clear();
      group_bytes = 0;
    };
    for (Part p : ckpt::kParts)
      for (const UnitShard& su : shards) {
        copies.emplace_back();
        const float* host = host_of(part_shard(su, p), copies.back());
        for (const TensorSpec& t : su.layout->tensors) {
          const FlatRange mine = writer ? slice(su, pos, t) : FlatRange{};
          const float* local =
              mine.empty() ? nullptr : host + (t.offset + mine.begin - su.shard_begin);
          arrays.push_back({hash_ranges(map, su, t), local, t.numel});
        }
        group_bytes += 4 * su.layout->numel;
        if (group_bytes >= kGroupBytes) hash_group();
      }
    if (!arrays.empty()) hash_group();
  }
  std::vector<haddr_t> offsets;  // of every dataset, in the order created
  const h5::Plist dcpl = ckpt::dataset_creation();
  const h5::Plist gcpl = ckpt::group_creation();
  h5::Group optim{
      FSDP_H5_ID(H5Gcreate2(file.get(), "/optim", H5P_DEFAULT, gcpl.get(), H5P_DEFAULT))};
  for (Part p : ckpt::kParts) {
    h5::Group g{FSDP_H5_ID(
        H5Gcreate2(file.get(), ckpt::group_path(p), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT))};
    for (const UnitShard& su : shards)
      for (const TensorSpec& t : su.layout->tensors) {
        const std::vector<std::uint64_t>& table = tables[offsets.size()];
        const std::string where = dataset_path(p, t);
        fatal_context.set("writing checkpoint " + tmp + ": " + where);
        comm::Watch watch("checkpoint " + tmp + ": creating " + where + stall_hint);
        const std::vector<hsize_t> dims = dims_of(t);
        h5::Space space{FSDP_H5_ID(H5Screate_simple(int(dims.size()), dims.data(), nullptr))};
        h5::Dataset d{FSDP_H5_ID(H5Dcreate2(g.get(), t.name.c_str(), H5T_IEEE_F32LE, space.get(),
                                            H5P_DEFAULT, dcpl.get(), H5P_DEFAULT))};
        offsets.push_back(H5Dget_offset(d.get()));  // no user block: addresses are offsets
        if (offsets.back() == HADDR_UNDEF)
          fatal("writing checkpoint " + tmp + ": " + where + ": HDF5 gave no file offset",
                exit_code::kCheckpointWrite);
        h5::write_attr_u64s(d.get(), "xxh3_blocks", table);
        h5::write_attr_u64(d.get(), "xxh3", table_hash(table));
      }
    if (p == Part::Params) faults::pause_in_checkpoint_write(rank_);
  }
  optim.reset();
  {
    fatal_context.set("writing checkpoint " + tmp + ": flushing and closing it");
    comm::Watch watch("checkpoint " + tmp + ": flushing and closing it" + std::string(stall_hint));
    FSDP_H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));  // MPI_File_sync on every rank
    file.close();
  }
  fatal_context.set("writing checkpoint " + tmp + ": its data");
  comm::Watch watch("checkpoint " + tmp + ": writing its data" + std::string(stall_hint));
  if (!writer) return;  // a replica's bytes are its shard group's writer's
  DirectFileWriter data(tmp);
  std::size_t k = 0;
  for (Part p : ckpt::kParts)
    for (const UnitShard& su : shards) {
      std::vector<float> copy;
      const float* host = host_of(part_shard(su, p), copy);
      for (const TensorSpec& t : su.layout->tensors) {
        const FlatRange mine = slice(su, pos, t);
        const haddr_t at = offsets[k++];
        if (!mine.empty())
          data.write(at + 4 * std::uint64_t(mine.begin),
                     host + (t.offset + mine.begin - su.shard_begin),
                     4 * std::uint64_t(mine.size()));
      }
    }
  data.finish();  // on the disk before save()'s barrier lets rank 0 rename the file
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
  std::optional<comm::Watch> watch;
  watch.emplace("reading checkpoint " + path + ": its headers, shapes and checksum tables");
  try {
    if (const std::string why = ckpt::not_hdf5(path); !why.empty()) throw h5::H5Error(why);
    const h5::Plist fapl = ckpt::file_access(comm);
    file = h5::File{FSDP_H5_ID(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()))};
    where = "root attributes";
    h = ckpt::read_header(file.get());
    const std::string mismatch = ckpt::model_mismatch(h.model, run_.model);
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
      watch.emplace("reading checkpoint " + path + ": " + ckpt::group_path(p) + "/" +
                    su.layout->name);
      const ShardVec shard = part_shard(su, p);
      std::vector<float> host(std::size_t(shard.size()), 0.f);  // the padding stays 0
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
    } catch (const CheckpointError& e) {
      warn(std::string(e.what()) + "; skipping it");
    }
  }
  return {};
}

}  // namespace fsdp
