# SPDX-License-Identifier: MIT
# Slurm: the job scripts on a real slurmctld + two slurmd cluster started on this machine
# (tests/slurm/cluster_up.sh), one cluster per test, torn down by pid. Skipped (exit 77) without
# root or the Slurm packages. Also the stop signals under mpirun, without Slurm.
fsdp_add_e2e_test(slurm_cpu_job slurm_cpu_job.sh)
fsdp_add_e2e_test(slurm_requeue slurm_requeue.sh)
fsdp_add_e2e_test(slurm_hard_kill slurm_hard_kill.sh)
fsdp_add_e2e_test(slurm_bad_deck slurm_bad_deck.sh)
fsdp_add_e2e_test(slurm_gpu_job slurm_gpu_job.sh)
set_tests_properties(slurm_cpu_job slurm_requeue slurm_hard_kill slurm_bad_deck slurm_gpu_job PROPERTIES
  LABELS slurm RUN_SERIAL TRUE TIMEOUT 400 SKIP_RETURN_CODE 77)

fsdp_add_e2e_test(e2e_stop_signals stop_signals.sh)  # one CTest slot: see reliability.cmake
