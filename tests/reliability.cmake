# SPDX-License-Identifier: MIT
# Reliability: kill -9 at a random moment of a run that checkpoints every step, then
# --resume auto (tests/e2e/kill9.sh; KILL9_TRIALS trials, 3 here). docs/reliability.md has the
# fuzzers and the sanitizer build.
fsdp_add_e2e_test(e2e_kill9 kill9.sh)
set_property(TEST e2e_kill9 APPEND PROPERTY ENVIRONMENT "KILL9_TRIALS=3")

# The hostile-run classes (docs/reliability.md, "Failure classes"): disk, ranks, paths.
fsdp_add_e2e_test(e2e_hostile_disk hostile_disk.sh)
fsdp_add_e2e_test(e2e_offload_nvme offload_nvme.sh)
fsdp_add_e2e_test(e2e_hostile_ranks hostile_ranks.sh)
fsdp_add_e2e_test(e2e_hostile_paths hostile_paths.sh)
fsdp_add_e2e_test(e2e_hostile_values hostile_values.sh)
fsdp_add_e2e_test(e2e_hostile_inputs hostile_inputs.sh)
fsdp_add_e2e_test(e2e_hostile_outputs hostile_outputs.sh)
fsdp_add_e2e_test(e2e_hostile_limits hostile_limits.sh)
# These, e2e_kill9 and e2e_stop_signals run 2-rank jobs but mostly wait (mpirun's teardown after
# a refusal, timeouts, kills): 4-22 s of CPU in 30-70 s (/usr/bin/time), so each claims one of
# CTest's two slots, not both; their bounds (30 s and more) leave room for a busy neighbour.
