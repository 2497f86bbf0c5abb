// SPDX-License-Identifier: MIT
// Stop requests from the batch system. SIGUSR1 (Slurm's --signal warning, forwarded by the job
// script) and SIGTERM (preemption, time limit, scancel) only set a flag; the step loop polls it
// after each step, agrees on it across ranks, writes a checkpoint and ends the run.
#pragma once

namespace fsdp {

// Installs the handler for SIGUSR1 and SIGTERM (SA_RESTART, so no call in flight fails with
// EINTR). Call once, early in main; safe to call again.
void install_stop_handlers();

// The signal that asked this process to stop, or 0. Reads the flag the handler set.
int stop_signal();

// Test hooks: pretend `sig` arrived; forget any request.
void request_stop(int sig);
void clear_stop_request();

// "SIGUSR1", "SIGTERM", or "signal N".
const char* signal_name(int sig);

}  // namespace fsdp
