# SPDX-License-Identifier: MIT
# FSDP_SPACE_CHECK: a CPU build in which "device" memory is a Kokkos memory space host code
# cannot see (src/core/space_check.hpp). It needs Kokkos 3's View access hook and a host-only
# Kokkos (on a GPU the real device space does the job). Configure fails unless a host View
# really cannot be made from a device View here: the check must be able to fail.
if(NOT FSDP_SPACE_CHECK)
  return()
endif()
if(FSDP_ENABLE_CUDA)
  message(FATAL_ERROR "FSDP_SPACE_CHECK emulates a device on a CPU; a GPU build has a real one: "
    "configure it with FSDP_ENABLE_CUDA=OFF and a host-only Kokkos")
endif()
if(Kokkos_VERSION VERSION_GREATER_EQUAL 4.0)
  message(FATAL_ERROR "FSDP_SPACE_CHECK uses Kokkos 3's View access hook (verify_space); the "
    "Kokkos found is ${Kokkos_VERSION}: build the check against a Kokkos 3.x (Debian's 3.4)")
endif()
target_compile_definitions(fsdp PUBLIC FSDP_SPACE_CHECK=1)
# The stack printed at a violation names functions only if executables export their symbols.
set(CMAKE_ENABLE_EXPORTS ON)

# A device View handed to host code must not compile.
set(_probe ${CMAKE_CURRENT_BINARY_DIR}/space_check_probe.cpp)
file(WRITE ${_probe} "#include \"core/types.hpp\"
void fsdp::space_check::host_touched_device() { for (;;) {} }
int main() { fsdp::FlatView d(\"d\", 4); fsdp::HostVec h = d; return int(h.extent(0)); }\n")
try_compile(_fsdp_host_view_from_device ${CMAKE_CURRENT_BINARY_DIR}/space_check_probe
  SOURCES ${_probe}
  CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${PROJECT_SOURCE_DIR}/src"
  COMPILE_DEFINITIONS -DFSDP_SPACE_CHECK=1
  LINK_LIBRARIES Kokkos::kokkos
  CXX_STANDARD 17)
if(_fsdp_host_view_from_device)
  message(FATAL_ERROR "FSDP_SPACE_CHECK: a host View made from a device View compiled; the "
    "space check is not in force with this Kokkos (${Kokkos_DIR})")
endif()
message(STATUS "fsdp: space check on: device Views are a space host code cannot see")
