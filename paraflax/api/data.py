"""The corpora and seqio Tasks from Python: their names, a Task, its
examples, where the corpora are read and their download."""
from __future__ import annotations

import os
import pathlib
from typing import Any

from paraflax import errors


def tasks() -> dict[str, str]:
  """The registered seqio Task and Mixture names, each with its features and
  splits (`paraflax tasks`); nothing heavy is loaded."""
  from paraflax.data import corpora  # pylint: disable=g-import-not-at-top
  return corpora.catalogue()


def task(name: str) -> Any:
  """The seqio Task (or Mixture) `name`, registered first (loads
  TensorFlow)."""
  from paraflax.data import tasks as tasks_lib  # pylint: disable=g-import-not-at-top
  tasks_lib.register()
  import seqio  # pylint: disable=g-import-not-at-top
  if name in seqio.MixtureRegistry.names():
    return seqio.MixtureRegistry.get(name)
  if name not in seqio.TaskRegistry.names():
    raise errors.ConfigError(f"unknown Task or Mixture {name!r}; "
                             "paraflax.tasks() lists them.")
  return seqio.TaskRegistry.get(name)


def examples(name: str, split: str) -> list[dict[str, str | float]]:
  """All examples of a Task or Mixture's `split` in file order, as dicts of
  Python strings (and a float STS `score`)."""
  from paraflax.data import tasks as tasks_lib  # pylint: disable=g-import-not-at-top
  return tasks_lib.examples(name, split)


def data_dir() -> pathlib.Path:
  """Where the corpora are read: $PARAFLAX_DATA_DIR, else ../shared/data
  beside the checkout (it may not exist)."""
  from paraflax.data import paths  # pylint: disable=g-import-not-at-top
  return paths.data_dir()


def fetch_data(root: str | os.PathLike, mirror: str | None = None
               ) -> pathlib.Path:
  """Downloads the public corpora a de-en model and its mining benchmark
  need (Multi30k, WMT news test sets) into `root`, checked by sha256, and
  returns it: set PARAFLAX_DATA_DIR to it. `mirror`: a base URL serving
  the same files (see `paraflax.data.download`)."""
  from paraflax.data import download  # pylint: disable=g-import-not-at-top
  return download.fetch(root, mirror)
