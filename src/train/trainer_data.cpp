// SPDX-License-Identifier: MIT
// The trainer's data: the token files on every rank, their trained-token masks (FILE.trained,
// written by fsdp-data), data.packing's document end id, and the samplers over them.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "comm/safety.hpp"
#include "core/check.hpp"
#include "train/trainer.hpp"

namespace fsdp {
namespace fs = std::filesystem;
namespace {

// Runs `load` on every rank; a failure on any rank fails all of them together (exit 3), so no
// rank is left waiting in a collective for one that has exited.
template <class F>
auto load_everywhere(MPI_Comm world, F&& load) -> decltype(load()) {
  decltype(load()) f;
  std::string err;
  try {
    f = load();
  } catch (const std::exception& e) {
    err = e.what();
  }
  int mine = err.empty() ? 0 : 1, any = 0, all = 0;
  FSDP_MPI_CHECK(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, world));
  FSDP_MPI_CHECK(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, world));
  if (any) {
    int rank = 0;
    MPI_Comm_rank(world, &rank);
    if (!mine) throw SetupError("", false, 3);  // the failing rank reports
    throw SetupError(all ? err : "rank " + std::to_string(rank) + ": " + err, all == 1, 3);
  }
  return f;
}

// The mask beside a token file, when fsdp-data wrote one.
std::shared_ptr<const TrainedMask> mask_of(const TokenFile& tokens, const std::string& path) {
  if (path.rfind("builtin:", 0) == 0) return nullptr;
  const std::string mask = TrainedMask::path_for(path);
  std::error_code ec;
  if (!fs::exists(mask, ec)) return nullptr;
  auto m = std::make_shared<const TrainedMask>(TrainedMask::load(mask, tokens.size()));
  // Every step and evaluation would score nothing: a loss of 0 that means nothing (issue 63).
  if (m->trained_count() == 0)
    throw DataError(mask + ": trains no token (none of " + std::to_string(m->size()) +
                    " tokens is marked trained): nothing to train or evaluate on");
  return m;
}

// config.json's eos_token_id of an --init-from directory (the first of a list), or -1.
std::int32_t init_from_eos(const std::string& init_from) {
  if (init_from.empty()) return -1;
  const fs::path config = fs::path(init_from) / "config.json";
  std::error_code ec;
  if (!fs::is_regular_file(config, ec)) return -1;
  std::ifstream in(config);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("eos_token_id")) return -1;
  const nlohmann::json& e = j["eos_token_id"];
  const nlohmann::json& id = e.is_array() && !e.empty() ? e[0] : e;
  return id.is_number_integer() ? id.get<std::int32_t>() : -1;
}

}  // namespace

void Trainer::load_data(MPI_Comm world) {
  comm::Watch watch("start-up: loading " + cfg_.data.train + " and " + cfg_.data.val +
                    " on every rank");
  const DataConfig& d = cfg_.data;
  const ModelConfig& m = cfg_.model;
  auto tokens = [&](const std::string& path) {
    return load_everywhere(world, [&] {
      return std::make_unique<TokenFile>(TokenFile::load(path, d.format, m.vocab_size, m.block_size));
    });
  };
  train_ = tokens(d.train);
  val_ = tokens(d.val);
  SamplerOptions train_o, val_o;
  train_o.mask = load_everywhere(world, [&] { return mask_of(*train_, d.train); });
  val_o.mask = load_everywhere(world, [&] { return mask_of(*val_, d.val); });
  if (d.packing == "documents") {
    // The deck's id, else the one fsdp-data ended the documents with, else the model's.
    std::int32_t eos = d.eos_id;
    if (eos < 0 && train_o.mask) eos = train_o.mask->eos_id();
    if (eos < 0) eos = init_from_eos(opts_.init_from);
    if (eos < 0)
      throw SetupError("data.packing = documents needs data.eos_id: " + d.train +
                           " has no mask file naming its document end and --init-from no "
                           "config.json eos_token_id",
                       true);
    if (eos >= m.vocab_size)
      throw SetupError("data.eos_id = " + std::to_string(eos) + " is past the vocabulary (" +
                           std::to_string(m.vocab_size) + ")",
                       true);
    train_o.documents = val_o.documents = true;
    train_o.eos_id = val_o.eos_id = eos;
    doc_starts_.resize(std::size_t(cfg_.train.micro_batch_size) * m.block_size);
  }
  train_sampler_ = std::make_unique<Sampler>(*train_, m.block_size, cfg_.train.seed, train_o);
  val_sampler_ = std::make_unique<Sampler>(*val_, m.block_size, cfg_.train.seed, val_o);
}

TokenLayout Trainer::token_layout(const Sampler& s, std::int64_t scored, std::int64_t micro_batches) {
  TokenLayout l;
  if (s.documents()) l.doc_starts = doc_starts_.data();
  // The global batch's mean over its scored tokens: each micro-batch's summed losses times
  // G / N, which the engine's mean over the G micro-batches turns into sum / N.
  if (s.scores_tokens()) l.loss_scale = scored > 0 ? double(micro_batches) / double(scored) : 1.0;
  return l;
}

}  // namespace fsdp
