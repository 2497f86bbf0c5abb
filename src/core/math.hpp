// SPDX-License-Identifier: MIT
// Device-callable math that builds against Kokkos 3.4 (Kokkos::Experimental::) and 4.x (Kokkos::).
#pragma once
#include <Kokkos_Core.hpp>

namespace fsdp::kmath {
#if KOKKOS_VERSION >= 40000
using Kokkos::exp;
using Kokkos::log;
using Kokkos::sqrt;
using Kokkos::tanh;
#else
using Kokkos::Experimental::exp;
using Kokkos::Experimental::log;
using Kokkos::Experimental::sqrt;
using Kokkos::Experimental::tanh;
#endif
}  // namespace fsdp::kmath
