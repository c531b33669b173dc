#!/usr/bin/env bash
# One host, every local device (CPU, or all GPUs of a multi-GPU host when a
# CUDA build of jaxlib is installed) on the mesh's `data` axis.
#   launch/local.sh configs/gran.py runs/gran [--config.key=value ...]
#   launch/local.sh configs/nmt.py:de runs/nmt_de_en
set -euo pipefail
cd "$(dirname "$0")/.."
source launch/checks.sh
take_config_workdir "$@"
need_paraflax
command=("$paraflax" train --config "$config" --workdir "$workdir"
  "${overrides[@]}")
echo "$0: ${command[*]}" >&2
exec "${command[@]}"
