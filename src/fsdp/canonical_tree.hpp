// SPDX-License-Identifier: MIT
// Deterministic mode's one summation order: the canonical tree over a step's G micro-batches.
// Node (lo, hi) sums its children (lo, mid) and (mid, hi), mid = lo + (hi - lo) / 2, the left
// one first. A rank holding the contiguous micro-batches [a, b) owns the few whole nodes that
// cover [a, b) (a segment tree's decomposition: at most two per level); every sum in the tree
// is then the same float addition of the same operands whatever the number of ranks.
#pragma once
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace fsdp {

struct TreeNode {
  int lo = 0, hi = 0;
  bool operator==(const TreeNode& o) const { return lo == o.lo && hi == o.hi; }
};

inline int tree_mid(int lo, int hi) { return lo + (hi - lo) / 2; }

namespace detail {
inline void cover(int lo, int hi, int a, int b, std::vector<TreeNode>& out) {
  if (hi <= a || b <= lo) return;
  if (a <= lo && hi <= b) {
    out.push_back({lo, hi});
    return;
  }
  const int mid = tree_mid(lo, hi);
  cover(lo, mid, a, b, out);
  cover(mid, hi, a, b, out);
}
}  // namespace detail

// The canonical nodes of the tree over [0, g) that exactly cover [a, b), left to right.
inline std::vector<TreeNode> canonical_cover(int g, int a, int b) {
  std::vector<TreeNode> out;
  if (a < b) detail::cover(0, g, a, b, out);
  return out;
}

// The most nodes any of the n equal ranges of [0, g) has (n divides g): how many exchange rounds
// every rank takes part in.
inline int max_cover(int g, int n) {
  std::size_t most = 0;
  for (int r = 0; r < n; ++r)
    most = std::max(most, canonical_cover(g, r * (g / n), (r + 1) * (g / n)).size());
  return int(most);
}

// Sum of the tree's node (lo, hi) in canonical order, where some nodes are already known:
// known(lo, hi) returns a pointer to a node's value (nullptr: not known), add(x, y) adds y into
// x and returns x. Each known node is used once.
template <class T, class Known, class Add>
T* tree_combine(int lo, int hi, const Known& known, const Add& add) {
  if (T* v = known(lo, hi)) return v;
  if (hi - lo < 2)
    throw std::logic_error("canonical tree: micro-batch " + std::to_string(lo) +
                           " is in no rank's cover");
  const int mid = tree_mid(lo, hi);
  T* left = tree_combine<T>(lo, mid, known, add);
  T* right = tree_combine<T>(mid, hi, known, add);
  return add(left, right);
}

}  // namespace fsdp
