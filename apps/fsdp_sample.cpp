// SPDX-License-Identifier: MIT
// fsdp-sample: generates text from a model: an fsdp checkpoint (its stored run deck gives the
// model), a Hugging Face safetensors directory or an llm.c parameter file. Runs on one rank or
// under mpirun (the model is then sharded ZeRO-3 style, as in training). With --tokenizer a
// Hugging Face tokenizer encodes the prompt (--chat: as a user turn through the model's chat
// template) and decodes the answer, and generation stops at the model's end tokens.
// Exit codes: 0 done; 2 bad arguments; 3 bad vocabulary or tokenizer file; 5 unreadable model.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>

#include "core/kokkos_session.hpp"
#include "comm/device_mesh.hpp"
#include "comm/safety.hpp"
#include "config/deck_agreement.hpp"
#include "config/load_config.hpp"
#include "comm/mpi_session.hpp"
#include "config/parse_everywhere.hpp"
#include "core/blas_setup.hpp"
#include "core/check.hpp"
#include "core/faults.hpp"
#include "core/exit_codes.hpp"
#include "data/chat/chat_template.hpp"
#include "data/data_error.hpp"
#include "data/stop_tokens.hpp"
#include "data/tokenizer.hpp"
#include "data/vocabulary.hpp"
#include "io/checkpoint.hpp"
#include "io/h5_io.hpp"
#include "io/weight_source.hpp"
#include "io/weights_error.hpp"
#include "model/gemm/bf16_gemm.hpp"
#include "train/init_weights.hpp"
#include "train/sample.hpp"

namespace {

// The run deck of the model at `path`: a checkpoint's own, or the defaults shaped by the file.
fsdp::RunConfig model_deck(const std::string& path, const std::vector<std::string>& overrides) {
  using fsdp::weights::WeightFormat;
  if (fsdp::weights::detect_weight_format(path) != WeightFormat::Checkpoint)
    return fsdp::with_init_shape(fsdp::load_config_from_string("", "defaults", overrides), path);
  fsdp::h5::silence_errors();
  std::string deck;
  try {
    fsdp::h5::File f{FSDP_H5_ID(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT))};
    deck = fsdp::ckpt::read_header(f.get()).run_config;
  } catch (const std::exception& e) {
    throw fsdp::weights::WeightsError(path + ": " + e.what());
  }
  return fsdp::load_config_from_string(deck, path + " (stored run deck)", overrides);
}

std::vector<std::int32_t> parse_ids(const std::string& text) {
  std::vector<std::int32_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t used = 0;
    long v = -1;
    try {
      v = std::stol(item, &used);
    } catch (const std::exception&) {
    }
    if (v < 0 || used != item.size() || v > (1L << 30))
      throw CLI::ValidationError("--prompt-ids", "'" + item.substr(0, 20) + "' is not a token id");
    ids.push_back(std::int32_t(v));
  }
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
  fsdp::install_terminate_handler("fsdp-sample");
  fsdp::select_blas_kernel(argv);
  fsdp::comm::MpiSession mpi(&argc, &argv);
  // Reading the model, its deck and the encoder is watched: a FIFO or a stuck disk cannot hold
  // the ranks for ever (exit code 6).
  fsdp::comm::start_watchdog(fsdp::comm::kStartupTimeoutS);
  std::optional<fsdp::comm::Watch> reading(std::in_place, "start-up: reading the model and inputs");
  fsdp::faults::throw_if_asked("fsdp-sample");
  const int rank = mpi.rank(), nranks = mpi.size();

  CLI::App app{"fsdp-sample: generate text from an fsdp checkpoint or a GPT-2 weights file"};
  std::string path, prompt = "\n", prompt_ids, encoder, tokenizer_dir;
  std::vector<std::string> overrides;
  bool print_ids = false, chat = false;
  fsdp::SampleOptions o;
  app.add_option("model", path,
                 "fsdp checkpoint, Hugging Face directory or .safetensors file, or llm.c "
                 "parameter file")
      ->required();
  std::string adapter;
  app.add_option("--adapter", adapter,
                 "a PEFT LoRA adapter directory on the model (a Hugging Face base): sample the "
                 "adapted model");
  app.add_option("--prompt", prompt, "text to continue (byte-level vocabularies)")
      ->capture_default_str();
  app.add_option("--prompt-ids", prompt_ids, "token ids to continue, comma-separated");
  app.add_option("--tokens", o.tokens, "tokens to generate")->capture_default_str()->check(CLI::Range(0, 1 << 20));
  app.add_option("--temperature", o.temperature, "0 = greedy (argmax)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--top-k", o.top_k, "draw from the k most likely tokens (0 = all)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 24));
  app.add_option("--seed", o.seed, "sampling seed")->capture_default_str();
  app.add_option("--encoder", encoder, "a vocabulary file (GPT-2's encoder.json): print text, not token ids");
  app.add_option("--tokenizer", tokenizer_dir,
                 "a Hugging Face tokenizer (directory with tokenizer.json): encodes --prompt, "
                 "decodes the output, stops at the model's end tokens");
  app.add_flag("--chat", chat, "with --tokenizer: --prompt is a user message, rendered by the "
                               "model's chat template with the assistant's turn opened");
  app.add_flag("--ids", print_ids, "print token ids, one line, instead of text");
  app.add_option("--set", overrides, "override one run-deck key, section.key=value");
  app.footer(fsdp::exit_code::help("fsdp-sample"));
  std::vector<std::int32_t> tokens;
  fsdp::RunConfig cfg;
  if (const int rc = fsdp::parse_everywhere(
          app,
          [&] {
            app.parse(argc, argv);
            // CLI::Range lets NaN through (every comparison with it is false).
            if (!std::isfinite(o.temperature))
              throw CLI::ValidationError("--temperature", "must be a finite number in [0, 100]");
            if (app.count("--prompt") > 0 && app.count("--prompt-ids") > 0)
              throw CLI::ValidationError("--prompt", "give either --prompt or --prompt-ids, not both");
            if (chat && tokenizer_dir.empty())
              throw CLI::ValidationError("--chat", "needs --tokenizer (the chat template is the tokenizer's)");
            if (!tokenizer_dir.empty() && !encoder.empty())
              throw CLI::ValidationError("--encoder", "give either --encoder or --tokenizer, not both");
            if (!prompt_ids.empty()) tokens = parse_ids(prompt_ids);
            else if (tokenizer_dir.empty())
              for (unsigned char c : prompt) tokens.push_back(c);
            if (tokens.empty() && tokenizer_dir.empty()) throw CLI::ValidationError("--prompt", "is empty");
          },
          MPI_COMM_WORLD, "fsdp-sample", fsdp::exit_code::kBadConfig);
      rc >= 0)
    return rc;
  std::unique_ptr<fsdp::Vocabulary> vocab;
  std::optional<fsdp::Tokenizer> tokenizer;
  std::string start_error;
  int start_code = 0;
  try {
    if (!tokenizer_dir.empty()) {
      tokenizer.emplace(fsdp::Tokenizer::load(tokenizer_dir));
      o.stop_ids = fsdp::stop_token_ids(tokenizer_dir, *tokenizer);
      if (prompt_ids.empty() && chat) {
        // Its own phase for the watchdog's report (the render's work budget bounds it too).
        fsdp::comm::Watch rendering("start-up: rendering the chat template of " + tokenizer_dir);
        const auto tpl = fsdp::ChatTemplate::load(tokenizer_dir);
        const nlohmann::json messages = {{{"role", "user"}, {"content", prompt}}};
        fsdp::ChatVariables vars;
        vars.bos_token = tokenizer->bos_id() >= 0 ? tokenizer->decode({tokenizer->bos_id()}) : "";
        vars.eos_token = tokenizer->eos_id() >= 0 ? tokenizer->decode({tokenizer->eos_id()}) : "";
        vars.add_generation_prompt = true;
        // The template writes the BOS itself: no post-processor tokens on top.
        tokens = tokenizer->encode(tpl.render_text(messages, vars), false);
      } else if (prompt_ids.empty()) {
        tokens = tokenizer->encode(prompt, true);
      }
      if (tokens.empty()) throw fsdp::ConfigError("--prompt: encodes to no tokens");
    }
    // One sequence per rank, the model sharded over all of them; the context is only as long
    // as the text needs (causal attention: the answer is the same as with the full block).
    std::vector<std::string> sets = {"train.micro_batch_size=1",
                                     "train.batch_size=" + std::to_string(nranks),
                                     "train.deterministic=false", "checkpoint.every=0",
                                     std::string("fsdp.strategy=") + (nranks > 1 ? "zero3" : "ddp")};
    sets.insert(sets.end(), overrides.begin(), overrides.end());
    cfg = model_deck(path, sets);
    if (!adapter.empty()) {
      std::string note;  // a lora_dropout does not matter to sampling
      cfg = fsdp::with_adapter(cfg, adapter, note);
    }
    const std::int64_t need = std::int64_t(tokens.size()) + o.tokens;
    cfg.model.n_positions = cfg.model.positions();  // the position table keeps its rows
    if (need < cfg.model.block_size) cfg.model.block_size = int(std::max<std::int64_t>(1, need));
    if (!encoder.empty()) vocab = fsdp::load_vocabulary(encoder);
    // A tokenizer with ids the model has no embedding for is another model's (a model's table
    // may be larger than its tokenizer's, padded, never smaller).
    if (tokenizer && std::int64_t(tokenizer->vocab_size()) > cfg.model.vocab_size)
      throw fsdp::DataError(tokenizer_dir + ": the tokenizer's vocabulary (" +
                            std::to_string(tokenizer->vocab_size()) +
                            " ids) is larger than the model's vocab_size " +
                            std::to_string(cfg.model.vocab_size) + ": not this model's tokenizer");
    const std::string source = !prompt_ids.empty() ? "--prompt-ids" : chat ? "--chat --prompt" : "--prompt";
    for (std::int32_t t : tokens)
      if (t >= cfg.model.vocab_size)
        throw fsdp::ConfigError(source + ": token " + std::to_string(t) +
                                " is not below the model's vocab_size " +
                                std::to_string(cfg.model.vocab_size));
  } catch (const fsdp::ConfigError& e) {
    start_error = e.what();
    start_code = fsdp::exit_code::kBadConfig;
  } catch (const fsdp::DataError& e) {
    start_error = e.what();
    start_code = fsdp::exit_code::kBadData;
  } catch (const fsdp::weights::WeightsError& e) {
    start_error = e.what();
    start_code = fsdp::exit_code::kBadCheckpoint;
  }
  // One rank that cannot read its files, or ranks asked different things, stop every rank.
  std::string asked = cfg.resolved_toml + "\n[command line]\nmodel = " + path + "\ntokens = " +
                      std::to_string(o.tokens) + "\nseed = " + std::to_string(o.seed) +
                      "\nprompt =";
  for (std::int32_t t : tokens) asked += " " + std::to_string(t);
  const fsdp::Agreed failed =
      fsdp::agree_on_start(MPI_COMM_WORLD, start_error, start_code, asked + "\n");
  if (failed.rank >= 0) {
    if (rank == 0) std::fprintf(stderr, "fsdp-sample: %s\n", fsdp::one_line(failed.message).c_str());
    return failed.code;
  }

  // The model's deck says how long a collective may take; from here that timeout applies.
  reading.reset();
  fsdp::comm::start_watchdog(cfg.comm.timeout_s);
  int code = 0;
  {
    fsdp::KokkosSession kokkos(argc, argv);
    try {
      fsdp::MemoryTracker tracker(cfg.memory.device_budget);
      fsdp::Trace trace;
      fsdp::RunSetup setup = fsdp::setup_from_config(cfg, nranks, 1, fsdp::kernels::gemm_bf16_computes());
      if (setup.strategy == fsdp::Strategy::Hybrid) setup.shard_group_size = nranks;
      fsdp::comm::DeviceMesh mesh(MPI_COMM_WORLD, setup.mesh(), setup.mesh_groups(),
                                  fsdp::comm::host_groups());
      // Sampling keeps no optimizer state: a deck's NVMe offload has nothing to move to disk.
      if (setup.offload == fsdp::Offload::Nvme) {
        setup.offload = fsdp::Offload::None;
        setup.offload_params = false;
      }
      fsdp::Engine engine(setup, mesh, tracker, trace);
      fsdp::Checkpointer checkpointer(MPI_COMM_WORLD, fsdp::checkpoint_run(cfg));
      fsdp::init_weights(path, engine, checkpointer, MPI_COMM_WORLD,
                         cfg.train.allow_nonfinite_weights);
      if (!adapter.empty()) fsdp::load_adapter(adapter, engine, MPI_COMM_WORLD);
      const std::size_t n_prompt = tokens.size();
      tokens = fsdp::sample(engine, mesh.world(), tokens, o);
      if (rank == 0) {
        if (print_ids) {
          for (std::size_t i = 0; i < tokens.size(); ++i)
            std::printf("%s%d", i ? " " : "", tokens[i]);
          std::printf("\n");
        } else if (tokenizer) {
          // The prompt as given, then the answer without its end token (chat: the reply alone).
          std::vector<std::int32_t> answer(tokens.begin() + std::ptrdiff_t(n_prompt), tokens.end());
          if (!answer.empty() && std::find(o.stop_ids.begin(), o.stop_ids.end(), answer.back()) !=
                                     o.stop_ids.end())
            answer.pop_back();
          if (chat) std::printf("%s\n", tokenizer->decode(answer).c_str());
          else {
            const std::string head =
                prompt_ids.empty()
                    ? prompt
                    : tokenizer->decode({tokens.begin(), tokens.begin() + std::ptrdiff_t(n_prompt)});
            std::printf("%s%s\n", head.c_str(), tokenizer->decode(answer).c_str());
          }
        } else if (!encoder.empty()) {
          std::printf("%s\n", vocab->decode(tokens).c_str());
        } else if (cfg.model.vocab_size <= 256) {
          std::printf("%s\n", fsdp::bytes_as_text(tokens, false).c_str());
        } else {
          for (std::size_t i = 0; i < tokens.size(); ++i)
            std::printf("%s%d", i == 0 ? "" : i == n_prompt ? " | " : " ", tokens[i]);
          std::printf("\n");
        }
      }
    } catch (const fsdp::weights::WeightsError& e) {
      if (rank == 0) std::fprintf(stderr, "fsdp-sample: %s\n", fsdp::one_line(e.what()).c_str());
      code = fsdp::exit_code::kBadCheckpoint;
    } catch (const fsdp::CheckpointError& e) {
      if (rank == 0) std::fprintf(stderr, "fsdp-sample: %s\n", fsdp::one_line(e.what()).c_str());
      code = fsdp::exit_code::kBadCheckpoint;
    }
  }
  return code;
}
