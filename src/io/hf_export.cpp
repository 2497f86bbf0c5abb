// SPDX-License-Identifier: MIT
#include "io/hf_export.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include "core/bf16.hpp"
#include "core/check.hpp"
#include "core/memory.hpp"
#include "comm/agree.hpp"
#include "io/atomic_output.hpp"
#include "io/block_hash.hpp"
#include "io/checkpoint_scan.hpp"
#include "io/hf_export_owned.hpp"
#include "io/peft_export.hpp"
#include "model/architecture.hpp"

namespace fsdp::ckpt {
namespace fs = std::filesystem;
using weights::DType;
using weights::StoredTensor;

namespace {

// MPI-IO's error string for code rc.
std::string mpi_error(int rc) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, buf, &len);
  return std::string(buf, std::size_t(len));
}

// Elements r of weight t plus its adapter's scale B A (none: t unchanged), each sum in double
// and rounded once: the merged weight to fp32 rounding. B A is [out, in]; a GPT-2 Conv1D weight
// is stored [in, out].
void merge_adapter(const TensorSpec& t, const LoraChoices& l,
                   const std::map<std::string, std::vector<float>>& adapters, h5::FlatRange r, float* data) {
  const std::string base = t.name.substr(0, t.name.size() - 7);
  const auto a = adapters.find(base + ".lora_A.weight"), b = adapters.find(base + ".lora_B.weight");
  if (a == adapters.end() || b == adapters.end()) return;
  const std::int64_t in = fan_in(t), out = fan_out(t), R = l.rank;
  const double scale = double(l.scale());
  for (std::int64_t i = r.begin; i < r.end; ++i) {
    const std::int64_t row = t.in_major ? i % out : i / in, col = t.in_major ? i / out : i % in;
    double d = 0.0;
    for (std::int64_t k = 0; k < R; ++k) d += double(b->second[std::size_t(row * R + k)]) * a->second[std::size_t(k * in + col)];
    float& v = data[i - r.begin];
    v = float(double(v) + scale * d);
  }
}

}  // namespace

std::string hf_config_json(const ModelConfig& m, DType dtype) {
  return architecture_of(m).hf.config_json(m, dtype == DType::F32 ? "float32" : "bfloat16");
}

int export_hf(MPI_Comm comm, const std::string& checkpoint, const std::string& dir, DType dtype,
              std::uint64_t max_shard_bytes, bool merge) {
  const Comm c(comm);
  auto say = [&](const std::string& m) {
    if (c.rank == 0) std::fprintf(stderr, "fsdp-ckpt export: %s\n", m.c_str());
  };
  Opened o = open_checkpoint(c, checkpoint);
  if (!o.error.empty()) {
    say(o.error);
    return 2;
  }
  const ModelConfig& m = o.header.model;
  const std::int64_t B = o.header.checksum_block_elems;
  if (merge && !o.header.lora.on()) {
    say(checkpoint + ": holds no adapters to merge (its run had lora.enabled = false)");
    return 2;
  }
  std::map<std::string, std::vector<float>> adapters;  // --merge: by adapter name
  if (merge) {
    std::string bad, damaged;
    adapters = read_adapters(comm, checkpoint, o, bad, damaged);
    if (!bad.empty() || !damaged.empty()) {
      say(!bad.empty() ? bad : damaged);
      return !bad.empty() ? 2 : 1;
    }
  }
  const std::uint64_t elem = dtype == DType::F32 ? 4 : 2;

  // The tensors in layout order, cut into files of at most max_shard_bytes of data each (a
  // tensor larger than that alone in its file), as save_pretrained shards: one file is
  // model.safetensors, several are model-0000k-of-0000n.safetensors with an index.
  const Architecture& arch = architecture_of(m);
  const std::vector<UnitLayout> units = arch.units(m, ModelChoices{});
  struct OutFile {
    std::vector<const TensorSpec*> specs;
    std::map<std::string, StoredTensor> tensors;
    std::string name, header;
    std::uint64_t total = 0;
    std::unique_ptr<io::StagedFile> staged;  // rank 0
    std::string tmp;
  };
  std::vector<OutFile> files(1);
  std::uint64_t in_file = 0, data_bytes = 0;
  std::map<const TensorSpec*, std::string> hf_name;  // the name in the Hugging Face file
  for (const UnitLayout& u : units)
    for (const TensorSpec& t : u.tensors) {
      const std::uint64_t bytes = std::uint64_t(t.numel) * elem;
      if (!files.back().specs.empty() && max_shard_bytes > 0 && in_file + bytes > max_shard_bytes) {
        files.emplace_back();
        in_file = 0;
      }
      files.back().specs.push_back(&t);
      in_file += bytes;
      data_bytes += bytes;
    }
  const bool sharded = files.size() > 1;
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  for (std::size_t k = 0; k < files.size(); ++k) {
    OutFile& f = files[k];
    char name[96];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", k + 1, files.size());
    f.name = sharded ? name : "model.safetensors";
    std::vector<std::string> order;
    for (const TensorSpec* t : f.specs) {
      hf_name[t] = arch.hf.stored_names(t->name).front();
      order.push_back(hf_name[t]);
      f.tensors[hf_name[t]] = {dtype, t->shape, 0, 0};
      weight_map[hf_name[t]] = f.name;
    }
    f.header = weights::safetensors_header(order, f.tensors, {{"format", "pt"}, {"source", "fsdp"}});
    f.total = f.header.size();
    for (const auto& [n, t] : f.tensors) f.total = std::max(f.total, t.end);
  }

  // Every file of the export is written to a temporary first and renamed only when all of
  // them are complete, so a failure never leaves a new config.json beside an old
  // model.safetensors or the other way round (issue 44, finding 1).
  std::unique_ptr<io::StagedFile> staged_config, staged_index;  // rank 0 owns the temporaries
  std::vector<OwnedFile> proven;  // rank 0: the files present that an earlier export wrote
  std::string err;
  if (c.rank == 0) {
    try {
      std::error_code ec;
      // Only files provably this program's earlier export are replaced or removed (issue 63).
      std::vector<std::string> writes{"config.json"};
      for (const OutFile& f : files) writes.push_back(f.name);
      if (sharded) writes.push_back("model.safetensors.index.json");
      if (std::string why = unowned_files(dir, writes, proven); !why.empty())
        throw std::runtime_error(why);
      fs::create_directories(dir, ec);
      if (ec) throw std::runtime_error(dir + ": " + ec.message());
      for (OutFile& f : files) {
        f.staged = std::make_unique<io::StagedFile>((fs::path(dir) / f.name).string());
        f.tmp = f.staged->temp();
      }
      staged_config = std::make_unique<io::StagedFile>((fs::path(dir) / "config.json").string());
      if (sharded)
        staged_index = std::make_unique<io::StagedFile>((fs::path(dir) / "model.safetensors.index.json").string());
    } catch (const std::exception& ex) {
      err = ex.what();
    }
  }
  err = agree_on_error(comm, err);
  if (!err.empty()) {
    say(err);
    return 2;
  }
  std::string io_err, damaged;
  std::vector<float> buf;
  std::vector<std::uint16_t> half;
  std::vector<char> back;
  for (OutFile& f : files) {
    const std::string file = (fs::path(dir) / f.name).string();
    const std::string tmp = broadcast_string(comm, f.tmp, 0);
    // No MPI_MODE_CREATE: rank 0 created the temporary exclusively; RDWR to read writes back.
    MPI_File fh = MPI_FILE_NULL;
    const int rc = MPI_File_open(comm, tmp.c_str(), MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    if (rc != MPI_SUCCESS) {  // collective: every rank has the same outcome
      say(file + ": cannot open its temporary " + tmp + ": " + mpi_error(rc));
      return 2;
    }
    FSDP_MPI_CHECK(MPI_File_set_size(fh, MPI_Offset(f.total)));
    // Each write is accounted for three ways: the call's result, the count in its status, and
    // the bytes read back. Open MPI has returned MPI_SUCCESS after its pwritev failed with
    // ENOSPC, and set_size above leaves a sparse file whose size alone proves nothing.
    auto write_at = [&](std::uint64_t at, const void* data, std::size_t bytes) {
      if (!io_err.empty()) return;
      MPI_Status st;
      int r = MPI_File_write_at(fh, MPI_Offset(at), data, int(bytes), MPI_BYTE, &st);
      int count = 0;
      if (r == MPI_SUCCESS) r = MPI_Get_count(&st, MPI_BYTE, &count);
      if (r != MPI_SUCCESS) {
        io_err = file + ": " + mpi_error(r);
        return;
      }
      if (std::size_t(count) != bytes) {
        io_err = file + ": wrote " + std::to_string(count) + " of " + std::to_string(bytes) +
                 " bytes at offset " + std::to_string(at) + " (is the disk full?)";
        return;
      }
      back.assign(bytes, 0);
      r = MPI_File_read_at(fh, MPI_Offset(at), back.data(), int(bytes), MPI_BYTE, &st);
      if (r == MPI_SUCCESS) r = MPI_Get_count(&st, MPI_BYTE, &count);
      if (r != MPI_SUCCESS || std::size_t(count) != bytes ||
          std::memcmp(back.data(), data, bytes) != 0)
        io_err = file + ": the bytes at offset " + std::to_string(at) +
                 " did not read back as written (is the disk full?)";
    };
    if (c.rank == 0) write_at(0, f.header.data(), f.header.size());

    for (const TensorSpec* t : f.specs) {
      const std::string path = std::string(group_path(Part::Params)) + "/" + t->name;
      const Expected e{path, std::vector<hsize_t>(t->shape.begin(), t->shape.end())};
      std::string bad;
      std::vector<std::uint64_t> stored;
      h5::Dataset d;
      try {  // metadata reads are collective: every rank meets the same answer
        bad = check_shape(o.file.get(), e);
        if (bad.empty()) {
          d = h5::Dataset{FSDP_H5_ID(H5Dopen2(o.file.get(), path.c_str(), H5P_DEFAULT))};
          stored = stored_checksums(d.get(), t->numel, B);
        }
      } catch (const std::exception& ex) {
        bad = ex.what();
      }
      if (!bad.empty()) {
        if (damaged.empty()) damaged = checkpoint + ": " + path + ": " + bad;
        continue;
      }
      const StoredTensor& out = f.tensors.at(hf_name.at(t));
      std::vector<std::uint64_t> table(stored.size(), 0);
      for_my_pieces(c, t->numel, B, [&](h5::FlatRange r) {
        buf.resize(std::size_t(r.size()));
        try {
          h5::read_flat(d.get(), r, buf.data(), H5P_DEFAULT);
        } catch (const std::exception& ex) {
          if (io_err.empty()) io_err = checkpoint + ": " + path + ": " + ex.what();
          return;
        }
        hash_whole_blocks(buf.data(), r, t->numel, B, table);
        for (std::int64_t k = r.begin / B; k * B < r.end; ++k)
          if (table[std::size_t(k)] != stored[std::size_t(k)] && damaged.empty())
            damaged = checkpoint + ": " + path + ": checksum mismatch in block " +
                      std::to_string(k) + " of " + std::to_string(stored.size()) +
                      ": the data is damaged";
        if (merge) merge_adapter(*t, o.header.lora, adapters, r, buf.data());
        if (dtype == DType::F32) {
          write_at(out.begin + std::uint64_t(r.begin) * 4, buf.data(), buf.size() * 4);
        } else {
          half.resize(buf.size());
          for (std::size_t i = 0; i < buf.size(); ++i) half[i] = to_bf16(buf[i]);
          write_at(out.begin + std::uint64_t(r.begin) * 2, half.data(), half.size() * 2);
        }
      });
    }
    {  // collective: every rank calls it, whatever it met; a deferred write error shows here
      const int r = MPI_File_sync(fh);
      if (r != MPI_SUCCESS && io_err.empty()) io_err = file + ": " + mpi_error(r);
    }
    FSDP_MPI_CHECK(MPI_File_close(&fh));  // closing makes every rank's writes complete
  }
  const std::string damage = agree_on_error(comm, damaged), failure = agree_on_error(comm, io_err);
  if (!damage.empty() || !failure.empty()) {
    say((!damage.empty() ? damage : failure) + " (the old export, if any, is unchanged)");
    return !damage.empty() ? 1 : 2;  // rank 0's destructors remove the temporaries
  }
  std::uint64_t total = 0;
  for (const OutFile& f : files) total += f.total;
  if (c.rank == 0) {
    try {
      for (OutFile& f : files) f.staged->finish(f.total);
      staged_config->write(hf_config_json(m, dtype));
      staged_config->finish(staged_config->written());
      if (staged_index) {
        const nlohmann::ordered_json index{{"metadata", {{"total_size", data_bytes}}},
                                           {"weight_map", weight_map}};
        staged_index->write(index.dump(2) + "\n");
        staged_index->finish(staged_index->written());
      }
      // The record first lists the old files and the new (hf_export_owned.hpp), so a crash
      // while the renames below run leaves every file provable; then only the new.
      std::vector<OwnedFile> fresh;
      for (OutFile& f : files) fresh.push_back(owned_entry(f.staged->temp(), f.name));
      fresh.push_back(owned_entry(staged_config->temp(), "config.json"));
      if (staged_index) fresh.push_back(owned_entry(staged_index->temp(), "model.safetensors.index.json"));
      std::vector<OwnedFile> both = proven;
      both.insert(both.end(), fresh.begin(), fresh.end());
      write_export_record(dir, both);
      for (OutFile& f : files) f.staged->commit();
      if (staged_index) staged_index->commit();
      staged_config->commit();
      // The other layout's files from an earlier export would shadow or contradict this one
      // (loaders take model.safetensors before an index): removed once this one is complete,
      // and only those the record proved ours at the start.
      std::error_code ec;
      for (const OwnedFile& old : proven)
        if (std::none_of(fresh.begin(), fresh.end(), [&](const OwnedFile& f) { return f.name == old.name; }))
          fs::remove(fs::path(dir) / old.name, ec);
      write_export_record(dir, fresh);
    } catch (const std::exception& ex) {
      err = ex.what();
    }
  }
  err = agree_on_error(comm, err);
  if (!err.empty()) {
    say(err);
    return 2;
  }
  if (c.rank == 0)
    std::printf("exported %s (step %lld, %lld parameters) to %s as %s, %s%s\n", checkpoint.c_str(),
                (long long)o.header.step, (long long)num_params(m), dir.c_str(),
                weights::dtype_name(dtype), format_bytes(std::int64_t(total)).c_str(),
                sharded ? (" in " + std::to_string(files.size()) + " files with an index").c_str() : "");
  return 0;
}

}  // namespace fsdp::ckpt
