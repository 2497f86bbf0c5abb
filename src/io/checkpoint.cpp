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
#include "io/checkpoint_slices.hpp"
#include "io/h5_io.hpp"

namespace fsdp {
namespace fs = std::filesystem;
using ckpt::Part;
using h5::FlatRange;

using namespace ckpt_slices;

struct Checkpointer::Lock {
  ckpt::DirLock lock;
};

Checkpointer::Checkpointer(MPI_Comm world, const CheckpointRun& run, Use use)
    : comm_(comm::OwnedComm::dup(world)),
      board_(comm::ArrivalBoard::create(comm_.get())),
      run_(run),
      dir_(run.checkpoint.dir) {
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
  h.optimizer = run_.optimizer;
  h.lora = run_.lora;
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
      err = ckpt::space_problem(dir_, ckpt::checkpoint_bytes(run_.model, run_.optimizer, run_.lora));
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
    comm::Watch watch("checkpoint " + tmp + ": the barrier after closing it", board_.get());
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
  const ShardMap map = shard_map(comm, shards);
  bool writer = false;  // of some part's slices (a replica of all of them writes nothing)
  for (const UnitShard& su : shards) writer = writer || map.writes(su, rank_);
  const char* stall_hint = " (a full disk or quota, a stalled file system or a stopped rank)";
  h5::File file;
  {
    comm::Watch watch("checkpoint " + tmp + ": creating it" + stall_hint, board_.get());
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
    comm::Watch watch("checkpoint " + tmp + ": checksums", board_.get());
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
        const bool writes = map.writes(su, rank_);
        for (std::size_t i = 0; i < su.layout->tensors.size(); ++i) {
          const TensorSpec& t = su.layout->tensors[i];
          if (!stores(p, su, i)) continue;
          const FlatRange mine = writes ? slice(su, map.pos_of(su, rank_), t) : FlatRange{};
          const float* local = mine.empty() ? nullptr : host + local_at(p, su, i, mine);
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
    // A group only where it holds datasets: an AdamW file has no /optim/momentum, as before.
    bool any = false;
    for (const UnitShard& su : shards)
      for (std::size_t i = 0; i < su.layout->tensors.size(); ++i) any = any || stores(p, su, i);
    if (!any) continue;
    h5::Group g{FSDP_H5_ID(
        H5Gcreate2(file.get(), ckpt::group_path(p), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT))};
    for (const UnitShard& su : shards)
      for (std::size_t i = 0; i < su.layout->tensors.size(); ++i) {
        const TensorSpec& t = su.layout->tensors[i];
        if (!stores(p, su, i)) continue;
        const std::vector<std::uint64_t>& table = tables[offsets.size()];
        const std::string where = dataset_path(p, t);
        fatal_context.set("writing checkpoint " + tmp + ": " + where);
        comm::Watch watch("checkpoint " + tmp + ": creating " + where + stall_hint,
                          board_.get());
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
    comm::Watch watch("checkpoint " + tmp + ": flushing and closing it" + std::string(stall_hint),
                      board_.get());
    FSDP_H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));  // MPI_File_sync on every rank
    file.close();
  }
  fatal_context.set("writing checkpoint " + tmp + ": its data");
  comm::Watch watch("checkpoint " + tmp + ": writing its data" + std::string(stall_hint),
                    board_.get());
  if (!writer) return;  // a replica's bytes are its shard group's writer's
  DirectFileWriter data(tmp);
  std::size_t k = 0;
  for (Part p : ckpt::kParts)
    for (const UnitShard& su : shards) {
      if (!map.writes(su, rank_)) {
        for (std::size_t i = 0; i < su.layout->tensors.size(); ++i) k += stores(p, su, i);
        continue;
      }
      std::vector<float> copy;
      const float* host = host_of(part_shard(su, p), copy);
      for (std::size_t i = 0; i < su.layout->tensors.size(); ++i) {
        const TensorSpec& t = su.layout->tensors[i];
        if (!stores(p, su, i)) continue;
        const FlatRange mine = slice(su, map.pos_of(su, rank_), t);
        const haddr_t at = offsets[k++];
        if (!mine.empty())
          data.write(at + 4 * std::uint64_t(mine.begin), host + local_at(p, su, i, mine),
                     4 * std::uint64_t(mine.size()));
      }
    }
  data.finish();  // on the disk before save()'s barrier lets rank 0 rename the file
}

}  // namespace fsdp
