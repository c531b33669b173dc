"""`paraflax train`: a config file's experiment, trained or resumed."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ml_collections

from paraflax import config as config_lib
from paraflax import files
from paraflax.recipes import config_check
from paraflax.recipes import workdir as workdir_lib


def _report(step: int, values: dict[str, float]) -> None:
  shown = ", ".join(f"{k}={v:.4f}" for k, v in values.items()
                    if not k.endswith("spearman"))
  print(f"step {step}: {shown}", flush=True)


def train(config: str | ml_collections.ConfigDict, workdir: str,
          overrides: Sequence[str] = (), **cluster: Any) -> None:
  """Trains `config` (a file, `file:arg`, or a ConfigDict) into `workdir`,
  resuming from its newest checkpoint; `overrides` are `--config.k=v`;
  `cluster`: one of several processes (`training.distributed.join`)."""
  config = config_lib.load(config, overrides) if isinstance(config, str) \
      else config_lib.override(config, overrides)
  config = workdir_lib.as_current(config)
  config_check.check(config, workdir)  # before the workdir is touched
  run(config, workdir, **cluster)


def run(config: ml_collections.ConfigDict, workdir: str, **cluster: Any
        ) -> None:
  """`train` of a config `config_check.check` passed for `workdir` (a
  pipeline or a sweep checks every config it trains before the first)."""
  from paraflax import recipes  # pylint: disable=g-import-not-at-top
  from paraflax.training import loop  # pylint: disable=g-import-not-at-top
  from paraflax.training import distributed as distributed_lib  # pylint: disable=g-import-not-at-top
  distributed_lib.join(**cluster)
  # One run writes a workdir: a second `train` on it stops here, before
  # it touches any file (the processes of one run share it; process 0
  # holds the lock for them).
  if distributed_lib.is_primary():
    files.lock_output(workdir)
  workdir_lib.check_same_experiment(workdir, config)
  distributed_lib.check_same_config(config.to_json())
  from paraflax.training import partitioning  # pylint: disable=g-import-not-at-top
  # The one mesh of the run: the recipe's batches and inference (dev BLEU,
  # embeddings) and the train step all use it.
  mesh = partitioning.config_mesh(config)
  with distributed_lib.stop_if_peer_lost(workdir):
    recipe = recipes.build(config, workdir, mesh)
    loop.train(recipe, config, workdir, on_eval=_report, mesh=mesh)
  files.release_output(workdir)  # a pipeline or sweep goes on without it
  print(f"done: {config.train_steps} steps in {workdir}", flush=True)
