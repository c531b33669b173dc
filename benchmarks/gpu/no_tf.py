"""`paraflax` on a GPU image that has jax but no TensorFlow.

The GPU machine this project is lent (benchmarks/gpu/session.sh) has jax
with its CUDA plugin, flax, optax and orbax, but no tensorflow, seqio or
clu, and no network to install them (their wheels outweigh what a call may
carry). Two places of a training need TensorFlow, and this runner replaces
them, then runs the command line as `python -m paraflax.cli` would:

- `paraflax.data.tasks`: a catalogued Task's examples (whole or in chunks)
  are its corpus's rows read with `corpora.read`, which is what its seqio
  source yields, in the same order (tests/test_gpu_no_tf.py checks it for
  every Task the NMT and bilingual configs read), and its files are its
  corpus's; any other Task name stops with a message.
- the TensorBoard writer (clu, which writes through TensorFlow): off;
  `metrics.jsonl` is written as always.

A machine where `pip install -e '.[cuda]'` works needs none of this: run
`paraflax` itself.

  python benchmarks/gpu/no_tf.py train --config configs/nmt.py:de --workdir W
"""
from __future__ import annotations

import runpy
import sys
import types
from collections.abc import Iterator

from paraflax import errors
from paraflax.data import corpora
from paraflax.training import metrics


def examples(name: str, split: str, cache_dir: str | None = None
             ) -> list[dict[str, str | float]]:
  """The rows of catalogued Task `name` as `tasks.examples` returns them."""
  if cache_dir or name not in corpora.CORPORA:
    raise errors.ConfigError(
        f"{name!r}{' with a cache' if cache_dir else ''}: without TensorFlow "
        "only catalogued Tasks are read (benchmarks/gpu/no_tf.py).")
  columns = corpora.read(corpora.get(name), split)
  return [dict(zip(columns, row)) for row in zip(*columns.values())]


def iter_examples(name: str, split: str, features=None, chunk: int = 4096
                  ) -> Iterator[list[dict[str, str | float]]]:
  """`examples` in lists of at most `chunk`, as `tasks.iter_examples`."""
  del features  # a catalogued Task's own
  rows = examples(name, split)
  for start in range(0, len(rows), chunk):
    yield rows[start:start + chunk]


def source_files(name: str, split: str = "train") -> list[str]:
  """The files catalogued Task `name` reads, as `tasks.source_files`."""
  return corpora.files(corpora.get(name), split)


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
  sys.modules["paraflax.data.tasks"] = tasks
  sys.modules["paraflax.data"].tasks = tasks
  metrics.MetricsWriter.__init__ = _without_tensorboard(
      metrics.MetricsWriter.__init__)


if __name__ == "__main__":
  install()
  runpy.run_module("paraflax.cli", run_name="__main__", alter_sys=True)
