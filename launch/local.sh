#!/usr/bin/env bash
# One host, every local device (CPU, or all GPUs of a multi-GPU host when a
# CUDA build of jaxlib is installed) on the mesh's `data` axis.
#   launch/local.sh configs/gran.py runs/gran [--config.key=value ...]
#   launch/local.sh configs/nmt.py:de runs/nmt_de_en
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: $0 CONFIG WORKDIR [--config.key=value ...]"
(($# >= 2)) || { echo "$usage" >&2; exit 2; }
config=$1 workdir=$2; shift 2
[[ -f ${config%%:*} ]] || { echo "$0: config file ${config%%:*} not found" \
  >&2; exit 2; }
paraflax=${PARAFLAX:-.venv/bin/paraflax}
[[ -x $paraflax ]] || { echo "$0: $paraflax not found; install first" \
  "(README) or set PARAFLAX to the paraflax command" >&2; exit 2; }
command=("$paraflax" train --config "$config" --workdir "$workdir" "$@")
echo "$0: ${command[*]}" >&2
exec "${command[@]}"
