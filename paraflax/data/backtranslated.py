"""The records a `backtranslated:FILE` Task reads, streamed from the file
(or the shards of a sharded output): each record of rank 0 as
(reference, 1-best translation, the score `data.filter` bounds), in file
order. The Task's seqio dataset (`dataset`, through the filter's
preprocessors) and the training stream (`stream`) read them as the file
is read, so memory does not grow with it.
"""
from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
from collections.abc import Iterator
from typing import TypeVar

import numpy as np

from paraflax import errors
from paraflax import quiet
from paraflax.data import corpora
from paraflax.data import filters
from paraflax.data import shards

T = TypeVar("T")
# A Task name of this prefix is a back-translation JSONL (or shards).
PREFIX = "backtranslated:"
_BATCH = 4096


def score_of(path: str, line: int, record: dict, score: str) -> float:
  """The `score` a filter bounds of the record on line `line` of `path`."""
  if score == "cost" and record.get("cost", 0.0) is None:
    raise errors.DataError(
        f"{path}:{line}: scores.cost is null: human pairs (paraflax "
        "export-pairs) have no NMT cost to filter on. Use another score.")
  try:
    return float(record["scores"][score])
  except (KeyError, TypeError) as e:
    raise errors.DataError(
        f"{path}:{line}: the record has no scores.{score}, which data.filter "
        "bounds. Score the file first (paraflax score-paraphrases --input "
        f"{path} --output SCORED.jsonl) and train on SCORED.jsonl.") from e


def _best(path: str, score: str | None
          ) -> Iterator[tuple[str, str, float | None]]:
  """(reference, 1-best translation, its `score` or None) of each record
  of rank 0 of `path` (a file, or the shards of a sharded output as one),
  in file order, read as a stream."""
  for part, line, r in shards.numbered_jsonl(
      path, keys=("reference", "translation", "rank")):
    if r["rank"] == 0:
      yield (r["reference"], r["translation"],
             score_of(part, line, r, score) if score else None)


# The DataError that stopped a generator under tf.data, which reaches the
# dataset's reader as a tf error: `data_errors` raises it instead, its
# message naming the file and line.
_GENERATOR_ERRORS: list[errors.DataError] = []


@contextlib.contextmanager
def data_errors() -> Iterator[None]:
  _GENERATOR_ERRORS.clear()
  try:
    yield
  except quiet.tensorflow().errors.OpError as e:  # only tf.data's readers
    if not _GENERATOR_ERRORS:
      raise
    raise _GENERATOR_ERRORS.pop() from e


def kept_errors(chunks: Iterator[T]) -> Iterator[T]:
  """`chunks`, a DataError they raise kept for `data_errors` (a tf.data
  generator's error reaches the dataset's reader as a tf error)."""
  try:
    yield from chunks
  except errors.DataError as e:
    _GENERATOR_ERRORS.append(e)
    raise


def _best_columns(path: str, score: str | None
                  ) -> Iterator[dict[str, np.ndarray]]:
  """`_best` as the Task's columns, `_BATCH` rows at a time."""
  rows = _best(path, score)
  while chunk := list(itertools.islice(rows, _BATCH)):
    s1, s2, values = zip(*chunk)
    columns = {"sentence1": np.array(s1, object),
               "sentence2": np.array(s2, object)}
    if score:
      columns[filters.SCORE] = np.array(values, np.float64)
    yield columns


def task_name(path: str, spec: filters.Filter | None, max_pairs: int,
              seed: int) -> str:
  """The registered name of the Task of `path` through `spec` and the
  draw of `max_pairs` with `seed`: it differs with any of the four."""
  path = os.path.abspath(path)
  key = json.dumps([path, spec, max_pairs, seed]) if spec or max_pairs \
      else path  # unfiltered: the name it always had
  return "paraphrase_en_bt_" + hashlib.sha256(key.encode()).hexdigest()[:12]


def dataset(path: str, score: str | None, split: str, shuffle_files: bool,
            seed: int | None = None) -> "tf.data.Dataset":
  """The Task's source (seqio's FunctionDataSource): its examples read
  from the file as the dataset is iterated, SCORE with them when a filter
  bounds `score`."""
  # seqio's caching passes a seed; the records are read in file order.
  del split, shuffle_files, seed
  tf = quiet.tensorflow()  # here: the streamed reading needs no TensorFlow
  signature = {f: tf.TensorSpec([None], tf.string)
               for f in corpora.PARAPHRASE}
  if score:  # float64: the bounds compare as they read in the config
    signature[filters.SCORE] = tf.TensorSpec([None], tf.float64)
  return tf.data.Dataset.from_generator(
      lambda: kept_errors(_best_columns(path, score)),
      output_signature=signature).unbatch()


def stream(path: str, spec: filters.Filter | None, max_pairs: int, seed: int,
           chunk: int) -> Iterator[list[dict[str, str]]]:
  """The Task's examples in its order, `chunk` at a time, read as a
  stream: the bounds, then the draw of `max_pairs` (`filters.draw`, over
  a first pass that counts what the bounds keep)."""
  score = spec.score if spec is not None and spec.bounded else None

  def kept() -> Iterator[tuple[str, str]]:
    for s1, s2, value in _best(path, score):
      if not score or spec.lo <= value <= spec.hi:
        yield s1, s2

  mask = None
  if max_pairs:
    count = sum(1 for _ in kept())
    mask = filters.draw(count, n=max_pairs, seed=seed,
                        what=filters.described(spec, path))
  out = []
  for i, (s1, s2) in enumerate(kept()):
    if mask is not None and not mask[i]:
      continue
    out.append({"sentence1": s1, "sentence2": s2})
    if len(out) == chunk:
      yield out
      out = []
  if out:
    yield out
