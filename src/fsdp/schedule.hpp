// SPDX-License-Identifier: MIT
// The step's stages as unit indices, for U units (0 = embedding, 1..U-2 = the blocks' units in
// forward order, U-1 = ln_f): forward embedding, blocks, ln_f, head; backward head, ln_f,
// blocks in reverse, embedding. The embedding unit appears at both ends of each pass because
// the LM head is tied to wte. The engine runs these and the planner replays them.
#pragma once
#include <vector>

namespace fsdp {

inline std::vector<int> forward_schedule(int n_units) {
  std::vector<int> s;
  for (int u = 0; u < n_units; ++u) s.push_back(u);
  s.push_back(0);
  return s;
}

inline std::vector<int> backward_schedule(int n_units) {
  std::vector<int> s{0};
  for (int u = n_units - 1; u >= 0; --u) s.push_back(u);
  return s;
}

}  // namespace fsdp
