// SPDX-License-Identifier: MIT
// The step's stages for U units in forward order and the unit whose parameters the LM head
// reads (Architecture::head_unit): forward units 0..U-1, then the head (and the loss);
// backward the head, then units U-1..0. The head is a stage of its own on that unit's
// parameters: tied to the embedding (GPT-2), that unit is needed at both ends of each pass;
// untied, it is the last unit (or a tensor of it) and is needed twice in a row. The engine
// runs these stages and the planner replays them.
#pragma once
#include <vector>

namespace fsdp {

struct Stage {
  int unit = 0;
  bool head = false;  // the LM head and the loss, with the head unit's parameters
};

inline std::vector<Stage> forward_stages(int n_units, int head_unit) {
  std::vector<Stage> s;
  for (int u = 0; u < n_units; ++u) s.push_back({u, false});
  s.push_back({head_unit, true});
  return s;
}

inline std::vector<Stage> backward_stages(int n_units, int head_unit) {
  std::vector<Stage> s{{head_unit, true}};
  for (int u = n_units - 1; u >= 0; --u) s.push_back({u, false});
  return s;
}

// Per backward stage: whether it is its unit's last use in the pass, after which the unit's
// gradients are complete and can be reduced (the tied head is not the embedding's last use).
inline std::vector<bool> last_uses(const std::vector<Stage>& backward) {
  std::vector<bool> last(backward.size(), true);
  for (std::size_t i = 0; i < backward.size(); ++i)
    for (std::size_t j = i + 1; j < backward.size(); ++j)
      if (backward[j].unit == backward[i].unit) last[i] = false;
  return last;
}

// The unit each stage needs, in stage order (what the gather window schedules).
inline std::vector<int> stage_units(const std::vector<Stage>& stages) {
  std::vector<int> u;
  for (const Stage& s : stages) u.push_back(s.unit);
  return u;
}

inline std::vector<int> forward_schedule(int n_units, int head_unit) {
  return stage_units(forward_stages(n_units, head_unit));
}

}  // namespace fsdp
