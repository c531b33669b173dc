#!/usr/bin/env bash
# Several processes of one run on this machine, each with its own CPU
# devices, joined by jax.distributed over localhost (CPU collectives): the
# multi-host code path (one global batch, collectives between processes, one
# orbax checkpoint written by all) without a cluster. Tests use it; it is
# also how to check a config before a pod launch.
#   launch/local_processes.sh NUM_PROCESSES DEVICES_PER_PROCESS CONFIG WORKDIR \
#     [--config.key=value ...]
#   launch/local_processes.sh 2 4 configs/gran.py runs/gran_2x4
# Process i logs to WORKDIR.logs/process_<i>.log. If one process fails, the
# script stops the others and exits with the first failure's status; the
# same command resumes from the newest checkpoint. (On real hosts, where no
# such script watches, jax.distributed stops the others after
# --heartbeat-timeout.)
set -euo pipefail
cd "$(dirname "$0")/.."
source launch/checks.sh
usage="usage: $0 NUM_PROCESSES DEVICES_PER_PROCESS CONFIG WORKDIR [--config.key=value ...]"
need_args 4 "$usage" "$@"
procs=$1 devices=$2 config=$3 workdir=$4; shift 4
for n in "$procs" "$devices"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "$0: '$n' is not a positive count" \
    "($usage)" >&2; exit 2; }
done
need_config "$config"
need_paraflax
# A free port for the coordinator, chosen by the kernel.
port=${PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
logs=$workdir.logs
mkdir -p "$logs"
command=("$paraflax" train --distributed --config "$config" --workdir "$workdir"
  "$@")
echo "$0: JAX_COORDINATOR_ADDRESS=127.0.0.1:$port JAX_NUM_PROCESSES=$procs" \
  "JAX_PROCESS_ID=I ${command[*]}  (I = 0..$((procs - 1)), $devices CPU" \
  "devices each; logs in $logs/)" >&2
pids=()
for ((i = 0; i < procs; i++)); do
  XLA_FLAGS="${XLA_FLAGS:-} --xla_force_host_platform_device_count=$devices" \
    JAX_PLATFORMS=cpu JAX_COORDINATOR_ADDRESS=127.0.0.1:$port \
    JAX_NUM_PROCESSES=$procs JAX_PROCESS_ID=$i "${command[@]}" \
    >"$logs/process_$i.log" 2>&1 &
  pids+=($!)
done
# The first process to fail stops the others at once (jax.distributed would
# notice only after the heartbeat timeout) and names itself.
status=0
alive=("${pids[@]}")
while ((${#alive[@]})); do
  code=0
  wait -n -p ended "${alive[@]}" || code=$?
  for i in "${!alive[@]}"; do
    [[ ${alive[$i]} == "$ended" ]] && unset "alive[$i]"
  done
  ((code)) && ((status == 0)) || continue
  status=$code
  for i in "${!pids[@]}"; do
    [[ ${pids[$i]} == "$ended" ]] && failed=$i
  done
  echo "$0: process $failed exited with status $code ($logs/process_$failed.log);" \
    "stopping the others. Rerun the same command: it resumes from the" \
    "newest checkpoint in $workdir." >&2
  for pid in "${alive[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
done
exit "$status"
