// SPDX-License-Identifier: MIT
// The model seam is real: a second architecture, written and registered here in the test and
// nowhere in src/, trains through the unchanged engine (zero3 and ddp at np 1..3, against a
// one-rank run of the same job), checkpoints and resumes bit for bit, is planned byte for byte
// as the tracker measures it, exports to a Hugging Face directory that reads back, and a GPT-2
// deck refuses its checkpoint naming both architectures.
//
// The toy is a residual tanh MLP over token embeddings with an untied LM head that is a unit of
// its own (as torchtitan groups [norm, output]): units [tok, mix.0 .. mix.{L-1}, head]. It
// exercises what GPT-2 does not: a head unit other than unit 0, whose body stages do nothing.
//
// Its second form (toy_parts) has units made of two parts on different groups: each mix unit
// adds an output matrix, x + tanh(x W) V, and V and the head are in a placement sharded over half
// the shard group (at np 4 zero3: W over all 4 ranks, V over 2 with a replica of 2). It trains
// with zero3, hybrid and ddp in deterministic mode to the same bits as one rank, checkpoints, resumes
// at np 2 bitwise, is planned byte for byte, offloads to host memory and to a file, gathers and
// reduces in bf16, and a rank count the split cannot divide is refused.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "comm/agree.hpp"
#include "engine_fixture.hpp"
#include "io/checkpoint_format.hpp"
#include "io/h5_io.hpp"
#include "io/hf_export.hpp"
#include "io/weight_source.hpp"
#include "model/architecture.hpp"
#include "model/counter_init.hpp"
#include "model/cross_entropy.hpp"
#include "model/gemm/bf16_gemm.hpp"
#include "model/gemm/gemm.hpp"
#include "plan/memory_model.hpp"

using namespace fsdp;
namespace fs = std::filesystem;

namespace {

constexpr const char* kToy = "toy_mlp";
constexpr const char* kToyParts = "toy_parts";  // the two-part form
constexpr int kHalf = 1;                         // its placement over half the shard group

std::vector<UnitLayout> toy_units(const ModelConfig& m, bool parts) {
  const std::int64_t C = m.n_embd, V = m.vocab_size;
  std::vector<UnitLayout> units(std::size_t(m.n_layer) + 2);
  units[0].name = "tok";
  add_tensor(units[0], "tok.weight", {V, C}, true, false);  // a lookup table, not a GEMM
  for (int l = 0; l < m.n_layer; ++l) {
    UnitLayout& u = units[std::size_t(l) + 1];
    u.name = "mix." + std::to_string(l);
    u.layer = l;
    if (parts) add_tensor(u, u.name + ".out", {C, C}, true, true, kHalf);  // listed first on purpose
    add_tensor(u, u.name + ".weight", {C, C}, true, true);
  }
  units.back().name = "head";
  add_tensor(units.back(), "head.weight", {C, V}, true, true, parts ? kHalf : 0);
  return units;
}

// Activations: the residual streams x_0..x_L, the tanh outputs t_0..t_{L-1}, logits, losses,
// and two backward scratch streams.
std::int64_t toy_activations(const ModelConfig& m, const ModelChoices&, int B) {
  const std::int64_t BT = std::int64_t(B) * m.block_size, BTC = BT * m.n_embd;
  return (m.n_layer + 1) * BTC + m.n_layer * BTC + BT * m.vocab_size + BT + 2 * BTC;
}

class ToyModel final : public Decoder {
 public:
  // units: where the engine placed the tensors (the two-part form's offsets move).
  ToyModel(const ModelConfig& m, std::vector<UnitLayout> units, bool parts, int B,
           MemoryTracker& tracker, const ParallelContext* parallel)
      : cfg_(m), units_(std::move(units)), parts_(parts), B_(B), T_(m.block_size), C_(m.n_embd),
        V_(m.vocab_size), L_(m.n_layer), parallel_(parallel) {
    const std::int64_t BT = std::int64_t(B_) * T_, BTC = BT * C_;
    inputs_ = TokenView("toy::inputs", BT);
    targets_ = TokenView("toy::targets", BT);
    for (int l = 0; l <= L_; ++l)
      x_.emplace_back(tracker, "toy::x" + std::to_string(l), BTC, MemCategory::Activations);
    for (int l = 0; l < L_; ++l)
      t_.emplace_back(tracker, "toy::t" + std::to_string(l), BTC, MemCategory::Activations);
    logits_ = TrackedBuffer(tracker, "toy::logits", BT * V_, MemCategory::Activations);
    losses_ = TrackedBuffer(tracker, "toy::losses", BT, MemCategory::Activations);
    dx_ = TrackedBuffer(tracker, "toy::dx", BTC, MemCategory::Activations);
    dt_ = TrackedBuffer(tracker, "toy::dt", BTC, MemCategory::Activations);
  }

  const ModelConfig& config() const override { return cfg_; }
  const std::vector<UnitLayout>& units() const override { return units_; }
  int micro_batch() const override { return B_; }
  const ParallelContext* parallel() const { return parallel_; }
  // Each mix unit's one or two [C, C] products; the head's [C, V].
  std::vector<UnitFlops> unit_flops() const override {
    const double tok = double(B_) * T_, C = C_;
    std::vector<UnitFlops> f(std::size_t(L_) + 2);
    const double k = parts_ ? 2 : 1;  // matrices per mix unit
    for (int l = 1; l <= L_; ++l) f[std::size_t(l)] = {k * 2 * C * C * tok, k * 4 * C * C * tok, 0};
    return f;
  }
  UnitFlops head_flops() const override {
    const double x = 2.0 * C_ * V_ * double(B_) * T_;
    return UnitFlops{x, 2 * x, 0};
  }

  // The layout overload stays the base's (which refuses packed documents); named here so that
  // overriding one overload does not hide the other (nvcc warning #611-D).
  using Decoder::set_batch;
  void set_batch(const std::int32_t* inputs, const std::int32_t* targets) override {
    const std::size_t BT = std::size_t(B_) * T_;
    Kokkos::deep_copy(inputs_, HostConstTokens(inputs, BT));
    Kokkos::deep_copy(targets_, HostConstTokens(targets, BT));
  }

  void forward_unit(int u, const UnitParams& p) override {
    const int BT = B_ * T_, C = C_;
    if (u == 0) {  // x_0 = tok[inputs]
      const ConstMat tok = p.table(0, V_, C);
      const Mat x = mat(x_[0]);
      const ConstTokens in = inputs_;
      Kokkos::parallel_for(
          "toy::embed", Kokkos::RangePolicy<ExecSpace>(0, BT), KOKKOS_LAMBDA(const int bt) {
            for (int c = 0; c < C; ++c) x(bt, c) = tok(in(bt), c);
          });
    } else if (u <= L_) {  // x_{l+1} = x_l + tanh(x_l W) (two parts: x_l + tanh(x_l W) V)
      const int l = u - 1;
      const Mat t = mat(t_[std::size_t(l)]), next = mat(x_[std::size_t(l) + 1]);
      const ConstMat x = mat(x_[std::size_t(l)]);
      kernels::gemm("N", "N", 1.f, x, p.weight(off(u, ".weight"), C, C), 0.f, t);
      const bool plain = !parts_;
      Kokkos::parallel_for(
          "toy::mix", Kokkos::RangePolicy<ExecSpace>(0, BT), KOKKOS_LAMBDA(const int bt) {
            for (int c = 0; c < C; ++c) {
              t(bt, c) = std::tanh(t(bt, c));
              next(bt, c) = x(bt, c) + (plain ? t(bt, c) : 0.f);
            }
          });
      if (parts_) kernels::gemm("N", "N", 1.f, t, p.weight(off(u, ".out"), C, C), 1.f, next);
    }  // the head unit's body: nothing (its tensor is the head's)
  }

  double head_forward(const UnitParams& p) override {
    const int BT = B_ * T_;
    kernels::gemm("N", "N", 1.f, mat(x_[std::size_t(L_)]), p.weight(off(L_ + 1, "head.weight"), C_, V_),
                  0.f, Mat(logits_.data(), BT, V_));
    kernels::cross_entropy_forward(losses_.vec(), ConstMat(logits_.data(), BT, V_), targets_);
    auto host = Kokkos::create_mirror_view_and_copy(HostSpace(), losses_.vec());
    seq_.assign(std::size_t(B_), 0.0);
    double sum = 0.0;
    for (int b = 0; b < B_; ++b) {
      double s = 0.0;
      for (int t = 0; t < T_; ++t) s += host(b * T_ + t);
      seq_[std::size_t(b)] = s / T_;
      sum += s;
    }
    return sum / BT;
  }

  void head_backward(const UnitParams& p, Vec grad, float dloss) override {
    const int BT = B_ * T_;
    const Mat dlogits(logits_.data(), BT, V_);
    kernels::cross_entropy_backward(dlogits, targets_, dloss / BT);
    const std::int64_t h = off(L_ + 1, "head.weight");
    kernels::gemm("T", "N", 1.f, mat(x_[std::size_t(L_)]), dlogits, 1.f,
                  Mat(grad.data() + h, C_, V_));
    kernels::gemm("N", "T", 1.f, dlogits, p.weight(h, C_, V_), 0.f, mat(dx_));
  }

  void backward_unit(int u, const UnitParams& p, Vec grad) override {
    const int BT = B_ * T_, C = C_;
    if (u == 0) {  // tok[inputs] += dx, channels in parallel, tokens in order (no atomics)
      const Mat dtok(grad.data(), V_, C);
      const ConstMat dx = mat(dx_);
      const ConstTokens in = inputs_;
      Kokkos::parallel_for(
          "toy::embed_backward", Kokkos::RangePolicy<ExecSpace>(0, C), KOKKOS_LAMBDA(const int c) {
            for (int bt = 0; bt < BT; ++bt) dtok(in(bt), c) += dx(bt, c);
          });
    } else if (u <= L_) {  // dt = dx (1 - t^2); dW += x^T dt; dx += dt W^T
      // Two parts: dV += t^T dx and the tanh's gradient is dx V^T (1 - t^2).
      const int l = u - 1;
      const ConstMat t = mat(t_[std::size_t(l)]);
      const Mat dx = mat(dx_), dt = mat(dt_);
      const bool plain = !parts_;
      if (parts_) {
        const std::int64_t v = off(u, ".out");
        kernels::gemm("T", "N", 1.f, t, dx, 1.f, Mat(grad.data() + v, C, C));
        kernels::gemm("N", "T", 1.f, dx, p.weight(v, C, C), 0.f, dt);
      }
      Kokkos::parallel_for(
          "toy::mix_backward", Kokkos::RangePolicy<ExecSpace>(0, BT), KOKKOS_LAMBDA(const int bt) {
            for (int c = 0; c < C; ++c)
              dt(bt, c) = (plain ? dx(bt, c) : dt(bt, c)) * (1.f - t(bt, c) * t(bt, c));
          });
      const std::int64_t w = off(u, ".weight");
      kernels::gemm("T", "N", 1.f, mat(x_[std::size_t(l)]), dt, 1.f, Mat(grad.data() + w, C, C));
      kernels::gemm("N", "T", 1.f, dt, p.weight(w, C, C), 1.f, dx);
    }
  }

  const std::vector<double>& sequence_losses() const override { return seq_; }
  std::vector<float> logits_at(int b, int t) const override {
    std::vector<float> out(static_cast<std::size_t>(V_));
    const ConstVec row(logits_.data() + (std::int64_t(b) * T_ + t) * V_, std::size_t(V_));
    Kokkos::deep_copy(HostVec(out.data(), out.size()), row);
    return out;
  }
  void use_bf16_gemms(MemoryTracker&) override {
    throw std::invalid_argument("the toy architecture has no bf16 GEMMs");
  }

 private:
  Mat mat(const TrackedBuffer& b) const { return Mat(b.data(), std::int64_t(B_) * T_, C_); }
  std::int64_t off(int u, const std::string& suffix) const {
    return units_[std::size_t(u)].tensor(suffix).offset;
  }

  ModelConfig cfg_;
  std::vector<UnitLayout> units_;
  bool parts_;
  int B_, T_, C_, V_, L_;
  const ParallelContext* parallel_;  // what the engine built it with
  TokenView inputs_, targets_;
  std::vector<TrackedBuffer> x_, t_;
  TrackedBuffer logits_, losses_, dx_, dt_;
  std::vector<double> seq_;
};

Architecture toy_architecture(bool parts = false) {
  Architecture a;
  a.name = parts ? kToyParts : kToy;
  a.family = "toy MLP";
  a.units = [parts](const ModelConfig& m, const ModelChoices&) { return toy_units(m, parts); };
  if (parts) a.placements = {{"dense", 1}, {"half", 2}};
  a.init_unit = [](const ModelConfig&, const UnitLayout& u, float* full, std::uint64_t seed) {
    for (const TensorSpec& t : u.tensors) {
      const std::uint64_t s = tensor_stream(seed, t.name);
      const float std = t.name == "tok.weight" ? 1.0f : 0.1f;
      for (std::int64_t i = 0; i < t.numel; ++i) full[t.offset + i] = std * normal_at(s, i);
    }
  };
  a.head_unit = [](const ModelConfig& m, const ModelChoices&) { return m.n_layer + 1; };
  a.build = [parts](const ModelConfig& m, const DecoderOptions& o, MemoryTracker& tracker) {
    return std::unique_ptr<Decoder>(std::make_unique<ToyModel>(
        m, o.units_or(toy_units(m, parts)), parts, o.micro_batch, tracker, o.parallel));
  };
  a.activation_elements = toy_activations;
  a.bf16_scratch_elements = [](const ModelConfig&, int) { return std::int64_t(0); };
  a.flops_per_token = [parts](const ModelConfig& m) {
    return 6.0 * ((parts ? 2.0 : 1.0) * m.n_layer * m.n_embd * m.n_embd +
                  double(m.n_embd) * m.vocab_size);
  };
  a.flops_formula = "6 (L C^2 + C V)";
  a.recompute_formula = "nothing";
  a.hf.architectures = "ToyMlpForCausalLM";
  a.hf.config_json = [](const ModelConfig& m, const std::string& dtype) {
    return nlohmann::ordered_json{{"architectures", {"ToyMlpForCausalLM"}},
                                  {"model_type", "toy_mlp"},
                                  {"num_hidden_layers", m.n_layer},
                                  {"hidden_size", m.n_embd},
                                  {"vocab_size", m.vocab_size},
                                  {"torch_dtype", dtype}}
               .dump(2);
  };
  a.hf.recognizes = [parts](const TensorShapes& t) {
    return t("tok.weight") != nullptr && (t("mix.0.out") != nullptr) == parts;
  };
  a.hf.read_shape = [parts](const TensorShapes& t, const std::string& file,
                            const nlohmann::json*, const std::string&) {
    const auto* tok = t("tok.weight");
    if (!tok || tok->size() != 2) throw std::invalid_argument(file + ": tok.weight: missing");
    ModelConfig m;
    m.arch = parts ? kToyParts : kToy;
    m.n_head = 0;
    m.vocab_size = int((*tok)[0]);
    m.n_embd = int((*tok)[1]);
    m.n_layer = 0;
    while (t("mix." + std::to_string(m.n_layer) + ".weight")) ++m.n_layer;
    m.n_positions = 0;  // no position table: any context
    return m;
  };
  a.hf.stored_names = [](const std::string& name) { return std::vector<std::string>{name}; };
  return a;
}

RunConfig toy_config(const std::string& strategy, const std::string& dir) {
  RunConfig c = test::tiny_config(strategy, 1);
  c.model.arch = kToy;
  c.model.n_layer = 2;
  c.model.n_head = 1;
  c.model.n_embd = 12;  // units of 3072, 144, 144 and 3072 parameters
  c.train.steps = 6;
  c.train.lr = 3e-2;
  c.checkpoint.dir = dir;
  return c;
}

int rank_of(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}

std::string shared_tmp_dir() {
  std::string p;
  if (rank_of(MPI_COMM_WORLD) == 0) {
    char tmpl[] = "/tmp/fsdp_toy_test_XXXXXX";
    p = ::mkdtemp(tmpl);
  }
  return broadcast_string(MPI_COMM_WORLD, p, 0);
}

double rel(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-30); }

// The one-line reason a run of cfg on every rank refuses to start ("" if it starts).
std::string setup_error(const RunConfig& cfg, const TrainOptions& o) {
  try {
    Trainer t(cfg, MPI_COMM_WORLD, o);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// The planner, from the architecture's counts and the run's parts, byte for byte against the
// tracker of a run of cfg on N ranks.
void check_plan(const RunConfig& cfg, int N, Trainer& t) {
  const plan::MemoryPlan p =
      plan::plan_memory(plan::setup_from_config(cfg, N, 1, kernels::gemm_bf16_computes()));
  const MemoryTracker& m = t.tracker();
  REQUIRE(p.padded_params == t.engine().padded_params());
  for (int ci = 0; ci < kNumMemCategories; ++ci) {
    INFO("category " << to_string(MemCategory(ci)));
    CHECK(p.device(MemCategory(ci)) == m.peak(MemCategory(ci), MemSpace::Device));
    CHECK(p.host(MemCategory(ci)) == m.peak(MemCategory(ci), MemSpace::Host));
  }
  CHECK(p.device_total() == m.peak_total(MemSpace::Device));
}

}  // namespace

TEST_CASE("a second architecture trains, checkpoints, resumes and plans through the seam",
          "[arch]") {
  register_architecture(toy_architecture());
  const int N = test::world_size();
  const std::string tmp = shared_tmp_dir();

  // The one-rank run of the same job, on every rank alone: the reference for any N.
  std::vector<double> single;
  {
    RunConfig c = toy_config("zero3", tmp + "/self" + std::to_string(rank_of(MPI_COMM_WORLD)));
    Trainer t(c, MPI_COMM_SELF, test::quiet());
    single = t.run().losses;
  }
  REQUIRE(single.size() == 6);
  CHECK(single.back() < single.front() - 0.1);  // it learns

  for (const char* strategy : {"zero3", "ddp"}) {
    INFO(strategy << " on " << N << " rank(s)");
    const std::string dir = tmp + "/" + strategy;
    RunConfig cfg = toy_config(strategy, dir + "/straight");
    std::vector<double> straight;
    {
      Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
      straight = t.run().losses;
      check_plan(cfg, N, t);
    }
    REQUIRE(straight.size() == 6);
    for (std::size_t s = 0; s < straight.size(); ++s) {
      INFO("step " << s + 1 << ": " << straight[s] << " against one rank's " << single[s]);
      CHECK(rel(straight[s], single[s]) < 1e-5);  // reduction order differs, fp32 rounding
    }

    // 3 steps and a checkpoint, then --resume auto to 6: the same losses, bit for bit.
    cfg.checkpoint.dir = dir + "/split";
    cfg.checkpoint.every = 3;
    cfg.train.steps = 3;
    { Trainer(cfg, MPI_COMM_WORLD, test::quiet()).run(); }
    cfg.train.steps = 6;
    TrainOptions o = test::quiet();
    o.resume = "auto";
    Trainer resumed(cfg, MPI_COMM_WORLD, o);
    REQUIRE(resumed.start_step() == 3);
    const std::vector<double> rest = resumed.run().losses;
    REQUIRE(rest == std::vector<double>(straight.begin() + 3, straight.end()));
  }

  const std::string ckpt = tmp + "/zero3/split/step_000003.h5";
  {  // the checkpoint names its architecture, and a GPT-2 deck refuses it
    if (rank_of(MPI_COMM_WORLD) == 0) {
      h5::File f{FSDP_H5_ID(H5Fopen(ckpt.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT))};
      CHECK(ckpt::read_header(f.get()).model.arch == kToy);
    }
    RunConfig gpt = test::tiny_config("zero3", 1);
    gpt.checkpoint.dir = tmp + "/gpt";
    gpt.model.n_layer = 2;
    gpt.model.n_embd = 12;
    gpt.model.n_head = 1;
    TrainOptions o = test::quiet();
    o.resume = ckpt;
    const std::string error = setup_error(gpt, o);
    INFO(error);
    CHECK(error.find("arch toy_mlp (this run: gpt2)") != std::string::npos);
  }
  {  // Hugging Face export writes the architecture's form, and it reads back
    const std::string hf = tmp + "/hf";
    REQUIRE(ckpt::export_hf(MPI_COMM_WORLD, ckpt, hf, weights::DType::F32) == 0);
    const auto src = weights::open_weights(hf);
    CHECK(src->shape().arch == kToy);
    CHECK(src->shape().n_layer == 2);
    RunConfig cfg = toy_config("zero3", tmp + "/again");
    cfg.train.steps = 3;
    cfg.checkpoint.every = 3;
    TrainOptions o = test::quiet();
    o.resume = ckpt;
    Trainer t(cfg, MPI_COMM_WORLD, o);
    const std::vector<UnitLayout> units = model_units(cfg.model);
    src->check(units);
    for (std::size_t u = 0; u < units.size(); ++u) {
      const std::vector<float> want = t.engine().full_params(int(u));
      std::vector<float> got(want.size());
      for (const TensorSpec& ts : units[u].tensors)
        src->read(ts, 0, ts.numel, got.data() + ts.offset);
      INFO("unit " << units[u].name);
      CHECK(got == want);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank_of(MPI_COMM_WORLD) == 0) fs::remove_all(tmp);
}

TEST_CASE("units of two parts on different groups train, checkpoint, resume at np 2 and plan",
          "[arch][parts]") {
  register_architecture(toy_architecture(/*parts=*/true));
  const int N = test::world_size(), me = rank_of(MPI_COMM_WORLD);
  const std::string tmp = shared_tmp_dir();
  const auto config = [&](const std::string& strategy, const std::string& dir) {
    RunConfig c = toy_config(strategy, dir);
    c.model.arch = kToyParts;
    c.train.deterministic = true;  // the same bits at any N: one rank is the reference
    c.fsdp.shard_group_size = strategy == "hybrid" ? std::max(1, N / 2) : 0;
    return c;
  };

  {  // zero1 keeps full parameters, whose shard is one range: refused naming the parts
    const std::string error = setup_error(config("zero1", tmp + "/zero1"), test::quiet());
    INFO(error);
    CHECK(error.find("places its tensors in 2 parts") != std::string::npos);
  }
  if (N == 3) {  // half of a shard group of 3: refused with the placement named, before a step
    const std::string error = setup_error(config("zero3", tmp + "/three"), test::quiet());
    INFO(error);
    CHECK(error.find("its 'half' tensors are sharded over 1/2 of the shard group") !=
          std::string::npos);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) fs::remove_all(tmp);
    return;
  }

  std::vector<double> single;
  {
    Trainer t(config("zero3", tmp + "/self" + std::to_string(me)), MPI_COMM_SELF, test::quiet());
    single = t.run().losses;
  }
  REQUIRE(single.size() == 6);
  CHECK(single.back() < single.front() - 0.1);  // it learns

  for (const char* strategy : {"zero3", "hybrid", "ddp"}) {
    INFO(strategy << " on " << N << " rank(s)");
    const std::string dir = tmp + "/" + strategy;
    RunConfig cfg = config(strategy, dir + "/straight");
    std::vector<double> straight;
    {
      Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
      // Each mix unit: W over the whole shard group, V over half of it with twice the replicas.
      const ShardedUnit& mix = t.engine().units()[1];
      const int S = t.engine().shard_group_size();
      REQUIRE(mix.parts.size() == 2);
      CHECK(mix.parts[0].shard_comm->size() == S);
      CHECK(mix.parts[0].replicate_comm->size() == N / S);
      CHECK(mix.parts[1].shard_comm->size() == std::max(1, S / 2));
      CHECK(mix.parts[1].replicate_comm->size() == N / std::max(1, S / 2));
      CHECK(mix.layout->tensor(".weight").offset == 0);  // the dense part first, then V's
      CHECK(mix.layout->tensor(".out").offset == mix.parts[1].part.base);
      // The model was built with the run's groups: a collective of its own lines up with them.
      const auto& model = dynamic_cast<const ToyModel&>(t.engine().model());
      REQUIRE(model.parallel());
      CHECK(model.parallel()->mesh->world().all_reduce_sum(1.0) == double(N));
      CHECK(&model.parallel()->mesh->group(t.engine().setup().part_groups(kHalf).shard) ==
            mix.parts[1].shard_comm);
      straight = t.run().losses;
      check_plan(cfg, N, t);
    }
    CHECK(straight == single);  // deterministic mode: one rank's bits

    // 3 steps and a checkpoint at N, then the rest on the first two ranks: the same bits.
    cfg.checkpoint.dir = dir + "/split";
    cfg.checkpoint.every = 3;
    cfg.train.steps = 3;
    { Trainer(cfg, MPI_COMM_WORLD, test::quiet()).run(); }
    MPI_Comm two = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, me < 2 ? 0 : MPI_UNDEFINED, me, &two);
    if (two != MPI_COMM_NULL) {
      RunConfig again = cfg;
      again.train.steps = 6;
      again.fsdp.shard_group_size = std::string(strategy) == "hybrid" ? 1 : 0;
      TrainOptions o = test::quiet();
      o.resume = "auto";
      std::vector<double> rest;
      {
        Trainer resumed(again, two, o);
        REQUIRE(resumed.start_step() == 3);
        rest = resumed.run().losses;
      }
      CHECK(rest == std::vector<double>(straight.begin() + 3, straight.end()));
      MPI_Comm_free(&two);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }

  {  // bf16: each part's slice is cast and gathered as bf16, its gradients reduced as bf16
    const auto bf16 = [&](RunConfig c) {
      c.fsdp.mixed_precision = "bf16";
      c.fsdp.reduce_dtype = "bf16";
      c.fsdp.gemm_dtype = "fp32";  // the toy's GEMMs widen the weights
      return c;
    };
    std::vector<double> alone;
    {
      Trainer t(bf16(config("zero3", tmp + "/bf16_self" + std::to_string(me))), MPI_COMM_SELF,
                test::quiet());
      alone = t.run().losses;
    }
    for (const char* strategy : {"zero3", "hybrid"}) {
      INFO("bf16 " << strategy << " on " << N << " rank(s)");
      RunConfig cfg = bf16(config(strategy, tmp + "/bf16_" + strategy));
      Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
      CHECK(t.run().losses == alone);
    }
  }

  // Offloaded to host memory and to a file: each part's slices travel through them alike.
  for (const char* offload : {"params", "nvme"}) {
    INFO("fsdp.offload = " << offload << " on " << N << " rank(s)");
    RunConfig cfg = config("zero3", tmp + "/offload_" + offload);
    cfg.fsdp.offload = offload;
    if (std::string(offload) == "nvme") {
      cfg.offload.path = tmp + "/nvme";
      cfg.offload.params = true;
      if (me == 0) fs::create_directories(cfg.offload.path);
      MPI_Barrier(MPI_COMM_WORLD);
    }
    Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
    CHECK(t.run().losses == single);
    check_plan(cfg, N, t);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) fs::remove_all(tmp);
}
