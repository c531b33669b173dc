#!/usr/bin/env bash
# A Cloud TPU pod slice: the same command on every worker; on TPU VMs
# jax.distributed finds its peers by itself. The workdir must be shared by
# all workers (a GCS bucket), and every worker needs the checkout in
# ~/paraflax with its venv (README set-up).
#   launch/tpu_pod.sh [--dry-run] TPU_NAME ZONE CONFIG gs://bucket/runs/NAME \
#     [--config.key=value ...]
# --dry-run prints the gcloud command and runs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
source launch/checks.sh
dry_run=0
if [[ ${1:-} == --dry-run ]]; then dry_run=1; shift; fi
usage="usage: $0 [--dry-run] TPU_NAME ZONE CONFIG WORKDIR [--config.key=value ...]"
need_args 4 "$usage" "$@"
tpu=$1 zone=$2 config=$3 workdir=$4; shift 4
need_config "$config"
[[ $workdir == gs://* ]] || { echo "$0: WORKDIR $workdir is not a gs://" \
  "path; every worker must see the same workdir" >&2; exit 2; }
for a in "$@"; do
  [[ $a == --config.* ]] || { echo "$0: '$a' is not a --config.key=value" \
    "override ($usage)" >&2; exit 2; }
done
remote="cd ~/paraflax && .venv/bin/paraflax train --distributed"
remote+=" --config $(printf %q "$config") --workdir $(printf %q "$workdir")"
for a in "$@"; do remote+=" $(printf %q "$a")"; done
command=(gcloud compute tpus tpu-vm ssh "$tpu" --zone "$zone" --worker=all
  --command "$remote")
echo "$0: ${command[*]}" >&2
((dry_run)) && exit 0
command -v gcloud >/dev/null || { echo "$0: gcloud not found; install the" \
  "Google Cloud CLI" >&2; exit 2; }
exec "${command[@]}"
