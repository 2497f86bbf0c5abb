// SPDX-License-Identifier: MIT
// libFuzzer target for the checkpoint reader: arbitrary bytes written to a file, then the entry
// points that open untrusted checkpoints (fsdp-ckpt info and verify: the header, the stored
// model, every dataset's shape, type and checksum table, the data against it). Each must answer
// with its own exit code (info 0/2, verify 0/1/2); an exception escaping them, a crash or a
// sanitizer report is a bug. One MPI rank (MPI_COMM_SELF), initialised once.
#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "io/checkpoint_format.hpp"
#include "io/checkpoint_tools.hpp"

namespace {

std::string g_path;  // this process's scratch file, rewritten for every input

// No MPI_Finalize: it unloads Open MPI's components, and LeakSanitizer's check at exit could
// then no longer tell their allocations (suppressed below) from ours.
void remove_scratch() {
  if (!g_path.empty()) {
    std::remove(g_path.c_str());
    rmdir(g_path.substr(0, g_path.rfind('/')).c_str());
  }
}

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "fuzz_checkpoint: %s (input in %s)\n", what.c_str(), g_path.c_str());
  std::abort();
}

}  // namespace

// Leak checking is off by default here: HDF5 1.10 leaks on some damaged files, and HDF5 and MPI
// are built without frame pointers, so with fast unwinding such a leak shows one unnamed frame
// that no suppression can match (full unwinding costs 3x the speed). For a leak hunt:
//   ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0 fuzz_checkpoint ...
// The whole-project sanitizer build (jobscripts/sanitize.sh) checks the reader for leaks.
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }

// With leak checking on: MPI's and HDF5's own allocations are not ours to report.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libmpi.so\nleak:libopen-pal.so\nleak:libopen-rte.so\nleak:libhwloc.so\n"
         "leak:libpmix.so\nleak:libevent\nleak:mca_\n"
         // HDF5 1.10 leaks object-header cache entries and error-stack strings when a damaged
         // file fails to load; those are its bugs, not ours.
         "leak:libhdf5_openmpi.so\nleak:libhdf5.so\nleak:__vasprintf_internal\n";
}

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  MPI_Init(argc, argv);
  std::atexit(remove_scratch);
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/fuzz_checkpoint.XXXXXX";
  if (!mkdtemp(dir.data())) {
    std::perror("fuzz_checkpoint: mkdtemp");
    std::exit(1);
  }
  g_path = dir + "/input.h5";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::FILE* f = std::fopen(g_path.c_str(), "wb");
  if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0)
    bug("cannot write the scratch file");

  try {
    const int info = fsdp::ckpt::info(MPI_COMM_SELF, g_path, true, true);
    if (info != 0 && info != 2) bug("info returned " + std::to_string(info));
    const int verify = fsdp::ckpt::verify(MPI_COMM_SELF, g_path);
    if (verify < 0 || verify > 2) bug("verify returned " + std::to_string(verify));
    if (info == 2 && verify != 2) bug("info could not read the file but verify could");
  } catch (const std::exception& e) {
    bug(std::string("exception escaped the reader: ") + e.what());
  } catch (...) {
    bug("non-std exception escaped the reader");
  }
  return 0;
}
