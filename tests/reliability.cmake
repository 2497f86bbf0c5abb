# SPDX-License-Identifier: MIT
# Reliability: kill -9 at a random moment of a run that checkpoints every step, then
# --resume auto (tests/e2e/kill9.sh; KILL9_TRIALS trials, 3 here). docs/reliability.md has the
# fuzzers and the sanitizer build.
fsdp_add_e2e_test(e2e_kill9 kill9.sh)
set_property(TEST e2e_kill9 APPEND PROPERTY ENVIRONMENT "KILL9_TRIALS=3")
set_tests_properties(e2e_kill9 PROPERTIES PROCESSORS 2)

# The hostile-run classes (docs/reliability.md, "Failure classes"): disk, ranks, paths.
fsdp_add_e2e_test(e2e_hostile_disk hostile_disk.sh)
fsdp_add_e2e_test(e2e_offload_nvme offload_nvme.sh)
fsdp_add_e2e_test(e2e_hostile_ranks hostile_ranks.sh)
fsdp_add_e2e_test(e2e_hostile_paths hostile_paths.sh)
fsdp_add_e2e_test(e2e_hostile_values hostile_values.sh)
fsdp_add_e2e_test(e2e_hostile_inputs hostile_inputs.sh)
set_tests_properties(e2e_hostile_disk e2e_hostile_ranks e2e_hostile_paths e2e_hostile_inputs
                     PROPERTIES PROCESSORS 2)
