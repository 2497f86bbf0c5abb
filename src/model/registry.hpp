// SPDX-License-Identifier: MIT
// model.arch -> the architecture that implements it (model/architecture.hpp). The built-in
// ones are registered on first use; a program (or a test) may add its own before the run
// starts. Every part of fsdp outside an architecture's folder finds the model through here.
#pragma once
#include <string>
#include <vector>

namespace fsdp {

struct Architecture;

// What a deck without model.arch, and a checkpoint written before the key existed, mean.
inline constexpr const char* kDefaultArch = "gpt2";

// Throws std::invalid_argument naming the registered architectures when `name` is not one.
const Architecture& architecture(const std::string& name);
bool has_architecture(const std::string& name);
// Adds (or replaces) an architecture under a.name. Not thread-safe: call before any run.
void register_architecture(const Architecture& a);
std::vector<std::string> architecture_names();
// The names as one line for messages: "gpt2, toy".
std::string architecture_list();

}  // namespace fsdp
