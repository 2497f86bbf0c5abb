// SPDX-License-Identifier: MIT
#include "prepare/tokenize_share.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "core/faults.hpp"
#include "core/input_file.hpp"
#include "prepare/mapped_file.hpp"

namespace fsdp::prepare {
namespace {

// "<file>:<line>: <problem>", the line counted from the file's start (only on an error).
FoundError located(const InputList& in, std::size_t f, std::string_view bytes, std::size_t at,
                   const std::string& problem) {
  return {f, at, in.paths[f] + ":" + std::to_string(line_of(bytes, at)) + ": " + problem};
}

}  // namespace

ShareOutput tokenize_share(const InputList& in, const ByteRange& share, bool last_rank,
                           DocumentEncoder& encoder, const ShareProgress& progress) {
  ShareOutput out;
  const std::size_t n_files = std::min<std::uint64_t>(in.paths.size(), in.problem.file);
  std::uint64_t done = 0;  // bytes of the share behind us
  const auto overlap = [&](std::size_t f) {
    const std::uint64_t b = std::max(share.begin, in.starts[f]);
    const std::uint64_t e = std::min(share.end, in.starts[f] + in.sizes[f]);
    return e > b ? e - b : 0;
  };
  for (std::size_t f = 0; f < n_files && !out.error.found(); ++f) {
    const std::uint64_t start = in.starts[f], size = in.sizes[f];
    if (in.kinds[f] == InputKind::Text && !owns(share, start, in.total, last_rank)) continue;
    if (in.kinds[f] == InputKind::Jsonl && size > 0 && overlap(f) == 0) continue;
    if (in.kinds[f] == InputKind::Jsonl && size == 0) continue;  // no lines
    std::optional<MappedFile> map;
    try {
      map.emplace(in.paths[f]);
      faults::truncate_mapped_input(in.paths[f]);
    } catch (const InputError& e) {
      out.error = {f, 0, e.what()};
      break;
    }
    const std::string_view bytes = map->bytes();
    if (bytes.size() != size) {  // it changed since rank 0 sized it
      out.error = {f, 0, in.paths[f] + ": changed size while being read (" +
                             std::to_string(size) + " then " + std::to_string(bytes.size()) +
                             " bytes)"};
      break;
    }
    // Truncated while mapped: what was read past its new end is zeros (mapped_file.hpp), and
    // any result or complaint about it is not the file's.
    const auto changed = [&] {
      out.error = {f, 0, in.paths[f] + ": changed size while being read (it had " +
                             std::to_string(size) + " bytes)"};
    };
    if (in.kinds[f] == InputKind::Text) {
      try {
        encoder.encode(read_text_file(bytes), out.tokens, out.mask);
        ++out.documents;
      } catch (const DocumentError& e) {
        out.error = located(in, f, bytes, e.at, e.what());
      }
      if (map->changed()) changed();
      if (out.error.found()) break;
      done += overlap(f);
      if (progress) progress(done, out);
      continue;
    }
    // JSONL: the lines that start inside the share, whole even where they run past its end.
    const std::size_t first = std::size_t(share.begin > start ? share.begin - start : 0);
    const std::uint64_t end_in_file = last_rank ? size : std::min(size, share.end - std::min(share.end, start));
    std::size_t at = line_start_at_or_after(bytes, first);
    const std::uint64_t base = done;
    while (at < end_in_file) {
      const void* nl = std::memchr(bytes.data() + at, '\n', bytes.size() - at);
      const std::size_t stop = nl ? std::size_t(static_cast<const char*>(nl) - bytes.data()) : bytes.size();
      const std::string_view line = bytes.substr(at, stop - at);
      if (!is_blank(line)) {
        try {
          encoder.encode(read_jsonl_line(line), out.tokens, out.mask);
          ++out.documents;
        } catch (const DocumentError& e) {
          if (map->changed()) changed();
          else out.error = located(in, f, bytes, at + std::min(e.at, line.size()), e.what());
          break;
        }
      }
      at = stop + 1;
      if (progress) progress(base + std::min<std::uint64_t>(at, end_in_file) - std::min<std::uint64_t>(first, end_in_file), out);
    }
    if (map->changed()) {
      changed();
      break;
    }
    done = base + overlap(f);
  }
  return out;
}

}  // namespace fsdp::prepare
