// SPDX-License-Identifier: MIT
// Kokkos for one program: initialised from argv, finalised at scope exit, and the listeners
// every program has (the space check, where built) installed in between. Use it, not a bare
// Kokkos::ScopeGuard, in every main.
#pragma once
#include <Kokkos_Core.hpp>

#include "core/space_check.hpp"

namespace fsdp {

class KokkosSession {
 public:
  KokkosSession(int& argc, char** argv) : guard_(argc, argv) { space_check::install(); }

 private:
  Kokkos::ScopeGuard guard_;
};

}  // namespace fsdp
