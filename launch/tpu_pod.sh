#!/usr/bin/env bash
# A Cloud TPU pod slice: the same command on every worker; on TPU VMs
# jax.distributed.initialize() finds its peers by itself. The workdir must be
# shared by all workers (a GCS bucket).
#   launch/tpu_pod.sh TPU_NAME ZONE configs/gran.py gs://bucket/runs/gran
set -euo pipefail
tpu=$1 zone=$2 config=$3 workdir=$4; shift 4
gcloud compute tpus tpu-vm ssh "$tpu" --zone "$zone" --worker=all --command \
  "cd paraflax && .venv/bin/paraflax train --distributed --config $config --workdir $workdir $*"
