"""What the stages' command tables are made of: `Command`, `flag`,
`setting`, and the flags several stages share.

Data, not code: `cli.py` builds the parser from the tables and calls
`target` ("module:function") with the parsed flags as keyword arguments.
This module imports nothing heavy, so `--help` answers at once.
"""
from __future__ import annotations

import argparse
import dataclasses
from typing import Any

Flag = tuple[tuple[str, ...], dict[str, Any]]
SETTING = "config."  # the argparse dest of a `setting` flag: config. + key


def flag(*names: str, **kwargs: Any) -> Flag:
  return names, kwargs


@dataclasses.dataclass(frozen=True)
class Command:
  target: str  # "module:function"
  help: str
  description: str
  flags: tuple[Flag, ...] = ()
  # Takes `--config FILE[:ARG]`, `--config.key=value` overrides and the
  # `setting` flags; the target gets the loaded ConfigDict as `config`.
  # True: --config is required; a path ("configs/mine.py", in the paraflax
  # checkout): the default --config.
  config: bool | str = False
  # "module:function" to call first, before the target's module is imported
  # (so before jax starts): process-wide settings that suit the command's
  # own process, which the library function leaves to its callers.
  prepare: str = ""
  # Runs jax programs: the CLI turns the compilation cache on first
  # (`paraflax.compile_cache`); False spares a command that never compiles
  # the import of jax.
  compiles: bool = True
  # What a Ctrl-C leaves for the same command to resume from (one sentence);
  # empty: the generic one (finished outputs are kept, none half-written).
  kept: str = ""
  # (flag, the flag it acts with): the first given without the second
  # (on the command line, or for a `setting`, in the config) is refused,
  # as it would change nothing.
  needs: tuple[tuple[str, str], ...] = ()


def setting(name: str, key: str | None = None, **kwargs: Any) -> Flag:
  """`name VALUE`, a shorthand for `--config.<key>=VALUE` that argparse
  types and checks (`key`: by default the flag's name, `--a-b` -> `a_b`).
  It has no default of its own: unless it is given, the config's value
  stands; given, it wins over the file and over --config.<key>."""
  key = key or name.lstrip("-").replace("-", "_")
  if "choices" not in kwargs and "action" not in kwargs:
    kwargs["metavar"] = key.rpartition(".")[2].upper()
  kwargs["help"] = f"{kwargs.get('help', '')} [config: {key}]".lstrip()
  return flag(name, dest=SETTING + key, default=argparse.SUPPRESS, **kwargs)


WORKDIR = flag("--workdir", required=True)
LANGS = (
    flag("--src-lang", required=True,
         help="language of the first column / --src (e.g. de)"),
    flag("--tgt-lang", required=True,
         help="language of the second column / --tgt (e.g. en)"))
CSLS_K = flag("--k", type=int, default=10,
              help="csls: nearest neighbours per sentence, counted among the "
              "other side's sentences given (default: 10)")
BILINGUAL_WORKDIR = flag("--workdir", required=True,
                         help="a bilingual workdir")
OVERWRITE = flag(
    "--overwrite", action="store_true",
    help="replace an output that holds the result of other settings or "
    "inputs (without it such a run stops and keeps it; a rerun with the same "
    "settings resumes or finds the output already written)")
FP16 = flag("--fp16", action="store_true",
            help="the embedding files hold float16")
CLUSTER = (  # one of several processes (hosts): training.distributed.join
    flag("--distributed", action="store_true",
         help="one of several processes (hosts) of one run: joins them "
         "with jax.distributed; on a TPU pod or under SLURM the peers are "
         "found by themselves, elsewhere give the three flags below (or "
         "their JAX_* environment variables); launch/local_processes.sh "
         "starts such a training run on one machine"),
    flag("--coordinator", metavar="HOST:PORT",
         help="process 0's address, the same for every process "
         "[env: JAX_COORDINATOR_ADDRESS]"),
    flag("--num-processes", type=int,
         help="how many processes the run has [env: JAX_NUM_PROCESSES]"),
    flag("--process-id", type=int,
         help="this process, 0 .. num-processes - 1 [env: JAX_PROCESS_ID]"),
    flag("--init-timeout", type=int, default=60, metavar="SECONDS",
         help="how long to wait for every process to join"),
    flag("--heartbeat-timeout", type=int, default=30, metavar="SECONDS",
         help="a process silent this long counts as dead, and the others "
         "stop with a message (rerun to resume)"),
)

# XLA:CPU's large temporaries (a mining tile, a train step's [B x T, V]
# logits and their gradient) would page-fault afresh in every execution:
# one NMT train step 360 -> 300 ms on 2 cores.
KEEP_FREED_MEMORY = "paraflax.host:keep_freed_memory"
