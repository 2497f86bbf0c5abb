// SPDX-License-Identifier: MIT
// A non-owning reference to a callable, for the callbacks the encoder makes once per word:
// std::function may allocate and hides the call behind two indirections.
#pragma once
#include <type_traits>
#include <utility>

namespace fsdp {

template <class... Args>
class Callback {
 public:
  // f must outlive the Callback (it is only ever passed down a call).
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Callback>>>
  Callback(F&& f)  // NOLINT: implicit, so that a lambda can be passed where a Callback is taken
      : object_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, Args... a) { (*static_cast<std::remove_reference_t<F>*>(o))(a...); }) {}
  void operator()(Args... a) const { call_(object_, a...); }

 private:
  void* object_;
  void (*call_)(void*, Args...);
};

}  // namespace fsdp
