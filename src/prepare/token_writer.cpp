// SPDX-License-Identifier: MIT
#include "prepare/token_writer.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "comm/agree.hpp"
#include "core/check.hpp"
#include "prepare/gather_mask.hpp"
#include "io/atomic_output.hpp"

namespace fsdp::prepare {
namespace {

constexpr std::uint64_t kHeaderBytes = 256 * 4;
constexpr std::size_t kChunkTokens = std::size_t(1) << 20;  // per write: well under INT_MAX bytes

std::string mpi_error(int rc) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, buf, &len);
  return std::string(buf, std::size_t(len));
}

void put_le(unsigned char* p, std::uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

// Writes bytes at `at`; the status's count is checked too (Open MPI has reported success for a
// pwritev that failed with ENOSPC). Returns "" or why not.
std::string write_at(MPI_File fh, std::uint64_t at, const unsigned char* data, std::size_t bytes,
                     const std::string& file) {
  MPI_Status st;
  int r = MPI_File_write_at(fh, MPI_Offset(at), data, int(bytes), MPI_BYTE, &st);
  int count = 0;
  if (r == MPI_SUCCESS) r = MPI_Get_count(&st, MPI_BYTE, &count);
  if (r != MPI_SUCCESS) return file + ": " + mpi_error(r);
  if (std::size_t(count) != bytes)
    return file + ": wrote " + std::to_string(count) + " of " + std::to_string(bytes) +
           " bytes at offset " + std::to_string(at) + " (is the disk full?)";
  return "";
}

// This rank's tokens at their place in the file, little-endian whatever the host.
std::string write_tokens(MPI_File fh, const LlmcFormat& fmt, std::uint64_t first,
                         const std::vector<std::int32_t>& tokens, const std::string& file) {
  std::vector<unsigned char> buf;
  for (std::size_t i = 0; i < tokens.size(); i += kChunkTokens) {
    const std::size_t n = std::min(kChunkTokens, tokens.size() - i);
    buf.resize(n * std::size_t(fmt.width));
    for (std::size_t k = 0; k < n; ++k)
      put_le(&buf[k * std::size_t(fmt.width)], std::uint32_t(tokens[i + k]), fmt.width);
    const std::uint64_t at = kHeaderBytes + (first + i) * std::uint64_t(fmt.width);
    std::string err = write_at(fh, at, buf.data(), buf.size(), file);
    if (!err.empty()) return err;
  }
  return "";
}

// splitmix64's finalizer: every input bit reaches every output bit.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// This rank's part of the pair id (data/trained_mask.hpp): a sum over tokens of a hash of
// (position, id, trained bit), so the ranks' parts add up to the same id however the tokens
// are split among them.
std::uint64_t pair_part(std::uint64_t first, const std::vector<std::int32_t>& tokens,
                        const TrainedMask& mask) {
  std::uint64_t h = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i)
    h += mix(((first + i) << 1 | std::uint64_t(mask.trained(std::int64_t(i)))) ^
             mix(std::uint64_t(std::uint32_t(tokens[i]))));
  return h;
}

// Both files or neither (docs/data.md, "What prepare writes over"): the mask is renamed in
// first, then the token file. When the token file's rename fails, the mask is put back as it
// was: the old one from a hard link made beforehand (under a temporary's name, so a crash
// leaves it for the next prepare to remove), or none. A crash between the two renames leaves
// the new mask beside the old token file, which their pair ids tell apart. Never the other
// order: a new token file beside no mask would train every token without a word.
void commit_pair(io::StagedFile& bin, io::StagedFile& mask) {
  const std::string mask_path = mask.path();
  std::string backup;
  struct stat st {};
  if (::lstat(mask_path.c_str(), &st) == 0) {
    backup = io::temporary_name(mask_path);
    if (::link(mask_path.c_str(), backup.c_str()) != 0) backup.clear();  // no hard links here:
  }                                                                        // the ids still tell
  const bool had_mask = !backup.empty() || ::lstat(mask_path.c_str(), &st) == 0;
  mask.commit();
  try {
    bin.commit();
  } catch (...) {
    if (!backup.empty()) ::rename(backup.c_str(), mask_path.c_str());
    else if (!had_mask) ::unlink(mask_path.c_str());
    throw;
  }
  if (!backup.empty()) ::unlink(backup.c_str());
}

}  // namespace

LlmcFormat llmc_format_for(std::size_t vocab_size) {
  if (vocab_size <= 65536) return {20240520, 1, 2};
  return {20240801, 7, 4};
}

WriteResult write_token_files(MPI_Comm comm, const std::string& out_path, std::size_t vocab_size,
                              const std::vector<std::int32_t>& tokens, const TrainedMask& mask,
                              std::int32_t eos_id) {
  int rank = 0;
  FSDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  const LlmcFormat fmt = llmc_format_for(vocab_size);
  WriteResult res;
  // Where this rank's tokens start: the tokens of the ranks before it. 64-bit, never MPI_INT.
  std::uint64_t mine = tokens.size(), first = 0;
  FSDP_MPI_CHECK(MPI_Exscan(&mine, &first, 1, MPI_UINT64_T, MPI_SUM, comm));
  if (rank == 0) first = 0;  // MPI_Exscan leaves rank 0's result undefined
  FSDP_MPI_CHECK(MPI_Allreduce(&mine, &res.tokens, 1, MPI_UINT64_T, MPI_SUM, comm));
  // Unsigned sums wrap: the id is the same at any number of ranks. Never 0 (an older mask's).
  const std::uint64_t part = pair_part(first, tokens, mask);
  std::uint64_t pair_id = 0;
  FSDP_MPI_CHECK(MPI_Allreduce(&part, &pair_id, 1, MPI_UINT64_T, MPI_SUM, comm));
  pair_id = mix(pair_id ^ res.tokens);
  if (pair_id == 0) pair_id = 1;
  const std::string mask_path = TrainedMask::path_for(out_path);
  if (res.tokens > 0xffffffffull) {  // llm.c's header holds the count in 32 bits (read unsigned)
    res.error = out_path + ": " + std::to_string(res.tokens) +
                " tokens do not fit the llm.c header's 32-bit count; split the inputs";
    return res;
  }

  std::unique_ptr<io::StagedFile> bin, trained;  // rank 0's; their destructors remove them
  std::string err, tmp;
  if (rank == 0) {
    try {
      // A kill -9 leaves its temporaries: the next prepare of the same OUT removes them.
      io::remove_stale_temporaries(out_path);
      io::remove_stale_temporaries(mask_path);
      bin = std::make_unique<io::StagedFile>(out_path);
      trained = std::make_unique<io::StagedFile>(mask_path);
      tmp = bin->temp();
    } catch (const std::exception& e) {
      err = e.what();
    }
  }
  if (!(res.error = agree_on_error(comm, err)).empty()) return res;
  tmp = broadcast_string(comm, tmp, 0);
  // No MPI_MODE_CREATE: rank 0 created the temporary exclusively.
  MPI_File fh = MPI_FILE_NULL;
  const int rc = MPI_File_open(comm, tmp.c_str(), MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  if (rc != MPI_SUCCESS) {  // collective: every rank has the same outcome
    res.error = out_path + ": cannot open its temporary " + tmp + ": " + mpi_error(rc);
    return res;
  }
  std::string io_err;
  if (rank == 0) {
    unsigned char h[kHeaderBytes] = {};
    put_le(h, std::uint32_t(fmt.magic), 4);
    put_le(h + 4, std::uint32_t(fmt.version), 4);
    put_le(h + 8, std::uint32_t(res.tokens), 4);
    put_le(h + 12, std::uint32_t(pair_id), 4);
    put_le(h + 16, std::uint32_t(pair_id >> 32), 4);
    io_err = write_at(fh, 0, h, kHeaderBytes, out_path);
  }
  if (io_err.empty()) io_err = write_tokens(fh, fmt, first, tokens, out_path);
  {  // collective: every rank calls it, whatever it met; a deferred write error shows here
    const int r = MPI_File_sync(fh);
    if (r != MPI_SUCCESS && io_err.empty()) io_err = out_path + ": " + mpi_error(r);
  }
  FSDP_MPI_CHECK(MPI_File_close(&fh));
  if (!(res.error = agree_on_error(comm, io_err)).empty()) return res;

  TrainedMask whole = gather_mask(comm, mask);
  const auto my_trained = std::uint64_t(mask.trained_count());
  FSDP_MPI_CHECK(MPI_Allreduce(&my_trained, &res.trained, 1, MPI_UINT64_T, MPI_SUM, comm));
  if (rank == 0) {
    try {
      whole.set_eos_id(eos_id);
      whole.set_pair_id(pair_id);
      whole.save(trained->temp());
      trained->finish(1024 + whole.bytes().size());
      bin->finish(kHeaderBytes + res.tokens * std::uint64_t(fmt.width));
      commit_pair(*bin, *trained);
    } catch (const std::exception& e) {
      err = e.what();
    }
  }
  res.error = agree_on_error(comm, err);
  return res;
}

}  // namespace fsdp::prepare
