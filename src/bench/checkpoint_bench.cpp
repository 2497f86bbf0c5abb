// SPDX-License-Identifier: MIT
#include "bench/checkpoint_bench.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "config/load_config.hpp"
#include "core/check.hpp"
#include "io/checkpoint.hpp"
#include "train/trainer.hpp"

namespace fsdp {
namespace {

// Flushes the file and drops it from the page cache, so the next read comes from the disk.
void drop_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// Seconds a shell command took; a failed command is fatal (the figure would be meaningless).
double timed_shell(const std::string& cmd) {
  const double t0 = now_s();
  if (std::system(cmd.c_str()) != 0) fatal("fsdp-ckpt bench: failed: " + cmd);
  return now_s() - t0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int run_checkpoint_bench(MPI_Comm world, const CheckpointBenchOptions& o) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &nranks);
  RunConfig cfg;
  try {
    cfg = load_config(o.config, o.overrides);
  } catch (const ConfigError& e) {
    if (rank == 0) std::fprintf(stderr, "fsdp-ckpt bench: %s\n", e.what());
    return 2;
  }
  cfg.checkpoint.dir = o.dir;
  cfg.checkpoint.every = 0;
  cfg.checkpoint.keep = 1;
  if (cfg.train.peak_tflops <= 0) cfg.train.peak_tflops = 1.0;  // no GEMM measurement
  // No step runs: one sequence per rank makes any rank count valid and keeps activations small.
  cfg.train.batch_size = nranks;
  cfg.train.micro_batch_size = 1;
  TrainOptions topts;
  topts.log = false;
  Trainer trainer(cfg, world, topts);
  Checkpointer reader(world, checkpoint_run(cfg));
  std::filesystem::create_directories(o.dir);
  const std::string dd_file = o.dir + "/dd.bin";

  std::vector<double> w, r, dw, dr;
  std::uintmax_t bytes = 0;
  for (int rep = 0; rep < o.reps; ++rep) {
    FSDP_MPI_CHECK(MPI_Barrier(world));
    double t0 = now_s();
    const std::string path = trainer.save_checkpoint();  // includes MPI_File_sync and rename
    FSDP_MPI_CHECK(MPI_Barrier(world));
    w.push_back(now_s() - t0);
    if (rank == 0) {
      bytes = std::filesystem::file_size(path);
      drop_cache(path);
    }
    FSDP_MPI_CHECK(MPI_Barrier(world));
    t0 = now_s();
    reader.load(path, trainer.engine().state());
    FSDP_MPI_CHECK(MPI_Barrier(world));
    r.push_back(now_s() - t0);
    if (rank == 0) {
      // The same bytes through the same file system: written and synced, then read uncached.
      const std::uintmax_t mib = (bytes + (1u << 20) - 1) >> 20;
      dw.push_back(timed_shell("dd if=/dev/zero of=" + dd_file +
                               " bs=1M count=" + std::to_string(mib) + " conv=fsync status=none"));
      drop_cache(dd_file);
      dr.push_back(timed_shell("dd if=" + dd_file + " of=/dev/null bs=1M status=none"));
      std::filesystem::remove(dd_file);
    }
  }
  if (rank != 0) return 0;
  const double gb = double(bytes) / 1e9;
  std::printf(
      "# fsdp-ckpt bench: %lld parameters, %.3f GB per checkpoint (params + exp_avg + "
      "exp_avg_sq), %d ranks, %s, %s\n",
      (long long)num_params(cfg.model), gb, nranks, cfg.fsdp.strategy.c_str(), o.dir.c_str());
  std::printf(
      "# write: collective HDF5 write + MPI_File_sync + rename; dd: conv=fsync. read: "
      "page cache dropped first, checksums verified\n");
  std::printf("# %6s %9s %10s %10s %6s %9s %10s %10s %6s\n", "rep", "write_s", "GB/s", "dd_GB/s",
              "ratio", "read_s", "GB/s", "dd_GB/s", "ratio");
  auto row = [&](const char* label, double ws, double dws, double rs, double drs) {
    std::printf("  %6s %9.3f %10.3f %10.3f %6.2f %9.3f %10.3f %10.3f %6.2f\n", label, ws, gb / ws,
                gb / dws, dws / ws, rs, gb / rs, gb / drs, drs / rs);
  };
  for (int i = 0; i < o.reps; ++i) row(std::to_string(i + 1).c_str(), w[i], dw[i], r[i], dr[i]);
  row("median", median(w), median(dw), median(r), median(dr));
  return 0;
}

}  // namespace fsdp
