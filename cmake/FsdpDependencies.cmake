# SPDX-License-Identifier: MIT
# Finds every dependency as an imported target. Fixes for Debian's Kokkos 3.4 (Trilinos 13.2)
# packaging apply only when that packaging is detected; a Kokkos 4 install needs none of them.

find_package(MPI REQUIRED COMPONENTS C CXX)
set(CMAKE_CXX_EXTENSIONS OFF)
find_package(Kokkos REQUIRED)
# KokkosKernels is the CPU build's GEMM (OpenBLAS underneath). A build on a CUDA Kokkos calls
# cuBLAS itself (src/model/gemm/cublas_gemm.hpp) and needs no KokkosKernels.
set(_fsdp_need_kk ON)
if(Kokkos_ENABLE_CUDA OR "CUDA" IN_LIST Kokkos_DEVICES)
  set(_fsdp_need_kk OFF)
endif()
if(_fsdp_need_kk)
  find_package(KokkosKernels REQUIRED)
endif()

# Debian: Kokkos::kokkos points at /usr/lib/include; the real headers are ${Kokkos_INCLUDE_DIRS}.
if(Kokkos_INCLUDE_DIRS)
  get_filename_component(_fsdp_kk_inc "${Kokkos_INCLUDE_DIRS}" ABSOLUTE)
  get_target_property(_fsdp_kk_cur Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
  if(NOT _fsdp_kk_cur OR NOT EXISTS "${_fsdp_kk_cur}")
    set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_fsdp_kk_inc}")
  endif()
endif()
# Debian: no Kokkos::kokkoskernels target, only library names.
if(_fsdp_need_kk AND NOT TARGET Kokkos::kokkoskernels)
  # A machine with Debian's Trilinos and a site Kokkos 4 finds both: Trilinos' KokkosKernels
  # (built for Kokkos 3.4) against Kokkos 4 links only to fail on missing symbols.
  if(Kokkos_VERSION VERSION_GREATER_EQUAL 4.0)
    message(FATAL_ERROR "KokkosKernels at ${KokkosKernels_DIR} is Trilinos' (for Kokkos 3), but "
      "Kokkos ${Kokkos_VERSION} is at ${Kokkos_DIR}: pass -DKokkosKernels_DIR=<its prefix>/lib/cmake/"
      "KokkosKernels (or KokkosKernels_ROOT on a fresh build directory)")
  endif()
  add_library(fsdp_kokkoskernels INTERFACE IMPORTED)
  set_target_properties(fsdp_kokkoskernels PROPERTIES
    INTERFACE_LINK_LIBRARIES "${KokkosKernels_LIBRARIES};${KokkosKernels_TPL_LIBRARIES};Kokkos::kokkos"
    INTERFACE_INCLUDE_DIRECTORIES "${_fsdp_kk_inc}")
  add_library(Kokkos::kokkoskernels ALIAS fsdp_kokkoskernels)
endif()

set(HDF5_PREFER_PARALLEL ON)
find_package(HDF5 REQUIRED COMPONENTS C)
if(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR "fsdp needs a parallel (MPI) HDF5; found a serial one at ${HDF5_INCLUDE_DIRS}")
endif()
if(NOT TARGET HDF5::HDF5)
  add_library(HDF5::HDF5 INTERFACE IMPORTED)
  set_target_properties(HDF5::HDF5 PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${HDF5_INCLUDE_DIRS}" INTERFACE_LINK_LIBRARIES "${HDF5_LIBRARIES}")
endif()

find_package(tomlplusplus REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
# The tokenizers' Unicode: PCRE2 (JIT, Unicode properties) for the split patterns, utf8proc for
# normalization forms (src/data/regex.cpp, normalizer.cpp).
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
if(FSDP_BUILD_TESTS)
  find_package(Catch2 2.13 REQUIRED)
endif()
