#!/usr/bin/env bash
# Several GPU hosts: one process per host, started on each host with the same
# arguments plus its rank. jax.distributed.initialize() reads the coordinator
# from the JAX_COORDINATOR_ADDRESS / JAX_NUM_PROCESSES / JAX_PROCESS_ID
# environment (or from SLURM when run under srun).
#   JAX_COORDINATOR_ADDRESS=host0:1234 JAX_NUM_PROCESSES=2 JAX_PROCESS_ID=0 \
#     launch/multi_gpu.sh configs/gran.py gs://bucket/runs/gran
set -euo pipefail
config=$1 workdir=$2; shift 2
exec paraflax train --distributed --config "$config" --workdir "$workdir" "$@"
