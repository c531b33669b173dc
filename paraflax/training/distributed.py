"""One run over several processes (hosts): set-up, one config, lost peers.

`jax.distributed.initialize` finds its peers by itself on Cloud TPU and under
SLURM; elsewhere (multi-GPU hosts, localhost) it needs the coordinator's
address, the process count and this process's id, which come from flags or
from the `JAX_COORDINATOR_ADDRESS`, `JAX_NUM_PROCESSES` and `JAX_PROCESS_ID`
environment. Every failure a user can meet here (no coordinator, a peer with
another config, a peer that died) becomes one message with the fix instead
of a hang or a page of coordination-service logs.
"""
from __future__ import annotations

import contextlib
import itertools
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Hashable, Iterator
from typing import Any

from paraflax import errors

ENV = {"coordinator": "JAX_COORDINATOR_ADDRESS",
       "num_processes": "JAX_NUM_PROCESSES", "process_id": "JAX_PROCESS_ID"}
# How long a process waits at a barrier for the others (e.g. to finish
# compiling a program). Dead peers end the wait sooner, through the
# coordination service's heartbeat.
_PEER_WAIT_S = 1800
# The exit status of a process whose peer died: the launcher (and a user)
# tells it from bad input (2) and from a crash.
EXIT_PEER_LOST = 3
# Numbers the barriers in the order this process meets them, the same in
# every process, so that a name may be waited on more than once.
_barriers = itertools.count()


def _setting(value: str | int | None, name: str) -> str | None:
  if value is not None:
    return str(value)
  return os.environ.get(ENV[name]) or None


def _count(value: str | None, name: str) -> int | None:
  if value is None:
    return None
  try:
    return int(value)
  except ValueError:
    raise errors.ConfigError(
        f"{name}={value!r} is not a whole number; set --{name.replace('_', '-')}"
        f" (or {ENV[name]}) to one.") from None


def cluster(coordinator: str | None = None, num_processes: int | None = None,
            process_id: int | None = None
            ) -> tuple[str | None, int | None, int | None]:
  """The three settings from the arguments, else the environment; all three
  or none (none: jax detects a TPU pod or SLURM job by itself)."""
  address = _setting(coordinator, "coordinator")
  count = _count(_setting(num_processes, "num_processes"), "num_processes")
  index = _count(_setting(process_id, "process_id"), "process_id")
  given = {k: v for k, v in (("coordinator", address),
                             ("num_processes", count),
                             ("process_id", index)) if v is not None}
  if given and len(given) < 3:
    missing = [f"--{k.replace('_', '-')} ({ENV[k]})" for k in ENV
               if k not in given]
    raise errors.ConfigError(
        f"a multi-process run needs the coordinator address, the process "
        f"count and this process's id; missing: {', '.join(missing)}. Give "
        "all three, or none on a TPU pod or under SLURM.")
  if count is not None and not 0 <= index < count:
    raise errors.ConfigError(
        f"process id {index} is outside 0..{count - 1} for {count} "
        "processes; number the processes from 0.")
  return address, count, index


def _host_port(address: str) -> tuple[str, int]:
  host, _, port = address.rpartition(":")
  if not host or not port.isdigit():
    raise errors.ConfigError(
        f"coordinator address {address!r} is not HOST:PORT (e.g. "
        "10.0.0.2:1234); give process 0's host and a free port.")
  return host.strip("[]"), int(port)


def _check_reachable(address: str, process_id: int, timeout_s: int) -> None:
  """Fails in `timeout_s` where jax's client would abort the process with a
  fatal log: process 0 must be able to listen on the port, the others to
  connect to it (they retry while process 0 starts)."""
  host, port = _host_port(address)
  if process_id == 0:
    try:
      with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) \
          as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("", port))
    except OSError as e:
      raise errors.ConfigError(
          f"process 0 cannot listen on port {port} of {address} "
          f"({e.strerror}); choose a free port for --coordinator.") from None
    return
  deadline = time.monotonic() + timeout_s
  while True:
    try:
      socket.create_connection((host, port), timeout=1).close()
      return
    except OSError as e:
      if time.monotonic() >= deadline:
        raise errors.ConfigError(
            f"process {process_id} cannot reach the coordinator {address} "
            f"within {timeout_s} s ({e.strerror or e}). Start process 0 on "
            "the host the address names, check that the port is open from "
            "here, or wait longer with --init-timeout.") from None
      time.sleep(0.5)


def initialize(coordinator: str | None = None,
               num_processes: int | None = None,
               process_id: int | None = None, *, init_timeout_s: int = 60,
               heartbeat_timeout_s: int = 30) -> None:
  """`jax.distributed.initialize` with `cluster`'s settings; a coordinator
  that cannot be reached within `init_timeout_s` is a ConfigError."""
  address, count, index = cluster(coordinator, num_processes, process_id)
  if address is not None:
    _check_reachable(address, index, init_timeout_s)
  import jax  # pylint: disable=g-import-not-at-top
  jax.distributed.initialize(
      address, count, index, initialization_timeout=init_timeout_s,
      heartbeat_timeout_seconds=heartbeat_timeout_s,
      shutdown_timeout_seconds=heartbeat_timeout_s)


def join(distributed: bool = False, coordinator: str | None = None,
         num_processes: int | None = None, process_id: int | None = None,
         init_timeout: int = 60, heartbeat_timeout: int = 30) -> None:
  """What a command's cluster flags ask for (`commands.CLUSTER`): nothing,
  or `initialize` (the three settings alone imply --distributed)."""
  if distributed or coordinator or num_processes or process_id is not None:
    initialize(coordinator, num_processes, process_id,
               init_timeout_s=init_timeout,
               heartbeat_timeout_s=heartbeat_timeout)
    settings = dict(_expected)
    _expected.clear()  # this command's: not a later library call's
    check_same_settings(settings, timeout_s=init_timeout)


def is_primary() -> bool:
  """Process 0 writes what every process computed alike."""
  import jax  # pylint: disable=g-import-not-at-top
  return jax.process_index() == 0


def barrier(name: str, timeout_s: int = _PEER_WAIT_S) -> None:
  """Every process reaches `name` before any goes on (one process: no-op),
  through the coordination service rather than a collective: CPU
  collectives give up when a peer is 30 s late (`first_runs_together`).
  A peer that dies ends the wait sooner (the heartbeat)."""
  import jax  # pylint: disable=g-import-not-at-top
  if jax.process_count() == 1:
    return
  # The client jax's own array serialization waits on; jax has no public
  # barrier that is not a collective.
  from jax._src import distributed as jax_distributed  # pylint: disable=g-import-not-at-top
  jax_distributed.global_state.client.wait_at_barrier(
      f"paraflax/{name}/{next(_barriers)}", timeout_in_ms=timeout_s * 1000)


def _signature(args: tuple[Any, ...]) -> Hashable:
  import jax  # pylint: disable=g-import-not-at-top
  leaves, tree = jax.tree.flatten(args)
  return tree, tuple((getattr(x, "shape", None), str(getattr(x, "dtype", "")))
                     for x in leaves)


def first_runs_together(fn: Any, name: str) -> Callable[..., Any]:
  """`fn` (a `jax.jit` function) compiled ahead for each new argument shape,
  and run for the first time only when every process has compiled it. CPU
  collectives connect a device group at its first collective, and gloo
  gives up when a peer is more than 30 s late (a fixed limit in XLA): a
  process that compiles slower (a busy host, a compilation cache that only
  process 0 writes) would stop the run. One process: `fn` itself."""
  import jax  # pylint: disable=g-import-not-at-top
  if jax.process_count() == 1:
    return fn
  compiled: dict[Hashable, Any] = {}

  def call(*args: Any) -> Any:
    key = _signature(args)
    if key not in compiled:
      program = fn.lower(*args).compile()
      barrier(name)
      compiled[key] = program
    return compiled[key](*args)

  return call


def check_same_config(config_json: str) -> None:
  """Every process runs the config of process 0, or all stop with a
  ConfigError (a process started with other flags would silently train
  another model on its share of the batch)."""
  check_same_settings({"config": json.loads(config_json)})


# The settings of this process's command (its flags and config), set by the
# command line before the command runs; `join` checks them.
_expected: dict[str, Any] = {}
# Numbers the exchanges of settings, as `_barriers` the barriers.
_exchanges = itertools.count()
# Flags that differ between the processes of one run by design, or that
# each may take from the environment instead.
PER_PROCESS = ("distributed", "coordinator", "num_processes", "process_id",
               "init_timeout", "heartbeat_timeout")


def expect_same_settings(settings: dict[str, Any]) -> None:
  """The settings `join` checks are equal in every process, once joined."""
  _expected.clear()
  _expected.update({k: v for k, v in settings.items()
                    if k not in PER_PROCESS})


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
  if isinstance(value, dict) and value:
    return {k: v for key, item in value.items()
            for k, v in _flat(item, f"{prefix}{key}.").items()}
  return {prefix.rstrip("."): value}


def check_same_settings(settings: dict[str, Any],
                        timeout_s: int = _PEER_WAIT_S) -> None:
  """Every process has process 0's `settings`, or all stop with one
  ConfigError naming the first difference. One exchange through the
  coordination service, not a collective: a collective of different
  shapes (another --k) aborts the process inside gloo."""
  import jax  # pylint: disable=g-import-not-at-top
  if jax.process_count() == 1:
    return
  from jax._src import distributed as jax_distributed  # pylint: disable=g-import-not-at-top
  client = jax_distributed.global_state.client
  key = f"paraflax/settings/{next(_exchanges)}"
  client.key_value_set(f"{key}/{jax.process_index()}",
                       json.dumps(settings, sort_keys=True, default=str))
  first = _flat(json.loads(json.dumps(settings, default=str)))
  for peer in range(jax.process_count()):
    theirs = _flat(json.loads(client.blocking_key_value_get(
        f"{key}/{peer}", timeout_s * 1000)))
    if peer == 0:
      first = theirs
      continue
    differ = sorted(k for k in first.keys() | theirs.keys()
                    if first.get(k) != theirs.get(k))
    if differ:
      name = differ[0]
      raise errors.ConfigError(
          f"process {peer} runs with {name} = {theirs.get(name)!r}, process "
          f"0 with {first.get(name)!r}"
          + (f" ({len(differ) - 1} more differ: {', '.join(differ[1:4])})"
             if len(differ) > 1 else "")
          + ". Start every process of the run with the same flags and "
          "--config.* overrides.")


@contextlib.contextmanager
def stop_if_peer_lost(workdir: str) -> Iterator[None]:
  """A collective that fails because another process died ends this one at
  once with a message (leaving would wait in jax's shutdown barrier for the
  dead peer); the newest checkpoint in `workdir` is where a rerun resumes."""
  import jax  # pylint: disable=g-import-not-at-top
  try:
    yield
  except jax.errors.JaxRuntimeError as e:
    if jax.process_count() == 1:
      raise
    first = str(e).strip().splitlines()[0][:300]
    print(f"paraflax: error: process {jax.process_index()} of "
          f"{jax.process_count()} stopped: another process of this run "
          f"failed or was killed ({first}). Rerun the same launch command "
          f"on every host; it resumes from the newest checkpoint in "
          f"{workdir}.", file=sys.stderr, flush=True)
    os._exit(EXIT_PEER_LOST)  # pylint: disable=protected-access
