"""`paraflax` on a GPU image that has jax but no TensorFlow.

The GPU machine this project is lent (lab/benchmarks/gpu/session.sh) has jax
with its CUDA plugin, flax, optax and orbax, but no tensorflow, seqio or
clu, and no network to install them (their wheels outweigh what a call may
carry). Two places of a training need TensorFlow, and this runner replaces
them, then runs the command line as `python -m paraflax.cli` would:

- `paraflax.data.tasks`: a catalogued Task's examples (whole or in chunks)
  are its corpus's rows read with `corpora.read`, which is what its seqio
  source yields, in the same order (tests/test_gpu_no_tf.py checks it for
  every Task the NMT and bilingual configs read), and its files are its
  corpus's; a data spec (`tsv:`, `lines:`) is read as `specs` reads it,
  and a back-translated Task (`register_backtranslated`, the pipeline's
  GRAN data) is streamed from its files as `tasks.iter_examples` streams
  it; any other Task name, and a seqio cache, stop with a message.
- the TensorBoard writer (clu, which writes through TensorFlow): off;
  `metrics.jsonl` is written as always.

A machine where `pip install -e '.[cuda]'` works needs none of this: run
`paraflax` itself.

  python lab/benchmarks/gpu/no_tf.py train --config configs/nmt.py:de --workdir W
"""
from __future__ import annotations

import os
import runpy
import sys
import types
from collections.abc import Iterator

from paraflax import errors
from paraflax.data import backtranslated
from paraflax.data import corpora
from paraflax.data import filters
from paraflax.data import shards
from paraflax.data import specs
from paraflax.training import metrics


# What each back-translated Task reads: (path, filter, max_pairs, seed).
_BACKTRANSLATED: dict[str, tuple] = {}


def register_backtranslated(path: str, data_filter: dict | None = None,
                            max_pairs: int = 0, seed: int = 0) -> str:
  """`tasks.register_backtranslated`: the same name, read as a stream."""
  spec = filters.parse(data_filter, max_pairs)
  path = os.path.abspath(path)
  name = backtranslated.task_name(path, spec, max_pairs, seed)
  _BACKTRANSLATED[name] = (path, spec, max_pairs, seed)
  return name


def _corpus(name: str, split: str, features: tuple[str, ...]
            ) -> tuple[corpora.Corpus, str]:
  """The corpus and split a catalogued Task (`NAME`, `NAME:SPLIT`) or a
  data spec (`tsv:`, `lines:`) reads, as `tasks.resolve` finds them."""
  if name in corpora.CORPORA:
    return corpora.get(name), split
  if specs.is_spec(name) or ":" in name:
    data = specs.parse(name, features, split)
    return data.corpus, data.split
  raise errors.ConfigError(
      f"{name!r}: without TensorFlow only catalogued Tasks, data specs and "
      "back-translated Tasks are read (lab/benchmarks/gpu/no_tf.py).")


def _backtranslated(name: str) -> str | None:
  """The registered back-translated Task `name` is, or None."""
  if name.startswith(backtranslated.PREFIX):
    return register_backtranslated(name[len(backtranslated.PREFIX):])
  return name if name in _BACKTRANSLATED else None


def examples(name: str, split: str, cache_dir: str | None = None,
             features: tuple[str, ...] = corpora.BITEXT
             ) -> list[dict[str, str | float]]:
  """The rows of Task `name` as `tasks.examples` returns them."""
  if cache_dir:
    raise errors.ConfigError(
        f"{name!r} with a cache: without TensorFlow no seqio cache is read "
        "(lab/benchmarks/gpu/no_tf.py).")
  if _backtranslated(name):
    return [row for chunk in iter_examples(name, split) for row in chunk]
  columns = corpora.read(*_corpus(name, split, features))
  return [dict(zip(columns, row)) for row in zip(*columns.values())]


def iter_examples(name: str, split: str,
                  features: tuple[str, ...] = corpora.BITEXT,
                  chunk: int = 4096) -> Iterator[list[dict[str, str | float]]]:
  """`examples` in lists of at most `chunk`, as `tasks.iter_examples`."""
  if bt := _backtranslated(name):
    yield from backtranslated.stream(*_BACKTRANSLATED[bt], chunk)
    return
  rows = examples(name, split, features=features)
  for start in range(0, len(rows), chunk):
    yield rows[start:start + chunk]


def source_files(name: str, split: str = "train",
                 features: tuple[str, ...] = corpora.BITEXT) -> list[str]:
  """The files Task `name` reads, as `tasks.source_files`."""
  if bt := _backtranslated(name):
    return shards.resolve(_BACKTRANSLATED[bt][0])
  return corpora.files(*_corpus(name, split, features))


def _without_tensorboard(init):
  def wrapped(self, *args, **kwargs):
    init(self, *args, **{**kwargs, "tensorboard": False})
  return wrapped


def install() -> None:
  """Puts the two replacements in place of the TensorFlow-bound code."""
  tasks = types.ModuleType("paraflax.data.tasks", __doc__)
  tasks.examples = examples
  tasks.iter_examples = iter_examples
  tasks.source_files = source_files
  tasks.register_backtranslated = register_backtranslated
  tasks.BACKTRANSLATED = backtranslated.PREFIX
  sys.modules["paraflax.data.tasks"] = tasks
  sys.modules["paraflax.data"].tasks = tasks
  metrics.MetricsWriter.__init__ = _without_tensorboard(
      metrics.MetricsWriter.__init__)


if __name__ == "__main__":
  install()
  runpy.run_module("paraflax.cli", run_name="__main__", alter_sys=True)
