# SPDX-License-Identifier: MIT
fsdp_add_e2e_test(e2e_bad_input bad_input.sh)
fsdp_add_e2e_test(e2e_comm_backend comm_backend.sh)
fsdp_add_e2e_test(e2e_train_converges train_converges.sh)
fsdp_add_e2e_test(e2e_collective_faults collective_faults.sh)
fsdp_add_e2e_test(e2e_deterministic_ckpt deterministic_ckpt.sh)
fsdp_add_e2e_test(e2e_machine_file machine_file.sh)
fsdp_add_e2e_test(e2e_hf_weights hf_weights.sh)
set_property(TEST e2e_hf_weights APPEND PROPERTY ENVIRONMENT "CKPT_TAMPER=$<TARGET_FILE:ckpt_tamper>")
