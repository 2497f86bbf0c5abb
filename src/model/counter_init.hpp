// SPDX-License-Identifier: MIT
// Counter-based random initialisation: element i of a tensor is a function of (seed, the
// tensor's name, i) only, so the values do not depend on how the units are sharded, on the
// number of ranks or on the order in which units are initialised.
#pragma once
#include <cstdint>
#include <string>

namespace fsdp {

// The stream of one tensor: seed mixed with a hash of its name.
std::uint64_t tensor_stream(std::uint64_t seed, const std::string& tensor_name);
// Element i of a standard normal stream (Box-Muller on two counter-based uniforms).
float normal_at(std::uint64_t stream, std::int64_t i);
// Element i of a uniform stream on [-bound, bound).
float uniform_at(std::uint64_t stream, std::int64_t i, float bound);

}  // namespace fsdp
