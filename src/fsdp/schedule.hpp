// SPDX-License-Identifier: MIT
// The step's stages as unit indices (0 = embedding, 1..L = blocks, L+1 = ln_f): forward
// embedding, blocks, ln_f, head; backward head, ln_f, blocks, embedding. The embedding unit
// appears at both ends of each pass because the LM head is tied to wte. The engine runs these
// and the planner replays them.
#pragma once
#include <vector>

namespace fsdp {

inline std::vector<int> forward_schedule(int L) {
  std::vector<int> s{0};
  for (int l = 0; l < L; ++l) s.push_back(l + 1);
  s.push_back(L + 1);
  s.push_back(0);
  return s;
}

inline std::vector<int> backward_schedule(int L) {
  std::vector<int> s{0, L + 1};
  for (int l = L - 1; l >= 0; --l) s.push_back(l + 1);
  s.push_back(0);
  return s;
}

}  // namespace fsdp
