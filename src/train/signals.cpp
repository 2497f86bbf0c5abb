// SPDX-License-Identifier: MIT
#include "train/signals.hpp"

#include <csignal>
#include <cstdio>
#include <initializer_list>

namespace fsdp {
namespace {

// The only state the handler touches. sig_atomic_t is the one type the C and C++ standards
// let a handler write; volatile keeps the loop from caching it.
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int sig) {
  g_stop_signal = sig;  // async-signal-safe: one store, nothing else
}

}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGUSR1, SIGTERM}) {
    if (sigaction(sig, &sa, nullptr) != 0) std::perror("fsdp-train: sigaction");
  }
}

int stop_signal() { return g_stop_signal; }

void request_stop(int sig) { g_stop_signal = sig; }

void clear_stop_request() { g_stop_signal = 0; }

const char* signal_name(int sig) {
  switch (sig) {
    case SIGUSR1: return "SIGUSR1";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    default: {
      static thread_local char buf[24];
      std::snprintf(buf, sizeof buf, "signal %d", sig);
      return buf;
    }
  }
}

}  // namespace fsdp
