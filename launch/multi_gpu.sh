#!/usr/bin/env bash
# Several GPU hosts: one process per host, started on each host with the same
# arguments and its own rank. `paraflax train --distributed` reads the
# coordinator (process 0's host and a free port), the process count and the
# rank from JAX_COORDINATOR_ADDRESS / JAX_NUM_PROCESSES / JAX_PROCESS_ID (or
# finds them by itself under SLURM's srun). Every host sees the same workdir
# (a shared file system or a GCS bucket).
#   JAX_COORDINATOR_ADDRESS=host0:1234 JAX_NUM_PROCESSES=2 JAX_PROCESS_ID=0 \
#     launch/multi_gpu.sh configs/gran.py gs://bucket/runs/gran
# The same code path runs on one machine, with CPU devices, in
# launch/local_processes.sh (tests/test_multihost.py): what differs on GPU
# hosts is only the devices (a CUDA jaxlib) and the network between hosts.
set -euo pipefail
cd "$(dirname "$0")/.."
source launch/checks.sh
take_config_workdir "$@"
if [[ -z ${SLURM_JOB_ID:-} ]]; then
  for v in JAX_COORDINATOR_ADDRESS JAX_NUM_PROCESSES JAX_PROCESS_ID; do
    [[ -n ${!v:-} ]] || { echo "$0: $v is not set (and this is not a SLURM" \
      "job); see the usage at the top of $0" >&2; exit 2; }
  done
fi
need_paraflax
command=("$paraflax" train --distributed --config "$config" --workdir
  "$workdir" "${overrides[@]}")
echo "$0: ${command[*]}" >&2
exec "${command[@]}"
