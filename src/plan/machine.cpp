// SPDX-License-Identifier: MIT
#include "plan/machine.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/input_file.hpp"

namespace fsdp::plan {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGB = 1e9;

// Shared by the three NVIDIA presets: what a training step achieves of the GEMM peak (non-GEMM
// kernels, attention, launch gaps), about what FSDP and Megatron report for large GPT models.
constexpr double kGemmEfficiency = 0.6;
// nccl-tests busbw as a fraction of the raw link rate (NVLink and InfiniBand alike).
constexpr double kLinkEfficiency = 0.8;
constexpr double kNetEfficiency = 0.9;

Machine a100() {
  Machine m;
  m.name = "a100";
  m.notes =
      "A100-SXM4-80GB in a DGX A100: 312 TFLOPS bf16 dense, 19.5 TFLOPS fp32; HBM2e 2.04 TB/s; "
      "NVLink3 600 GB/s bidirectional (300 GB/s per direction, busbw 0.8x = 240 GB/s); "
      "8x HDR 200 Gb/s InfiniBand per node (200 GB/s, busbw 0.9x = 180 GB/s); PCIe Gen4 x16 "
      "25 GB/s; host DDR4 ~50 GB/s per GPU; GEMM efficiency 0.6";
  m.peak_flops_bf16 = 312e12;
  m.peak_flops_fp32 = 19.5e12;
  m.gemm_efficiency = kGemmEfficiency;
  m.device_memory_bytes = 81920 * kMiB;  // total memory as nvidia-smi reports it
  m.mem_bandwidth = 2039 * kGB;
  m.host_mem_bandwidth = 50 * kGB;
  m.pcie_bandwidth = 25 * kGB;
  m.ranks_per_node = 8;
  m.intra_allgather_busbw = m.intra_reducescatter_busbw = m.intra_allreduce_busbw =
      kLinkEfficiency * 300 * kGB;
  m.inter_node_busbw = kNetEfficiency * 8 * 200e9 / 8;  // 8 NICs x 200 Gb/s, in bytes/s
  m.latency_s = 10e-6;
  m.inter_node_latency_s = 5e-6;
  return m;
}

Machine h100() {
  Machine m;
  m.name = "h100";
  m.notes =
      "H100-SXM5-80GB in a DGX H100: 989 TFLOPS bf16 dense, 67 TFLOPS fp32; HBM3 3.35 TB/s; "
      "NVLink4 900 GB/s bidirectional (450 GB/s per direction, busbw 0.8x = 360 GB/s); "
      "8x NDR 400 Gb/s InfiniBand per node (400 GB/s, busbw 0.9x = 360 GB/s); PCIe Gen5 x16 "
      "50 GB/s; host DDR5 ~75 GB/s per GPU; GEMM efficiency 0.6";
  m.peak_flops_bf16 = 989e12;
  m.peak_flops_fp32 = 67e12;
  m.gemm_efficiency = kGemmEfficiency;
  m.device_memory_bytes = 81559 * kMiB;
  m.mem_bandwidth = 3350 * kGB;
  m.host_mem_bandwidth = 75 * kGB;
  m.pcie_bandwidth = 50 * kGB;
  m.ranks_per_node = 8;
  m.intra_allgather_busbw = m.intra_reducescatter_busbw = m.intra_allreduce_busbw =
      kLinkEfficiency * 450 * kGB;
  m.inter_node_busbw = kNetEfficiency * 8 * 400e9 / 8;
  m.latency_s = 10e-6;
  m.inter_node_latency_s = 5e-6;
  return m;
}

Machine h200() {
  Machine m = h100();
  m.name = "h200";
  m.notes =
      "H200-SXM-141GB in an HGX H200: as the H100 (989 TFLOPS bf16 dense, NVLink4, 8x NDR 400 "
      "Gb/s per node) with 141 GB HBM3e at 4.8 TB/s; GEMM efficiency 0.6";
  m.device_memory_bytes = 143771 * kMiB;
  m.mem_bandwidth = 4800 * kGB;
  return m;
}

double number(const nlohmann::json& j, const std::string& key, const std::string& source,
              bool required, double fallback, bool bandwidth) {
  if (!j.contains(key) || j[key].is_null()) {
    if (required) throw std::runtime_error(source + ": missing required key \"" + key + "\"");
    return fallback;
  }
  if (!j[key].is_number())
    throw std::runtime_error(source + ": \"" + key + "\" must be a number, got " + j[key].dump());
  const double v = j[key].get<double>();
  if (!std::isfinite(v) || v < 0)
    throw std::runtime_error(source + ": \"" + key + "\" must be finite and >= 0, got " +
                             j[key].dump());
  if (bandwidth && v > 0 && v < 1e6)
    throw std::runtime_error(source + ": \"" + key + "\" = " + j[key].dump() +
                             " bytes/s is implausibly small; the schema is in bytes/s, not GB/s");
  return v;
}

}  // namespace

std::vector<std::string> machine_preset_names() { return {"a100", "h100", "h200"}; }

Machine machine_preset(const std::string& name) {
  if (name == "a100") return a100();
  if (name == "h100") return h100();
  if (name == "h200") return h200();
  throw std::invalid_argument("unknown machine preset \"" + name +
                              "\" (a100, h100, h200, or a JSON file written by fsdp-bench)");
}

Machine machine_from_json_text(const std::string& text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(source + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw std::runtime_error(source + ": expected a JSON object");
  if (j.contains("schema") && j["schema"] != "fsdp-machine/1")
    throw std::runtime_error(source + ": schema " + j["schema"].dump() +
                             " is not \"fsdp-machine/1\"");
  Machine m;
  m.name = j.value("name", std::string("measured"));
  m.notes = "measured (" + source + ")";
  m.peak_flops_fp32 = number(j, "gemm_flops_per_rank", source, true, 0, false);
  if (m.peak_flops_fp32 <= 0) throw std::runtime_error(source + ": gemm_flops_per_rank must be > 0");
  m.peak_flops_bf16 = number(j, "gemm_flops_per_rank_bf16", source, false, m.peak_flops_fp32, false);
  m.gemm_efficiency = number(j, "gemm_efficiency", source, false, 1.0, false);
  m.intra_allgather_busbw = number(j, "intra_node_allgather_busbw", source, true, 0, true);
  m.intra_reducescatter_busbw = number(j, "intra_node_reducescatter_busbw", source, true, 0, true);
  // An all-reduce is a reduce-scatter then an all-gather: the slower of the two sets its pace.
  const double ar_default = std::min(m.intra_allgather_busbw, m.intra_reducescatter_busbw);
  m.intra_allreduce_busbw = number(j, "intra_node_allreduce_busbw", source, false, ar_default, true);
  m.latency_s = number(j, "latency_s", source, true, 0, false);
  m.inter_node_busbw = number(j, "inter_node_busbw", source, false, 0, true);
  m.inter_node_latency_s = number(j, "inter_node_latency_s", source, false, 0, false);
  m.mem_bandwidth = number(j, "mem_bandwidth", source, true, 0, true);
  m.host_mem_bandwidth = number(j, "host_mem_bandwidth", source, false, m.mem_bandwidth, true);
  m.pcie_bandwidth = number(j, "pcie_bandwidth", source, false, 0, true);
  m.disk_read_bandwidth = number(j, "disk_read_bandwidth", source, false, 0, true);
  m.disk_write_bandwidth = number(j, "disk_write_bandwidth", source, false, 0, true);
  m.device_memory_bytes = number(j, "device_memory_bytes", source, false, 0, false);
  m.ranks_per_node = int(number(j, "ranks_per_node", source, false, 1, false));
  m.cores_per_node = int(number(j, "cores_per_node", source, false, 0, false));
  if (j.contains("comm_overlaps_compute")) {
    if (!j["comm_overlaps_compute"].is_boolean())
      throw std::runtime_error(source + ": \"comm_overlaps_compute\" must be true or false");
    m.comm_overlaps_compute = j["comm_overlaps_compute"].get<bool>();
  } else {
    m.comm_overlaps_compute = false;
  }
  if (m.ranks_per_node < 1) m.ranks_per_node = 1;
  if (m.mem_bandwidth <= 0) throw std::runtime_error(source + ": mem_bandwidth must be > 0");
  return m;
}

Machine machine_from_json_file(const std::string& path) {
  // A machine file is a few lines of JSON; 1 MiB bounds /dev/zero and its like.
  return machine_from_json_text(
      rethrow_input_as<std::runtime_error>(
          [&] { return read_input(path, "machine file", std::uint64_t(1) << 20); }),
      path);
}

Machine load_machine(const std::string& name_or_path) {
  for (const auto& n : machine_preset_names())
    if (n == name_or_path) return machine_preset(n);
  return machine_from_json_file(name_or_path);
}

Machine with_link_emulation(Machine m, double latency_us, double gbps) {
  if (latency_us <= 0 && gbps <= 0) return m;
  m.emulate_latency_s = latency_us * 1e-6;
  m.emulate_busbw = gbps * 1e9;
  m.serialize_collectives = false;  // each emulated collective is delayed from its own issue
  m.notes += "; link emulation " + std::to_string(latency_us) + " us, " + std::to_string(gbps) +
             " GB/s";
  return m;
}

std::string machine_to_json(const Machine& m) {
  nlohmann::json j{{"schema", "fsdp-machine/1"},
                   {"name", m.name},
                   {"gemm_flops_per_rank", m.peak_flops_fp32},
                   {"gemm_flops_per_rank_bf16", m.peak_flops_bf16},
                   {"gemm_efficiency", m.gemm_efficiency},
                   {"intra_node_allgather_busbw", m.intra_allgather_busbw},
                   {"intra_node_reducescatter_busbw", m.intra_reducescatter_busbw},
                   {"intra_node_allreduce_busbw", m.intra_allreduce_busbw},
                   {"latency_s", m.latency_s},
                   {"inter_node_busbw", m.inter_node_busbw},
                   {"inter_node_latency_s", m.inter_node_latency_s},
                   {"mem_bandwidth", m.mem_bandwidth},
                   {"host_mem_bandwidth", m.host_mem_bandwidth},
                   {"pcie_bandwidth", m.pcie_bandwidth},
                   {"disk_read_bandwidth", m.disk_read_bandwidth},
                   {"disk_write_bandwidth", m.disk_write_bandwidth},
                   {"device_memory_bytes", m.device_memory_bytes},
                   {"ranks_per_node", m.ranks_per_node},
                   {"cores_per_node", m.cores_per_node},
                   {"comm_overlaps_compute", m.comm_overlaps_compute}};
  return j.dump(2);
}

}  // namespace fsdp::plan
