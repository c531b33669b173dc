"""The n-best lists of a back-translation JSONL, one group per input
sentence (`id`), and a split of the groups by id.

Records are `paraflax backtranslate` output (or `score-paraphrases`
output, which adds `scores`): {"id", "reference", "translation", "rank",
...}. The reference-vs-translation classifier trains on them; a split by id
keeps a reference and its translations on the same side, so that no test
sentence was seen in training as the other class's partner.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from paraflax import errors
from paraflax.data import shards

KEYS = ("id", "reference", "translation", "rank")
SPLITS = ("train", "dev", "test")
_FIX = ("Give the output of `paraflax backtranslate` (or `paraflax "
        "score-paraphrases`), whose records have id, reference, translation "
        "and rank.")


class Group(NamedTuple):
  id: Any  # the record's `id`, as the file has it
  reference: str
  translations: tuple[str, ...]  # the n-best list, best (rank 0) first


def read_groups(path: str | os.PathLike) -> list[Group]:
  """The groups of `path` (a file, or the shards of a sharded output:
  `shards.resolve`) in the order their ids first appear; a bad line, or an
  id whose records disagree on the reference, stops with its line."""
  path = os.fspath(path)
  refs: dict[str, tuple[Any, str]] = {}
  ranked: dict[str, list[tuple[int, str]]] = {}
  for part, number, record in shards.numbered_jsonl(path, keys=KEYS,
                                                    fix=_FIX):
    key = repr(record["id"])  # ids may be numbers or strings, not lists
    first = refs.setdefault(key, (record["id"], record["reference"]))
    if first[1] != record["reference"]:
      raise errors.DataError(
          f"{part}:{number}: id {record['id']!r} has reference "
          f"{record['reference']!r}, but an earlier record of that id has "
          f"{first[1]!r}. Records of one id share their reference.")
    ranked.setdefault(key, []).append((int(record["rank"]),
                                       record["translation"]))
  if not refs:
    raise errors.DataError(f"{path}: no records. {_FIX}")
  return [Group(first[0], first[1], tuple(t for _, t in sorted(ranked[key])))
          for key, first in refs.items()]


def split_by_id(groups: Sequence[Group], dev_fraction: float,
                test_fraction: float, seed: int) -> dict[str, list[Group]]:
  """Train / dev / test groups: a permutation of the groups drawn by `seed`
  cut into ceil(fraction * N) test, then dev groups, the rest train; each
  part keeps file order."""
  if not (0 <= dev_fraction < 1 and 0 <= test_fraction < 1
          and dev_fraction + test_fraction < 1):
    raise errors.ConfigError(
        f"data.dev_fraction={dev_fraction}, data.test_fraction="
        f"{test_fraction}: use fractions >= 0 that sum to less than 1.")
  n = len(groups)
  order = np.random.default_rng(seed).permutation(n)
  n_test, n_dev = int(np.ceil(test_fraction * n)), int(np.ceil(
      dev_fraction * n))
  parts = {"test": order[:n_test], "dev": order[n_test:n_test + n_dev],
           "train": order[n_test + n_dev:]}
  if not len(parts["train"]):
    raise errors.DataError(
        f"{n} ids leave none to train on after dev_fraction={dev_fraction} "
        f"and test_fraction={test_fraction}; give more records or lower them.")
  return {name: [groups[i] for i in sorted(parts[name])] for name in SPLITS}
