// SPDX-License-Identifier: MIT
// The step's stages for U units (0 = embedding, 1..U-2 = the blocks' units in forward order,
// U-1 = ln_f): forward embedding, blocks, ln_f, head; backward head, ln_f, blocks in reverse,
// embedding. The head is its own stage computed with the embedding unit's parameters (the LM
// head is tied to wte), so the embedding unit is needed at both ends of each pass. The engine
// runs these and the planner replays them.
#pragma once
#include <vector>

namespace fsdp {

struct Stage {
  int unit = 0;
  bool head = false;  // the tied LM head (and the loss), with unit 0's parameters
};

inline std::vector<Stage> forward_stages(int n_units) {
  std::vector<Stage> s;
  for (int u = 0; u < n_units; ++u) s.push_back({u, false});
  s.push_back({0, true});
  return s;
}

inline std::vector<Stage> backward_stages(int n_units) {
  std::vector<Stage> s{{0, true}};
  for (int u = n_units - 1; u >= 0; --u) s.push_back({u, false});
  return s;
}

// The unit each stage needs, in stage order (what the gather window schedules).
inline std::vector<int> stage_units(const std::vector<Stage>& stages) {
  std::vector<int> u;
  for (const Stage& s : stages) u.push_back(s.unit);
  return u;
}

inline std::vector<int> forward_schedule(int n_units) { return stage_units(forward_stages(n_units)); }
inline std::vector<int> backward_schedule(int n_units) {
  return stage_units(backward_stages(n_units));
}

}  // namespace fsdp
