// SPDX-License-Identifier: MIT
#include "prepare/input_list.hpp"

#include "comm/agree.hpp"
#include "core/check.hpp"
#include "core/input_file.hpp"

namespace fsdp::prepare {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

bool input_kind(const std::string& path, InputKind& kind) {
  if (ends_with(path, ".txt")) kind = InputKind::Text;
  else if (ends_with(path, ".jsonl")) kind = InputKind::Jsonl;
  else return false;
  return true;
}

InputList list_inputs(MPI_Comm comm, const std::vector<std::string>& paths) {
  int rank = 0;
  FSDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  InputList in;
  in.paths = paths;
  in.kinds.assign(paths.size(), InputKind::Text);
  in.sizes.assign(paths.size(), 0);
  if (rank == 0) {
    for (std::size_t i = 0; i < paths.size() && !in.problem.found(); ++i) {
      if (!input_kind(paths[i], in.kinds[i])) {
        in.problem = {i, 0, paths[i] + ": not a .txt or .jsonl file (the extension says how it is read)"};
        break;
      }
      try {
        in.sizes[i] = InputFile(paths[i], "").size();
      } catch (const InputError& e) {
        in.problem = {i, 0, e.what()};
      }
    }
  }
  FSDP_MPI_CHECK(MPI_Bcast(in.sizes.data(), int(in.sizes.size()), MPI_UINT64_T, 0, comm));
  FSDP_MPI_CHECK(MPI_Bcast(&in.problem.file, 1, MPI_UINT64_T, 0, comm));
  in.problem.message = broadcast_string(comm, in.problem.message, 0);
  for (std::size_t i = 0; i < paths.size(); ++i) input_kind(paths[i], in.kinds[i]);
  in.starts.resize(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i) {
    in.starts[i] = in.total;
    in.total += in.sizes[i];
  }
  return in;
}

}  // namespace fsdp::prepare
