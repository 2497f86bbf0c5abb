// SPDX-License-Identifier: MIT
// (Over 400 lines: one test file per module under test, as the other areas have.)
// The planner (src/plan): its unit sizes and activation buffers against the model's own
// layout and allocations, the ZeRO formulas, the two published checks (the ZeRO paper's
// model-state table and PyTorch FSDP's GPT-175B throughput), the time model's arithmetic, the
// machine file, and the largest-model search. The comparison with real runs' memory tracker
// is the MPI test test_plan_vs_tracker.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>

#include "model/architecture.hpp"
#include "model/decoder.hpp"
#include "plan/counted_step.hpp"
#include "plan/machine.hpp"
#include "plan/memory_model.hpp"
#include "plan/published_checks.hpp"
#include "plan/time_model.hpp"

using namespace fsdp;
using namespace fsdp::plan;
using C = MemCategory;

namespace {

ModelConfig shape(int L, int H, int Cc, int V, int T, int pos = 0) {
  ModelConfig s;
  s.n_layer = L;
  s.n_head = H;
  s.n_embd = Cc;
  s.vocab_size = V;
  s.block_size = T;
  s.n_positions = pos;
  return s;
}

const ModelConfig kGpt2Small = shape(12, 12, 768, 50257, 1024);
const ModelConfig kGpt175B = gpt3_175b_shape();

// A one-node CPU machine: GEMM 100 GFLOP/s, 10 GB/s collectives, memory at mem_bandwidth.
Machine small_cpu(double mem_bandwidth) {
  return machine_from_json_text(R"({"gemm_flops_per_rank": 1e11,
      "intra_node_allgather_busbw": 1e10, "intra_node_reducescatter_busbw": 1e10,
      "latency_s": 1e-6, "mem_bandwidth": )" + std::to_string(mem_bandwidth) + "}");
}

}  // namespace

TEST_CASE("planner unit sizes are GPT-2's, in closed form", "[plan]") {
  // Independent of the layout code: embedding V*C + positions*C, block 12C^2 + 13C (attention
  // 4C^2 + 6C, then MLP 8C^2 + 7C as sub-layer units), ln_f 2C.
  for (ModelConfig s :
       {shape(2, 2, 20, 256, 8), kGpt2Small, shape(3, 4, 64, 1000, 32, 128), shape(1, 1, 8, 11, 6)})
    for (bool sub : {false, true}) {
      ModelChoices cut;
      cut.sublayer_units = sub;
      const std::int64_t C = s.n_embd;
      std::vector<std::int64_t> want{std::int64_t(s.vocab_size) * C + std::int64_t(s.positions()) * C};
      for (int l = 0; l < s.n_layer; ++l) {
        if (sub) {
          want.push_back(4 * C * C + 6 * C);
          want.push_back(8 * C * C + 7 * C);
        } else {
          want.push_back(12 * C * C + 13 * C);
        }
      }
      want.push_back(2 * C);
      REQUIRE(unit_numels(s, cut) == want);
      std::int64_t total = 0;
      for (std::int64_t n : want) total += n;
      REQUIRE(num_params(s) == total);
    }
  REQUIRE(num_params(kGpt2Small) == 124439808);  // GPT-2 small
}

TEST_CASE("planned activations are what the GPT-2 model allocates", "[plan]") {
  for (ModelConfig s : {shape(2, 2, 20, 256, 8), shape(3, 4, 32, 97, 16, 40)})
    for (int B : {1, 3})
      for (const char* ckpt : {"none", "blocks"})
        for (bool sub : {false, true})
          for (bool fused : {false, true}) {
            MemoryTracker tracker;
            DecoderOptions o;
            o.micro_batch = B;
            o.choices.sublayer_units = sub;
            o.choices.attention = fused ? "fused" : "materialized";
            o.choices.checkpoint_blocks = std::string(ckpt) == "blocks";
            const auto model = architecture_of(s).build(s, o, tracker);
            INFO("L=" << s.n_layer << " B=" << B << " ckpt=" << ckpt << " sublayer=" << sub
                      << " fused=" << fused);
            REQUIRE(tracker.current(C::Activations) == 4 * activation_elements(s, o.choices, B));
            REQUIRE(tracker.current_total() == tracker.current(C::Activations));
          }
}

TEST_CASE("planned activations are what the Llama and Qwen3 models allocate", "[plan]") {
  for (const char* arch : {"llama", "qwen3"})
    for (int B : {1, 3})
      for (const char* ckpt : {"none", "blocks"})
        for (bool sub : {false, true})
          for (bool fused : {false, true}) {
            ModelConfig m = shape(3, 4, 32, 97, 16, 40);
            m.arch = arch;
            m.n_kv_head = 2;
            m.ffn_hidden = 56;
            m.tie_embeddings = false;
            if (std::string(arch) == "qwen3") m.head_size = 12;
            MemoryTracker tracker;
            DecoderOptions o;
            o.micro_batch = B;
            o.choices.sublayer_units = sub;
            o.choices.attention = fused ? "fused" : "materialized";
            o.choices.checkpoint_blocks = std::string(ckpt) == "blocks";
            const auto model = architecture_of(m).build(m, o, tracker);
            INFO(arch << " B=" << B << " ckpt=" << ckpt << " sublayer=" << sub << " fused=" << fused);
            REQUIRE(tracker.current(C::Activations) == 4 * activation_elements(m, o.choices, B));
          }
}

TEST_CASE("fp32 plans meet the ZeRO formulas at any rank count", "[plan]") {
  for (int N : {1, 3, 8, 64, 1000}) {
    Setup s;
    s.model = kGpt2Small;
    s.ranks = N;
    s.nodes = 1;
    s.prefetch = 1;
    Setup d = s;
    d.strategy = Strategy::DDP;
    const MemoryPlan ddp = plan_memory(d);
    const std::int64_t P = ddp.padded_params;
    REQUIRE(P == num_params(kGpt2Small));  // no padding without sharding
    REQUIRE(ddp.device(C::ParamShard) == 4 * P);
    REQUIRE(ddp.device(C::Grads) == 4 * P);
    REQUIRE(ddp.device(C::OptimizerState) == 8 * P);
    REQUIRE(ddp.device(C::GatheredParams) == 0);
    REQUIRE(ddp.device(C::CommBuffers) == 0);

    s.strategy = Strategy::Zero1;
    const MemoryPlan z1 = plan_memory(s);
    const std::int64_t Pn = z1.padded_params;  // padded per unit to a multiple of N
    REQUIRE(Pn % N == 0);
    REQUIRE(Pn - P < std::int64_t(N) * 14);
    REQUIRE(z1.device(C::ParamShard) + z1.device(C::Grads) == 8 * Pn);
    REQUIRE(z1.device(C::OptimizerState) == 8 * Pn / N);

    s.strategy = Strategy::Zero3;
    const MemoryPlan z3 = plan_memory(s);
    INFO("N = " << N);
    REQUIRE(z3.device(C::ParamShard) == 4 * Pn / N);
    REQUIRE(z3.device(C::OptimizerState) == 8 * Pn / N);
    REQUIRE(z3.device(C::GatheredParams) <= 4 * 2 * z3.largest_unit);
    REQUIRE(z3.device(C::GatheredParams) >= 4 * z3.largest_unit);
    // The closed form (unpadded, no transient buffers) is the persistent part.
    const double closed = zero_model_state_bytes(double(P), N, Strategy::Zero3, fp32_adamw());
    const double persistent = double(z3.device(C::ParamShard) + z3.device(C::OptimizerState) + 4 * Pn / N);
    REQUIRE(persistent == Approx(closed).epsilon(1e-3));
  }
}

TEST_CASE("ZeRO paper: 7.5B parameters on 64 GPUs, mixed-precision Adam", "[plan][paper]") {
  // Rajbhandari et al. 2020, Figure 1 / Table 1: model states of 120, 31.4, 16.6 and 1.9 GB
  // per GPU for DDP and stages 1, 2 and 3 (K = 12, fp16 params and grads, GB = 1e9).
  const double psi = 7.5e9;
  const int N = 64;
  const ModelStateBytes paper = paper_mixed_precision();
  REQUIRE(paper.param == 2.0);
  REQUIRE(paper.grad == 2.0);
  REQUIRE(paper.optimizer_k == 12.0);
  auto gb = [&](Strategy s) { return zero_model_state_bytes(psi, N, s, paper) / 1e9; };
  CHECK(gb(Strategy::DDP) == Approx(120.0).margin(0.05));
  CHECK(gb(Strategy::Zero1) == Approx(31.4).margin(0.05));
  CHECK(gb(Strategy::Zero2) == Approx(16.6).margin(0.05));
  CHECK(gb(Strategy::Zero3) == Approx(1.9).margin(0.05));
  for (const auto& r : zero_paper_check()) CHECK(r.planned_gb == Approx(r.paper_gb).margin(0.05));

  // The bf16 memory model in the same precision (bf16 params and gradients, fp32 master and
  // moments: 4 + 8 = K) on a 7.5B GPT shape keeps the same model states for ddp, zero1 and
  // zero2. Under zero3 it keeps no bf16 copy of the shard (the gather casts the fp32 master),
  // so 14 psi/N instead of the paper's 16 psi/N.
  const ModelConfig m = shape_for_params(psi, kGpt2Small);
  const double p = double(num_params(m));
  REQUIRE(p == Approx(psi).epsilon(0.05));
  Setup s;
  s.model = m;
  s.ranks = N;
  s.nodes = 8;
  s.precision = Precision::BF16;
  s.reduce_bf16 = true;
  auto state = [&](Strategy st) {
    Setup x = s;
    x.strategy = st;
    const MemoryPlan mp = plan_memory(x);
    // The gradient shard alone: zero2/zero3 also hold transient full gradients in backward.
    const double grads = shards_grads(st) ? 2.0 * double(mp.padded_params) / mp.shard_group
                                          : double(mp.device(C::Grads));
    return double(mp.device(C::ParamShard) + mp.device(C::OptimizerState)) + grads;
  };
  CHECK(state(Strategy::DDP) == Approx(zero_model_state_bytes(p, N, Strategy::DDP)).epsilon(1e-4));
  CHECK(state(Strategy::Zero1) == Approx(zero_model_state_bytes(p, N, Strategy::Zero1)).epsilon(1e-4));
  CHECK(state(Strategy::Zero2) == Approx(zero_model_state_bytes(p, N, Strategy::Zero2)).epsilon(1e-4));
  CHECK(state(Strategy::Zero3) == Approx(14.0 / 16.0 * zero_model_state_bytes(p, N, Strategy::Zero3)).epsilon(1e-4));
}

TEST_CASE("PyTorch FSDP paper: GPT-175B on 512 A100s, FULL_SHARD", "[plan][paper]") {
  const Machine a100 = machine_preset("a100");
  REQUIRE(num_params(kGpt175B) == Approx(175e9).epsilon(0.01));
  for (const auto& [batch, paper_tflops] : {std::pair{1, 173.0}, std::pair{2, 186.0}}) {
    const Setup s = fsdp_paper_setup(512, batch);
    const MemoryPlan mem = plan_memory(s);
    const TimePlan t = plan_time(s, a100);
    INFO("batch " << batch << " per GPU: " << t.hardware_tflops_per_rank << " TFLOPS per GPU ("
                  << t.model_tflops_per_rank << " without the recompute), MFU " << t.mfu
                  << ", step " << t.step_s << " s, exposed comm " << t.comm_exposed_s
                  << " s, device peak " << mem.device_total() / 1e9 << " GB");
    CHECK(mem.device_total() <= a100.device_memory_bytes);
    // The paper's TFLOPS count the recomputed forward (the hardware convention).
    CHECK(t.hardware_tflops_per_rank == Approx(paper_tflops).epsilon(0.2));
    CHECK(t.scaling_efficiency >= 0.9);
  }
  // Weak scaling: the same per-GPU batch on 128 and on 512 GPUs.
  for (int batch : {1, 2}) {
    const TimePlan t128 = plan_time(fsdp_paper_setup(128, batch), a100);
    const TimePlan t512 = plan_time(fsdp_paper_setup(512, batch), a100);
    const double efficiency = t512.tokens_per_s_per_rank / t128.tokens_per_s_per_rank;
    INFO("batch " << batch << ": " << t128.tokens_per_s << " tok/s on 128 GPUs, "
                  << t512.tokens_per_s << " on 512: weak-scaling efficiency " << efficiency);
    CHECK(efficiency >= 0.9);
    CHECK(t512.tokens_per_s > 3.6 * t128.tokens_per_s);
  }
}

TEST_CASE("the step's compute is 6P + 12LTC per token at the achieved rate", "[plan]") {
  Setup s;
  s.model = kGpt2Small;
  s.strategy = Strategy::DDP;
  s.micro_batch = 4;
  s.batch_size = 8;  // two micro-batches on one rank
  const Machine m = machine_preset("h100");
  const TimePlan t = plan_time(s, m);
  const double P = double(num_params(s.model)), L = 12, T = 1024, Cc = 768;
  const double tokens = 8 * T;
  REQUIRE(t.model_flops_per_token == Approx(6 * P + 12 * L * T * Cc));
  REQUIRE(t.compute_s == Approx(tokens * t.model_flops_per_token / (m.peak_flops_fp32 * m.gemm_efficiency)));
  REQUIRE(t.recompute_s == 0.0);
  // One rank: nothing to communicate; the step is compute plus AdamW's memory traffic.
  REQUIRE(t.comm_exposed_s == 0.0);
  REQUIRE(t.scaling_efficiency == 1.0);
  REQUIRE(t.step_s == Approx(t.compute_s + t.optimizer_s));
  REQUIRE(t.optimizer_s == Approx(P * 32 / m.mem_bandwidth));
  REQUIRE(t.mfu == Approx(m.gemm_efficiency * t.compute_s / t.step_s));

  // Checkpointing recomputes every block's forward: 2 P_block + 4TC per token and block.
  s.choices.checkpoint_blocks = true;
  const TimePlan c = plan_time(s, m);
  const double block = double(unit_numels(s.model)[1]);
  REQUIRE(c.hardware_flops_per_token - c.model_flops_per_token ==
          Approx(L * (2 * block + 4 * T * Cc)));
  REQUIRE(c.step_s > t.step_s);
}

TEST_CASE("ranks beyond the node's cores are time-sliced", "[plan]") {
  Setup s;
  s.model = kGpt2Small;
  s.strategy = Strategy::Zero3;
  s.micro_batch = 2;
  s.ranks = 4;
  Machine m = machine_from_json_text(R"({"gemm_flops_per_rank": 1e11,
      "intra_node_allgather_busbw": 5e9, "intra_node_reducescatter_busbw": 4e9,
      "latency_s": 2e-5, "mem_bandwidth": 1e10, "ranks_per_node": 4})");
  const TimePlan one_each = plan_time(s, m);
  m.cores_per_node = 2;
  REQUIRE(m.oversubscription(4) == 2.0);
  REQUIRE(m.oversubscription(2) == 1.0);
  const TimePlan shared = plan_time(s, m);
  // Compute, the optimizer and the on-core transfers all take twice as long; so does the step.
  REQUIRE(shared.compute_s == Approx(2 * one_each.compute_s));
  REQUIRE(shared.optimizer_s == Approx(2 * one_each.optimizer_s));
  REQUIRE(shared.step_s == Approx(2 * one_each.step_s));
  m.cores_per_node = 4;
  REQUIRE(plan_time(s, m).step_s == Approx(one_each.step_s));
}

TEST_CASE("collective cost: latency + busfactor x bytes / busbw, hierarchical across nodes", "[plan]") {
  const Machine m = machine_preset("a100");
  Setup s;
  s.ranks = 8;
  s.nodes = 1;
  const double B = 1e9;
  REQUIRE(collective_seconds(s, m, Coll::AllGather, Group::World, B) ==
          Approx(m.latency_s + 7.0 / 8.0 * B / m.intra_allgather_busbw));
  REQUIRE(collective_seconds(s, m, Coll::AllReduce, Group::World, B) ==
          Approx(m.latency_s + 2 * 7.0 / 8.0 * B / m.intra_allreduce_busbw));
  s.ranks = 64;
  s.nodes = 8;
  // All 8 GPUs of each node in the ring: the slower of NVLink and the node's network.
  REQUIRE(collective_seconds(s, m, Coll::ReduceScatter, Group::World, B) ==
          Approx(m.latency_s + 7 * m.inter_node_latency_s +
                 63.0 / 64.0 * B / std::min(m.intra_reducescatter_busbw, m.inter_node_busbw)));
  // Hybrid: shard groups of one node (NVLink); replicate groups of one GPU per node share the
  // node's network eight ways.
  s.strategy = Strategy::Hybrid;
  REQUIRE(collective_seconds(s, m, Coll::AllGather, Group::Shard, B) ==
          Approx(m.latency_s + 7.0 / 8.0 * B / m.intra_allgather_busbw));
  REQUIRE(collective_seconds(s, m, Coll::AllReduce, Group::Replicate, B) ==
          Approx(m.latency_s + 7 * m.inter_node_latency_s +
                 2 * 7.0 / 8.0 * B / (m.inter_node_busbw / 8)));
}

TEST_CASE("prefetch hides the all-gathers, and the emulated link is charged like the communicator", "[plan]") {
  Machine m = small_cpu(2e10);
  REQUIRE_FALSE(m.comm_overlaps_compute);
  m = with_link_emulation(m, 50.0, 0.5);
  Setup s;
  s.model = shape(4, 4, 128, 256, 64);
  s.ranks = 2;
  s.micro_batch = 8;
  s.prefetch = 0;
  const TimePlan k0 = plan_time(s, m);
  s.prefetch = 1;
  const TimePlan k1 = plan_time(s, m);
  s.prefetch = 2;
  const TimePlan k2 = plan_time(s, m);
  CHECK(k1.comm_exposed_s < k0.comm_exposed_s);
  CHECK(k2.comm_exposed_s <= k1.comm_exposed_s);
  CHECK(k1.step_s < k0.step_s);
  // Prefetch 0: every all-gather is waited for in full, from issue.
  const auto numel = unit_numels(s.model);
  const double emb = emulated_seconds(s, m, Coll::AllGather, Group::Shard, 4.0 * numel[0]);
  REQUIRE(emb == Approx(50e-6 + 0.5 * 4.0 * numel[0] / 0.5e9));
  REQUIRE(k0.all_gathers == 2 * (4 + 1) + 4);  // blocks and ln_f twice, the embedding 4 times
  // With k = 1 the head's gather serves forward and backward, and the window (two blocks) has
  // room to keep the last block and ln_f gathered from forward into backward.
  REQUIRE(k1.all_gathers == 2 * (4 + 1) + 3 - 2);
  // One rank: the emulated link charges the whole buffer.
  Setup one = s;
  one.ranks = 1;
  REQUIRE(emulated_seconds(one, m, Coll::AllGather, Group::Shard, 1e6) == Approx(50e-6 + 1e6 / 0.5e9));
  REQUIRE(plan_time(one, m).comm_exposed_s > 0.0);
}

namespace {
// All-gathers the counted run's first step issued (from its optimizer) that its second waits for.
int carried_gathers(const Setup& s) {
  const CountedStep c = count_step(s, 0);
  std::map<int, bool> waited;
  for (const LoggedEvent& e : c.log->events(1))
    if (e.kind == LoggedEvent::Wait) waited[e.handle] = true;
  int n = 0;
  for (const LoggedEvent& e : c.log->events(0))
    if (e.kind == LoggedEvent::Issue && waited.count(e.handle)) {
      CHECK(e.op == Coll::AllGather);
      ++n;
    }
  return n;
}
}  // namespace

TEST_CASE("gathers carried across steps start inside the last optimizer", "[plan]") {
  const Machine m = with_link_emulation(small_cpu(2e9), 50.0, 0.5);
  Setup s;
  s.model = shape(4, 4, 128, 256, 64);
  s.ranks = 2;
  s.micro_batch = 8;
  s.prefetch = 1;
  s.prefetch_across_steps = false;
  const TimePlan cold = plan_time(s, m);
  s.prefetch_across_steps = true;
  const TimePlan carried = plan_time(s, m);
  // The embedding and the first block are issued by the first step's optimizer (and waited
  // for by the second step), so their emulated delay overlaps it and less is waited for.
  REQUIRE(carried_gathers(s) == 2);
  CHECK(carried.comm_exposed_s < cold.comm_exposed_s);
  CHECK(carried.step_s < cold.step_s);
  CHECK(carried.optimizer_s == Approx(cold.optimizer_s));
  // Nothing is carried without prefetch, or when the parameters are not sharded.
  s.prefetch = 0;
  CHECK(carried_gathers(s) == 0);
  s.prefetch = 1;
  s.strategy = Strategy::Zero2;
  CHECK(carried_gathers(s) == 0);
}

TEST_CASE("machine files: the fsdp-bench schema", "[plan]") {
  const std::string text = R"({"schema": "fsdp-machine/1", "name": "box",
      "gemm_flops_per_rank": 1.1e11, "intra_node_allgather_busbw": 6e9,
      "intra_node_reducescatter_busbw": 5e9, "latency_s": 2e-5, "inter_node_busbw": 0,
      "mem_bandwidth": 1.5e10, "ranks_per_node": 2, "future_key": [1, 2]})";
  const Machine m = machine_from_json_text(text);
  REQUIRE(m.name == "box");
  REQUIRE(m.peak_flops_fp32 == 1.1e11);
  REQUIRE(m.peak_flops_bf16 == 1.1e11);
  REQUIRE(m.gemm_efficiency == 1.0);
  REQUIRE(m.intra_allreduce_busbw == 5e9);
  REQUIRE(m.ranks_per_node == 2);
  REQUIRE(m.cores_per_node == 0);
  const Machine back = machine_from_json_text(machine_to_json(m));
  REQUIRE(back.intra_allgather_busbw == m.intra_allgather_busbw);
  REQUIRE(back.latency_s == m.latency_s);
  REQUIRE(back.comm_overlaps_compute == m.comm_overlaps_compute);

  auto error = [](const std::string& t) {
    try {
      machine_from_json_text(t, "m.json");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error(R"({"gemm_flops_per_rank": 1e11})").find("intra_node_allgather_busbw") != std::string::npos);
  CHECK(error(R"({"gemm_flops_per_rank": 1e11, "intra_node_allgather_busbw": 6.5,
      "intra_node_reducescatter_busbw": 5e9, "latency_s": 1e-5, "mem_bandwidth": 1e10})")
            .find("not GB/s") != std::string::npos);
  CHECK(error("{oops").find("m.json: not valid JSON") != std::string::npos);
  CHECK_THROWS_AS(machine_preset("tpu"), std::invalid_argument);

  // A single-node measurement cannot predict a multi-node plan.
  Setup s;
  s.ranks = 4;
  s.nodes = 2;
  CHECK_THROWS_WITH(plan_time(s, m), Catch::Contains("inter_node_busbw"));
  for (const auto& name : machine_preset_names()) {
    const Machine p = machine_preset(name);
    CHECK(p.device_memory_bytes > 7e10);
    CHECK(p.inter_node_busbw > 0);
  }
}

TEST_CASE("the largest model that fits", "[plan]") {
  Setup s;
  s.model = shape(12, 12, 768, 50257, 1024);
  s.ranks = 8;
  s.micro_batch = 1;
  s.precision = Precision::BF16;
  s.choices.checkpoint_blocks = true;
  const std::int64_t budget = std::int64_t(80) << 30;
  std::int64_t previous = 0;
  for (Strategy st : {Strategy::DDP, Strategy::Zero1, Strategy::Zero2, Strategy::Zero3}) {
    s.strategy = st;
    const LargestModel r = largest_model(s, budget);
    INFO(strategy_name(st) << ": " << r.params << " parameters, " << r.shape.n_layer << " x "
                           << r.shape.n_embd);
    REQUIRE(r.found);
    REQUIRE(r.memory.device_total() <= budget);
    REQUIRE(r.next_device_total > budget);
    REQUIRE(r.next_shape.n_layer == r.shape.n_layer + 1);
    REQUIRE(r.shape.n_embd == 128 * r.shape.n_layer);
    REQUIRE(r.params > previous);  // each stage shards more and fits more
    previous = r.params;
  }
  s.strategy = Strategy::Zero3;
  REQUIRE_FALSE(largest_model(s, 1 << 20).found);
}

TEST_CASE("setups that cannot run are refused with a reason", "[plan]") {
  Setup s;
  s.ranks = 4;
  s.strategy = Strategy::DDP;
  s.offload = Offload::Params;
  CHECK_THROWS_WITH(s.validate(), Catch::Contains("offload = params"));
  s.offload = Offload::None;
  s.batch_size = 6;
  CHECK_THROWS_WITH(s.validate(), Catch::Contains("does not divide evenly over 4 ranks"));
  s.batch_size = 8;
  s.micro_batch = 3;
  CHECK_THROWS_WITH(s.validate(), Catch::Contains("micro_batch_size"));
  s.micro_batch = 1;
  s.strategy = Strategy::Hybrid;
  s.shard_group_size = 3;
  CHECK_THROWS_WITH(s.validate(), Catch::Contains("shard_group_size"));
}

TEST_CASE("offload moves model states to the host as the engine does", "[plan]") {
  Setup s;
  s.model = kGpt2Small;
  s.ranks = 8;
  s.strategy = Strategy::Zero3;
  const MemoryPlan none = plan_memory(s);
  s.offload = Offload::Optimizer;
  const MemoryPlan opt = plan_memory(s);
  s.offload = Offload::Params;
  const MemoryPlan par = plan_memory(s);
  const std::int64_t shard = none.padded_params / 8;
  // As tests/mpi/test_memory_features.cpp measures: 8 bytes per owned parameter for the
  // optimizer state, 16 with the parameter and gradient shards; offload = optimizer adds two
  // host staging sets (parameters and gradients) of the largest unit's shard.
  REQUIRE(opt.device(C::OptimizerState) == 0);
  REQUIRE(opt.host(C::OptimizerState) == 8 * shard);
  REQUIRE(opt.host_total() == 8 * shard + opt.host(C::CommBuffers));
  REQUIRE(opt.host(C::CommBuffers) > 0);
  REQUIRE(opt.host(C::CommBuffers) <= 16 * shard);
  REQUIRE(none.device_total() - opt.device_total() == 8 * shard);
  REQUIRE(par.host(C::ParamShard) == 4 * shard);
  REQUIRE(par.host(C::Grads) == 4 * shard);
  REQUIRE(par.host_total() == 16 * shard);
  // Less the device buffer a reduce-scatter lands in before its result goes down to the
  // host: one unit's shard per reduction in flight (two here; no unit holds a third of them).
  REQUIRE(none.device_total() - par.device_total() < 16 * shard);
  REQUIRE(none.device_total() - par.device_total() > 16 * shard - 2 * 4 * (shard / 3));
  const TimePlan t = plan_time(s, machine_preset("a100"));
  REQUIRE(t.step_s > 0.0);
  REQUIRE(t.offload_exposed_s > 0.0);
}

TEST_CASE("deterministic mode pads to whole norm blocks per rank and keeps a tree of gradient sets", "[plan]") {
  Setup s;
  s.model = shape(2, 2, 20, 256, 8);
  s.ranks = 2;
  s.strategy = Strategy::Zero3;
  s.deterministic = true;
  const MemoryPlan one = plan_memory(s);
  REQUIRE(one.padded_params % (2 * kNormBlock) == 0);
  s.batch_size = 2 * 4;  // four micro-batches per rank: three levels of the tree open at once
  const MemoryPlan four = plan_memory(s);
  REQUIRE(four.device(C::Grads) == one.device(C::Grads) + 2 * 4 * one.padded_params);
  s.strategy = Strategy::Hybrid;  // any strategy, any N that divides the micro-batch count
  CHECK_NOTHROW(s.validate());
  s.strategy = Strategy::Zero3;
  s.ranks = 3;
  s.batch_size = 6;
  CHECK_NOTHROW(s.validate());
  s.batch_size = 8;
  s.micro_batch = 2;  // G = 4 micro-batches over 3 ranks
  CHECK_THROWS_WITH(s.validate(), Catch::Contains("needs the number of ranks (3) to divide the "
                                                  "step's micro-batch count G = "
                                                  "train.batch_size / train.micro_batch_size = 4"));
}

TEST_CASE("Llama family members keep the MLP ratio and the key/value group, and count FLOPs as torchtitan",
          "[plan]") {
  ModelConfig like;  // Llama 3.2 1B's shape
  like.arch = "llama";
  like.n_layer = 16;
  like.n_head = 32;
  like.n_kv_head = 8;
  like.n_embd = 2048;
  like.ffn_hidden = 8192;
  like.vocab_size = 128256;
  like.block_size = 2048;
  like.tie_embeddings = true;
  REQUIRE(num_params(like) == 1235814400);  // the published count
  const ModelConfig s = shape_for_params(8e9, like, 128, 128);
  CHECK(s.ffn_hidden * like.n_embd == like.ffn_hidden * s.n_embd);
  CHECK(s.n_head / s.kv_heads() == like.n_head / like.kv_heads());
  CHECK(s.n_head % s.kv_heads() == 0);
  // 6(P - VC if untied) + 12LTC: tied counts the embedding once, as the head's GEMM.
  const Architecture& a = architecture_of(like);
  const double ltc = 12.0 * 16 * 2048 * 2048;
  CHECK(a.flops_per_token(like) == Approx(6.0 * 1235814400 + ltc));
  ModelConfig untied = like;
  untied.tie_embeddings = false;
  CHECK(a.flops_per_token(untied) == Approx(6.0 * (double(num_params(untied)) - 128256.0 * 2048) + ltc));
  // What the model's layers declare stage by stage (what the planner's timeline charges) sums
  // to the same per-token figure, for each architecture's layers (GPT-2's learned positions
  // counted with the head, a mixture's K experts, sub-layer units, checkpointing's recompute).
  const auto per_token = [](const ModelConfig& m, bool checkpointing, bool sublayer = false) {
    MemoryTracker counted = MemoryTracker::counting_only();
    DecoderOptions o;
    o.choices.checkpoint_blocks = checkpointing;
    o.choices.sublayer_units = sublayer;
    const std::unique_ptr<Decoder> d = architecture_of(m).build(m, o, counted);
    double sum = 0, recompute = 0;
    for (const UnitFlops& f : d->unit_flops()) {
      sum += f.forward + f.backward;
      recompute += f.recompute;
    }
    const UnitFlops h = d->head_flops();
    CHECK((recompute > 0) == checkpointing);
    return (sum + h.forward + h.backward) / double(m.block_size);
  };
  CHECK(per_token(untied, false) == Approx(a.flops_per_token(untied)).epsilon(1e-12));
  ModelConfig gpt2 = shape(3, 4, 128, 256, 64);
  CHECK(per_token(gpt2, false, true) == Approx(architecture_of(gpt2).flops_per_token(gpt2)).epsilon(1e-12));
  ModelConfig moe = untied;
  moe.arch = "qwen3_moe";
  moe.n_layer = 2;
  moe.n_experts = 8;
  moe.experts_per_token = 2;
  moe.moe_ffn_hidden = 512;
  moe.mlp_only_layers = "1";
  moe.block_size = 64;
  CHECK(per_token(moe, true) == Approx(architecture_of(moe).flops_per_token(moe)).epsilon(1e-12));
}

// The log the timeline reads is the engine's own schedule: every transfer the counted run's two
// steps issue is waited for after it is issued (the first step's carried gathers by the second,
// the second's last disk writes as the engine is destroyed), nothing is waited for that was not
// issued, a group is the mesh's, and every step computes; over dense setups of every strategy, one and four ranks,
// with carried gathers, deterministic mode, offload, sub-layer units with checkpointing, NVMe,
// Muon, and bf16.
TEST_CASE("the counted step waits for every transfer it issues, after issuing it", "[plan]") {
  for (Strategy st : {Strategy::DDP, Strategy::Zero1, Strategy::Zero2, Strategy::Zero3, Strategy::Hybrid})
    for (int ranks : {1, 4})
      for (int variant = 0; variant < 8; ++variant) {
        Setup s;
        s.model = shape(3, 4, 128, 256, 64);
        s.ranks = ranks;
        s.strategy = st;
        s.micro_batch = 2;
        s.batch_size = 2 * 2 * ranks;
        s.prefetch_across_steps = variant == 1;
        if (variant == 2) s.deterministic = true;
        if (variant == 3) s.offload = Offload::Optimizer;
        if (variant == 4) {
          s.choices.checkpoint_blocks = true;
          s.choices.sublayer_units = true;
        }
        if (variant == 5) {
          s.precision = Precision::BF16;
          s.reduce_bf16 = true;
        }
        if (variant == 6) {
          s.offload = Offload::Nvme;
          s.offload_path = "/nonexistent";  // the counted run opens no file
        }
        if (variant == 7) s.optimizer = OptimizerKind::Muon;
        INFO(strategy_name(st) << " on " << ranks << " variant " << variant);
        const CountedStep c = count_step(s, 0);
        REQUIRE(c.log->steps() == 3);  // two steps, and what the engine's destruction waits for
        std::map<int, int> issued, waited;  // handle -> event index over both steps
        int at = 0, computes = 0;
        for (int step = 0; step < 3; ++step)
          for (const LoggedEvent& e : c.log->events(step)) {
            ++at;
            if (e.kind == LoggedEvent::Issue) {
              CHECK(issued.count(e.handle) == 0);
              issued[e.handle] = at;
              if (e.group >= 0) {
                REQUIRE(e.group < int(c.log->groups().size()));
                const LoggedGroup& g = c.log->groups()[std::size_t(e.group)];
                CHECK(std::find(g.members.begin(), g.members.end(), 0) != g.members.end());
              }
              if (e.after >= 0) CHECK(issued.count(e.after) == 1);
            }
            if (e.kind == LoggedEvent::Wait) {
              CHECK(issued.count(e.handle) == 1);
              if (!waited.count(e.handle)) waited[e.handle] = at;
            }
            computes += e.kind == LoggedEvent::Compute ? 1 : 0;
          }
        for (const auto& [h, i] : issued) {
          INFO("handle " << h);
          CHECK(waited.count(h) == 1);
        }
        // Forward and backward of every unit and the head, per micro-batch and step (Muon's
        // Newton-Schulz rounds come on top).
        CHECK(computes >= 2 * 2 * 2 * int(unit_numels(s.model, s.choices).size()));
      }
}
