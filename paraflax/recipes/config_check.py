"""The one check of a training config, before any work.

`check` is called once by every command that trains from a config
(`paraflax train`, `sweep`, `pipeline`, `train-mlp`, `eval-filtering`,
`compile`, `paraflax.train`): the ranges of its sizes and rates
(`settings.RULES`), its step counts and intervals, its family's own keys
(data specs, Tasks, evaluators; each recipe module's `check`) and, given a
workdir, that the workdir can be written and holds no other experiment.
What runs after it (the recipe's `build`, the train loop) trusts the config.
"""
from __future__ import annotations

import types
from typing import Any

import ml_collections

from paraflax import errors
from paraflax.recipes import settings
from paraflax.recipes import workdir as workdir_lib


def check(config: ml_collections.ConfigDict, workdir: str | None = None, *,
          family: types.ModuleType | None = None, files: bool = True
          ) -> None:
  """ConfigError (or DataError) on the first problem of `config`, before
  anything is written. `family`: the module of its recipe (default: that of
  `config.recipe`, `recipes.family`); `files=False` leaves the files its
  data specs name unlisted (`paraflax compile` reads no data); `workdir`:
  also that it is writable and holds no run of another config."""
  settings.check(config)
  if family is None:
    from paraflax import recipes  # pylint: disable=g-import-not-at-top
    family = recipes.family(config)
  check_intervals(config, family.updates_per_call(config))
  family.check(config, files)
  if workdir is not None:
    workdir_lib.check_writable(workdir)
    workdir_lib.check_resumable(workdir, config)


def check_intervals(config: Any, updates_per_call: int) -> None:
  """Counts in range (`check_counts`), and steps that advance by
  `updates_per_call`: every interval must land on one."""
  check_counts(config)
  named = {k: v for k, v in _counts(config).items()
           if k != "checkpoint.keep" and v is not None}
  bad = [k for k, v in named.items() if v % updates_per_call]
  if bad:
    raise errors.ConfigError(
        f"{', '.join(bad)} must be multiples of {updates_per_call} (one "
        "train step makes that many updates, e.g. a megabatch); now "
        + ", ".join(f"{k}={named[k]}" for k in bad) + ".")


def _counts(config: Any) -> dict[str, int | None]:
  """The loop's counts; train_steps is None where the data decides it
  (an MLP similarity's epochs)."""
  return {"train_steps": config.get("train_steps"),
          "checkpoint.keep": config.checkpoint.keep,
          "log_every": config.log_every, "eval_every": config.eval_every,
          "checkpoint.every": config.checkpoint.every}


def check_counts(config: Any) -> None:
  """At least one step and one kept checkpoint; an interval of 0 means
  only at the last step."""
  least = {"train_steps": 1, "checkpoint.keep": 1, "log_every": 0,
           "eval_every": 0, "checkpoint.every": 0}
  bad = [f"{k}={v} (use >= {least[k]})" for k, v in _counts(config).items()
         if v is not None and v < least[k]]
  if bad:
    raise errors.ConfigError(
        f"{', '.join(bad)}: set --config.<key> to a count in range; an "
        "interval of 0 logs, evaluates or saves only at the last step.")
