// SPDX-License-Identifier: MIT
// Checkpoints on N ranks: block checksums and hyperslab ranges against serial references, a
// written-then-read file against the engine's own gathered parameters, bit-for-bit resume at
// the same N for every strategy, resharding onto one rank, and damaged files failing together.
#include <xxhash.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "damage.hpp"
#include "engine_fixture.hpp"
#include "comm/agree.hpp"
#include "io/block_hash.hpp"
#include "io/async_checkpointer.hpp"
#include "io/checkpoint.hpp"
#include "io/direct_file_writer.hpp"
#include "io/h5_io.hpp"
#include "model/gemm/bf16_gemm.hpp"
#include "model/tensor_block.hpp"
#include "plan/memory_model.hpp"

using namespace fsdp;
namespace fs = std::filesystem;

namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// The row-major flat indices of block b's elements, in the block's own row-major order: every
// multi-index inside it, counted one by one (the reference for h5::block_runs and read_block).
std::vector<std::int64_t> block_indices(const std::vector<hsize_t>& dims, const TensorBlock& b) {
  std::vector<std::int64_t> out;
  if (b.numel() == 0) return out;
  std::vector<std::int64_t> at = b.start;
  while (true) {
    std::int64_t flat = 0;
    for (std::size_t d = 0; d < dims.size(); ++d) flat = flat * std::int64_t(dims[d]) + at[d];
    out.push_back(flat);
    std::size_t d = dims.size();
    while (d > 0 && ++at[d - 1] == b.start[d - 1] + b.count[d - 1]) {
      at[d - 1] = b.start[d - 1];
      --d;
    }
    if (d == 0) return out;
  }
}

// A partition of [0, n) into `size` contiguous ranges of uneven (possibly zero) lengths,
// assigned to the ranks in a shuffled order: the same on every rank (fixed seed).
std::vector<h5::FlatRange> uneven_partition(std::int64_t n, int size, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::int64_t> cuts{0, n};
  for (int q = 1; q < size; ++q) cuts.push_back(std::int64_t(rng() % std::uint64_t(n + 1)));
  std::sort(cuts.begin(), cuts.end());
  std::vector<h5::FlatRange> r;
  for (int q = 0; q < size; ++q) r.push_back({cuts[q], cuts[q + 1]});
  std::shuffle(r.begin(), r.end(), rng);
  return r;
}

RunConfig ckpt_config(const std::string& strategy, const std::string& dir) {
  RunConfig c = test::tiny_config(strategy, 1);
  c.train.steps = 10;
  c.checkpoint.dir = dir;
  if (strategy == "hybrid" && test::world_size() % 2 == 0) c.fsdp.shard_group_size = 2;
  return c;
}

TrainOptions resume_from(const std::string& what) {
  TrainOptions o = test::quiet();
  o.resume = what;
  return o;
}

struct Shards {
  std::vector<std::vector<float>> p, m, v;
};
Shards shards(Engine& e) {
  Shards s;
  auto copy = [](const ShardVec& x) { return x.values(); };
  for (int u = 0; u < int(e.units().size()); ++u) {
    s.p.push_back(copy(e.param_shard(u)));
    s.m.push_back(copy(e.exp_avg_shard(u)));
    s.v.push_back(copy(e.exp_avg_sq_shard(u)));
  }
  return s;
}

double rel(double a, double b) { return std::abs(a - b) / std::max(1e-12, std::abs(b)); }

}  // namespace

TEST_CASE("block checksums do not depend on how the arrays are split over ranks", "[checkpoint]") {
  const int size = test::world_size(), rank = world_rank();
  const std::vector<std::int64_t> sizes{1, 5, 1000, 64, 333};
  std::vector<std::vector<float>> full;
  for (std::int64_t n : sizes) {
    full.emplace_back(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      full.back()[std::size_t(i)] = std::sin(0.37f * float(i + n));
  }
  for (std::int64_t B : {std::int64_t(7), std::int64_t(64), kChecksumBlockElems}) {
    for (unsigned seed = 1; seed <= 4; ++seed) {
      // All arrays in one call, each split its own way.
      std::vector<DistributedArray> arrays;
      for (std::size_t a = 0; a < sizes.size(); ++a) {
        const auto parts = uneven_partition(sizes[a], size, seed * 31 + unsigned(a));
        arrays.push_back({parts, full[a].data() + parts[std::size_t(rank)].begin, sizes[a]});
      }
      const auto got = block_hashes(MPI_COMM_WORLD, arrays, B);
      for (std::size_t a = 0; a < sizes.size(); ++a) {
        const std::int64_t n = sizes[a];
        std::vector<std::uint64_t> want;
        for (std::int64_t b = 0; b < n; b += B)
          want.push_back(XXH3_64bits(full[a].data() + b, std::size_t(std::min(B, n - b)) * 4));
        INFO("n " << n << " block " << B << " partition " << seed);
        REQUIRE(got[a] == want);
        REQUIRE(table_hash(got[a]) == XXH3_64bits(want.data(), want.size() * 8));
      }
    }
  }
}

TEST_CASE("flat ranges written by every rank at the datasets' offsets read back exactly",
          "[checkpoint]") {
  // The checkpoint's data path: HDF5 lays the file out, each rank writes its flat range's bytes
  // at the dataset's offset (whole blocks direct, the partial blocks buffered, ranks sharing
  // blocks at their boundaries), and HDF5 reads them back, whole and by the same flat ranges.
  test::SharedTmpDir tmp("fsdp_ckpt_test");
  const std::string file = tmp.path + "/ranges.h5";
  const int size = test::world_size(), rank = world_rank();
  const std::vector<std::vector<hsize_t>> shapes{{37}, {5, 13}, {3, 4, 7}, {1, 9}, {3001, 7},
                                                 {50021}};
  std::vector<h5::FlatRange> mine(shapes.size());
  {
    const h5::Plist fapl = ckpt::file_access(MPI_COMM_WORLD);
    h5::File f{FSDP_H5_ID(H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()))};
    DirectFileWriter data(file);
    const h5::Plist dcpl = ckpt::dataset_creation();
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      const auto& dims = shapes[k];
      const std::int64_t n = h5::numel(dims);
      REQUIRE(h5::flat_range_boxes(dims, {1, n - 1}).size() <= 2 * dims.size() - 1);
      h5::Space s{FSDP_H5_ID(H5Screate_simple(int(dims.size()), dims.data(), nullptr))};
      const std::string name = "d" + std::to_string(k);
      h5::Dataset d{FSDP_H5_ID(H5Dcreate2(f.get(), name.c_str(), H5T_IEEE_F32LE, s.get(),
                                          H5P_DEFAULT, dcpl.get(), H5P_DEFAULT))};
      mine[k] = uneven_partition(n, size, unsigned(k + 11))[std::size_t(rank)];
      std::vector<float> piece;
      for (std::int64_t i = mine[k].begin; i < mine[k].end; ++i) piece.push_back(float(i));
      const haddr_t at = H5Dget_offset(d.get());
      REQUIRE(at != HADDR_UNDEF);
      data.write(at + 4 * std::uint64_t(mine[k].begin), piece.data(), 4 * piece.size());
    }
    data.finish();
    f.close();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // Read back whole, serially, on every rank: element i of the row-major order holds i; and
  // each rank's own range through the checkpoint reader's flat selection.
  h5::File f{FSDP_H5_ID(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT))};
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    h5::Dataset d{FSDP_H5_ID(H5Dopen2(f.get(), ("d" + std::to_string(k)).c_str(), H5P_DEFAULT))};
    const std::int64_t n = h5::numel(shapes[k]);
    std::vector<float> all(std::size_t(n), -1.f);
    FSDP_H5_CHECK(H5Dread(d.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()));
    for (std::int64_t i = 0; i < n; ++i) REQUIRE(all[std::size_t(i)] == float(i));
    std::vector<float> part(std::size_t(std::max<std::int64_t>(mine[k].size(), 1)), -1.f);
    h5::read_flat(d.get(), mine[k], part.data(), H5P_DEFAULT);
    for (std::int64_t i = 0; i < mine[k].size(); ++i)
      REQUIRE(part[std::size_t(i)] == float(mine[k].begin + i));
  }
}

TEST_CASE("a tensor split along its second dimension is written by blocks and read at others",
          "[checkpoint]") {
  // Tensor parallelism's checkpoint path: each rank holds a block of the tensor's own index space
  // (model/tensor_block.hpp), not a flat range; it writes the block's rows at the dataset's
  // offsets, and any other split reads its blocks back as hyperslabs. The reference is the
  // element's row-major index, which every element stores.
  test::SharedTmpDir tmp("fsdp_ckpt_test");
  const std::string file = tmp.path + "/blocks.h5";
  const int size = test::world_size(), rank = world_rank();
  const std::vector<std::vector<std::int64_t>> shapes{{6, 10}, {3, 7, 5}, {4, 1}, {2, 3, 2, 4}};
  auto dims_of = [](const std::vector<std::int64_t>& s) {
    return std::vector<hsize_t>(s.begin(), s.end());
  };
  {
    const h5::Plist fapl = ckpt::file_access(MPI_COMM_WORLD);
    h5::File f{FSDP_H5_ID(H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()))};
    DirectFileWriter data(file);
    const h5::Plist dcpl = ckpt::dataset_creation();
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      const std::vector<hsize_t> dims = dims_of(shapes[k]);
      h5::Space s{FSDP_H5_ID(H5Screate_simple(int(dims.size()), dims.data(), nullptr))};
      h5::Dataset d{FSDP_H5_ID(H5Dcreate2(f.get(), ("t" + std::to_string(k)).c_str(),
                                          H5T_IEEE_F32LE, s.get(), H5P_DEFAULT, dcpl.get(),
                                          H5P_DEFAULT))};
      // This rank's columns; the last tensor is split twice (along dimension 1 over the ranks,
      // then along dimension 3 in halves: a second mesh dimension, whose two coordinates this
      // rank plays both).
      const TensorBlock cols = split_block(whole_block(shapes[k]), 1, rank, size);
      std::vector<TensorBlock> mine{cols};
      if (k == 3) mine = {split_block(cols, 3, 0, 2), split_block(cols, 3, 1, 2)};
      const haddr_t at = H5Dget_offset(d.get());
      REQUIRE(at != HADDR_UNDEF);
      for (const TensorBlock& b : mine) {
        std::vector<float> held;  // the block row-major, as a rank holds it
        for (std::int64_t i : block_indices(dims, b)) held.push_back(float(i));
        REQUIRE(std::int64_t(held.size()) == b.numel());
        std::size_t from = 0;
        for (const h5::FlatRange& run : h5::block_runs(dims, b)) {
          data.write(at + 4 * std::uint64_t(run.begin), held.data() + from, 4 * std::uint64_t(run.size()));
          from += std::size_t(run.size());
        }
      }
    }
    data.finish();
    f.close();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  h5::File f{FSDP_H5_ID(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT))};
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    h5::Dataset d{FSDP_H5_ID(H5Dopen2(f.get(), ("t" + std::to_string(k)).c_str(), H5P_DEFAULT))};
    const std::vector<hsize_t> dims = dims_of(shapes[k]);
    const std::int64_t n = h5::numel(dims);
    std::vector<float> all(std::size_t(n), -1.f);  // whole: every element written once
    FSDP_H5_CHECK(H5Dread(d.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()));
    for (std::int64_t i = 0; i < n; ++i) REQUIRE(all[std::size_t(i)] == float(i));
    // Every other split: along each dimension, over 1, 2, 3 and 5 ranks (more ranks than
    // indices leaves some empty), each block through one hyperslab, against the whole.
    for (int dim = 0; dim < int(dims.size()); ++dim)
      for (int m : {1, 2, 3, 5}) {
        std::int64_t covered = 0;
        for (int c = 0; c < m; ++c) {
          const TensorBlock b = split_block(whole_block(shapes[k]), dim, c, m);
          INFO("tensor " << k << " block " << block_text(b));
          std::vector<float> got(std::size_t(std::max<std::int64_t>(b.numel(), 1)), -1.f);
          h5::read_block(d.get(), b, got.data(), H5P_DEFAULT);
          const std::vector<std::int64_t> want = block_indices(dims, b);
          REQUIRE(std::int64_t(want.size()) == b.numel());
          for (std::size_t j = 0; j < want.size(); ++j) REQUIRE(got[j] == float(want[j]));
          std::vector<std::int64_t> runs;  // the writer's runs cover the same, in order
          for (const h5::FlatRange& run : h5::block_runs(dims, b))
            for (std::int64_t i = run.begin; i < run.end; ++i) runs.push_back(i);
          REQUIRE(runs == want);
          covered += b.numel();
        }
        REQUIRE(covered == n);
      }
  }
}

TEST_CASE("a checkpoint holds each tensor in its natural shape and restores every shard",
          "[checkpoint]") {
  const std::string strategy = GENERATE(std::string("zero3"), std::string("hybrid"));
  test::SharedTmpDir tmp("fsdp_ckpt_test");
  RunConfig cfg = ckpt_config(strategy, tmp.path);
  cfg.train.steps = 3;
  std::string path;
  Shards saved;
  {
    Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
    t.run();
    path = t.save_checkpoint();  // the step-3 file again: saving twice is harmless
    saved = shards(t.engine());
    // Independent check of the layout: rank 0 reads each dataset whole with serial HDF5 and
    // compares it with the engine's own gathered parameters.
    for (int u = 0; u < int(t.engine().units().size()); ++u) {
      const std::vector<float> full = t.engine().full_params(u);
      if (world_rank() != 0) continue;
      h5::File f{FSDP_H5_ID(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT))};
      for (const TensorSpec& ts : t.engine().units()[u].layout->tensors) {
        h5::Dataset d{FSDP_H5_ID(H5Dopen2(f.get(), ("/model/" + ts.name).c_str(), H5P_DEFAULT))};
        REQUIRE(h5::dims_of(d.get()) == std::vector<hsize_t>(ts.shape.begin(), ts.shape.end()));
        std::vector<float> got(std::size_t(ts.numel));
        FSDP_H5_CHECK(
            H5Dread(d.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, got.data()));
        for (std::int64_t i = 0; i < ts.numel; ++i)
          REQUIRE(got[std::size_t(i)] == full[std::size_t(ts.offset + i)]);
      }
    }
  }
  REQUIRE(fs::path(path).filename() == "step_000003.h5");
  cfg.train.seed = 4242;  // a different initialisation, overwritten by the load
  Trainer r(cfg, MPI_COMM_WORLD, resume_from(path));
  REQUIRE(r.start_step() == 3);
  REQUIRE(r.engine().optimizer_steps() == 3);
  const Shards got = shards(r.engine());
  REQUIRE(got.p == saved.p);
  REQUIRE(got.m == saved.m);
  REQUIRE(got.v == saved.v);
}

TEST_CASE("5 steps, checkpoint, resume, 5 steps equals 10 steps bit for bit", "[checkpoint]") {
  const std::string strategy =
      GENERATE(std::string("ddp"), std::string("zero1"), std::string("zero2"), std::string("zero3"),
               std::string("hybrid"));
  INFO("strategy " << strategy << " ranks " << test::world_size());
  test::SharedTmpDir tmp("fsdp_ckpt_test");
  RunConfig cfg = ckpt_config(strategy, tmp.path + "/a");
  std::vector<double> straight;
  std::vector<std::vector<float>> straight_params;
  {
    Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
    straight = t.run().losses;
    for (int u = 0; u < int(t.engine().units().size()); ++u)
      straight_params.push_back(t.engine().full_params(u));
  }
  cfg.checkpoint.every = 5;
  std::vector<double> with_checkpoints;
  {
    Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
    with_checkpoints = t.run().losses;
  }
  REQUIRE(with_checkpoints == straight);  // writing a checkpoint changes nothing
  cfg.checkpoint.dir = tmp.path + "/b";
  Trainer t(cfg, MPI_COMM_WORLD, resume_from(tmp.path + "/a/step_000005.h5"));
  REQUIRE(t.start_step() == 5);
  const std::vector<double> resumed = t.run().losses;
  REQUIRE(resumed.size() == 5);
  for (int s = 0; s < 5; ++s) {
    INFO("step " << s + 6 << ": " << resumed[s] << " vs " << straight[s + 5]);
    REQUIRE(resumed[std::size_t(s)] == straight[std::size_t(s + 5)]);
  }
  for (int u = 0; u < int(t.engine().units().size()); ++u)
    REQUIRE(t.engine().full_params(u) == straight_params[std::size_t(u)]);
}

TEST_CASE("a checkpoint from N ranks resumes on one rank", "[checkpoint]") {
  const std::string strategy = GENERATE(std::string("zero3"), std::string("ddp"));
  test::SharedTmpDir tmp("fsdp_ckpt_test");
  RunConfig cfg = ckpt_config(strategy, tmp.path);
  cfg.checkpoint.every = 5;
  std::vector<double> straight;
  {
    Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
    straight = t.run().losses;
  }
  // Every rank resumes alone (each its own one-rank job) and writes nothing.
  RunConfig one = cfg;
  one.checkpoint.every = 0;
  one.fsdp.strategy = "zero3";
  one.fsdp.shard_group_size = 0;
  Trainer t(one, MPI_COMM_SELF, resume_from(tmp.path + "/step_000005.h5"));
  const std::vector<double> resumed = t.run().losses;
  for (int s = 0; s < 5; ++s) {
    INFO("step " << s + 6 << ": " << resumed[s] << " vs " << straight[s + 5]);
    REQUIRE(rel(resumed[std::size_t(s)], straight[std::size_t(s + 5)]) < 1e-5);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("a checkpoint resumes with the other unit cut, bit for bit", "[checkpoint]") {
  // The file holds tensors by name, not units: block units save, sub-layer units resume (and
  // the reverse). Without clipping the two cuts compute the same bits (test_engine).
  const std::string strategy = GENERATE(std::string("zero3"), std::string("zero1"));
  const bool to_sublayer = GENERATE(true, false);
  INFO(strategy << (to_sublayer ? " block -> sublayer" : " sublayer -> block") << " ranks "
                << test::world_size());
  test::SharedTmpDir tmp("fsdp_ckpt_test");
  RunConfig cfg = ckpt_config(strategy, tmp.path + "/a");
  cfg.train.grad_clip = 0.0;
  cfg.fsdp.unit = to_sublayer ? "block" : "sublayer";
  cfg.checkpoint.every = 5;
  std::vector<double> straight;
  {
    Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
    straight = t.run().losses;
  }
  cfg.fsdp.unit = to_sublayer ? "sublayer" : "block";
  cfg.checkpoint.dir = tmp.path + "/b";
  Trainer t(cfg, MPI_COMM_WORLD, resume_from(tmp.path + "/a/step_000005.h5"));
  const std::vector<double> resumed = t.run().losses;
  REQUIRE(resumed.size() == 5);
  for (int s = 0; s < 5; ++s) {
    INFO("step " << s + 6 << ": " << resumed[s] << " vs " << straight[s + 5]);
    REQUIRE(resumed[std::size_t(s)] == straight[std::size_t(s + 5)]);
  }
}

TEST_CASE("damaged checkpoints fail on every rank, naming the dataset", "[checkpoint]") {
  test::SharedTmpDir tmp("fsdp_ckpt_test");
  RunConfig cfg = ckpt_config("zero3", tmp.path);
  cfg.checkpoint.every = 5;
  cfg.checkpoint.keep = 3;
  {
    Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
    t.run();
  }
  const std::string good = tmp.path + "/step_000005.h5", bad = tmp.path + "/step_000010.h5";
  const std::string ds = "/optim/exp_avg/h.1.mlp.c_fc.weight";
  if (world_rank() == 0) test::flip_byte(bad, ds, 1234);
  MPI_Barrier(MPI_COMM_WORLD);

  std::string msg;
  try {
    Trainer t(cfg, MPI_COMM_WORLD, resume_from(bad));
  } catch (const CheckpointError& e) {
    msg = e.what();
  }
  INFO(msg);
  REQUIRE(msg.find(bad) != std::string::npos);
  REQUIRE(msg.find(ds) != std::string::npos);
  REQUIRE(msg.find("checksum mismatch") != std::string::npos);
  REQUIRE(broadcast_string(MPI_COMM_WORLD, msg, 0) == msg);  // the same line on every rank

  // auto skips it and takes the previous good one.
  Trainer t(cfg, MPI_COMM_WORLD, resume_from("auto"));
  REQUIRE(t.start_step() == 5);

  // A dataset of the wrong shape.
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) test::reshape_dataset(good, "/model/h.0.ln_1.bias");
  MPI_Barrier(MPI_COMM_WORLD);
  msg.clear();
  try {
    Trainer r(cfg, MPI_COMM_WORLD, resume_from(good));
  } catch (const CheckpointError& e) {
    msg = e.what();
  }
  INFO(msg);
  REQUIRE(msg.find("/model/h.0.ln_1.bias: shape [21]") != std::string::npos);

  // Nothing good left: auto starts fresh from the seed, exactly like a run without --resume.
  Trainer fresh(cfg, MPI_COMM_WORLD, resume_from("auto"));
  REQUIRE(fresh.start_step() == 0);
  Trainer plain(cfg, MPI_COMM_WORLD, test::quiet());
  REQUIRE(shards(fresh.engine()).p == shards(plain.engine()).p);
}

namespace {

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("an asynchronous checkpoint is the synchronous file, byte for byte", "[checkpoint]") {
  // Both saves of the same state from one run: the synchronous one, then the background one,
  // whose live shards are overwritten with NaN right after staging: the file holds the staged
  // copy, not what training does meanwhile. The second checkpointer continues the first's run
  // (adopt_run), so even the run id attribute is the same.
  const std::string strategy =
      GENERATE(std::string("zero3"), std::string("ddp"), std::string("hybrid"));
  INFO(strategy);
  REQUIRE(AsyncCheckpointer::available());  // the tests' MPI provides MPI_THREAD_MULTIPLE
  test::SharedTmpDir tmp("fsdp_ckpt_test");
  RunConfig cfg = ckpt_config(strategy, tmp.path + "/sync");
  cfg.train.steps = 3;
  cfg.resolved_toml = "# the same deck recorded in both files\n";
  Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
  t.run();
  ckpt::Header h;
  h.step = 3;
  h.tokens_seen = 123;
  h.sampler_seed = cfg.train.seed;
  h.optimizer_steps = t.engine().optimizer_steps();
  h.lr_step = 3;
  h.lr = 1e-3;
  Checkpointer sync(MPI_COMM_WORLD, checkpoint_run(cfg), Checkpointer::Use::Write);
  const std::string a = sync.save(t.engine().state(), h);

  RunConfig other = cfg;
  other.checkpoint.dir = tmp.path + "/async";
  Checkpointer ck(MPI_COMM_WORLD, checkpoint_run(other), Checkpointer::Use::Write);
  ck.adopt_run(sync.run_id(), "");
  std::string b;
  {
    AsyncCheckpointer async(ck, t.tracker(), false, 0);
    const AsyncCheckpointer::Started s = async.save(t.engine().state(), h);
    CHECK(s.staged_s >= 0.0);
    for (int u = 0; u < int(t.engine().units().size()); ++u) {  // training goes on
      t.engine().param_shard(u).fill(std::nanf(""));
      t.engine().exp_avg_shard(u).fill(std::nanf(""));
    }
    b = async.wait().path;
    // The planner counts the staging as the tracker does.
    const plan::MemoryPlan p = plan::plan_memory([&] {
      RunConfig c = cfg;
      c.checkpoint.every = 3;
      return plan::setup_from_config(c, test::world_size(), 1, kernels::gemm_bf16_computes());
    }());
    const std::int64_t mine = t.tracker().peak(MemCategory::CheckpointStaging, MemSpace::Host);
    std::int64_t most = 0;
    MPI_Allreduce(&mine, &most, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    CHECK(p.host(MemCategory::CheckpointStaging) == most);
    CHECK(most > 0);
  }
  REQUIRE(fs::path(b).filename() == fs::path(a).filename());
  if (world_rank() == 0) {
    const std::vector<char> x = file_bytes(a), y = file_bytes(b);
    REQUIRE(x.size() > 10000);
    REQUIRE(x == y);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}
