// SPDX-License-Identifier: MIT
// The stop handler: a real SIGUSR1 or SIGTERM sets the flag and nothing else (the process lives).
#include <catch2/catch.hpp>

#include <csignal>

#include "train/signals.hpp"

TEST_CASE("SIGUSR1 and SIGTERM set the stop flag instead of ending the process", "[signals]") {
  fsdp::install_stop_handlers();
  fsdp::clear_stop_request();
  REQUIRE(fsdp::stop_signal() == 0);
  for (int sig : {SIGUSR1, SIGTERM}) {
    REQUIRE(std::raise(sig) == 0);  // delivered before raise returns (single thread)
    CHECK(fsdp::stop_signal() == sig);
    fsdp::clear_stop_request();
  }
  CHECK(std::string(fsdp::signal_name(SIGUSR1)) == "SIGUSR1");
  CHECK(std::string(fsdp::signal_name(SIGTERM)) == "SIGTERM");
  // Handlers stay installed after a delivery (no SA_RESETHAND).
  REQUIRE(std::raise(SIGUSR1) == 0);
  CHECK(fsdp::stop_signal() == SIGUSR1);
  fsdp::clear_stop_request();
}
