"""A mining benchmark and its files: src.txt, tgt.txt (a sentence a line),
gold.tsv (`src_idx<TAB>tgt_idx`, 0-based) and a README of how it was built;
read back with their checks, or read from BUCC's files. `mining_set.py`
builds them."""
from __future__ import annotations

import dataclasses
import os

from paraflax import errors
from paraflax import files
from paraflax.data import readers

Pair = tuple[int, int]
FILES = ("src.txt", "tgt.txt", "gold.tsv", "README")


@dataclasses.dataclass(frozen=True)
class MiningSet:
  """A benchmark: line i of `src` / `tgt`, the gold (src, tgt) line pairs
  (0-based) and how it was built (the README text)."""
  src: list[str]
  tgt: list[str]
  gold: frozenset[Pair]
  recipe: str


def write(mining_set: MiningSet, folder: str | os.PathLike, *,
          overwrite: bool = False) -> None:
  """src.txt, tgt.txt, gold.tsv and README in `folder`, each atomically
  (`files.write_all_once`: files of another set are refused, before any
  is written, unless `overwrite`)."""
  folder = os.fspath(folder)
  gold = "".join(f"{s}\t{t}\n" for s, t in sorted(mining_set.gold))
  texts = ("".join(l + "\n" for l in mining_set.src),
           "".join(l + "\n" for l in mining_set.tgt), gold, mining_set.recipe)
  files.write_all_once({os.path.join(folder, name): text
                        for name, text in zip(FILES, texts)},
                       overwrite=overwrite)


def _index(path: str, number: int, text: str, lines: int | None,
           side: str) -> int:
  try:
    value = int(text)
  except ValueError as e:
    raise errors.DataError(f"{path}:{number}: {side} index {text!r} is not "
                           "an integer; lines are `src_idx<TAB>tgt_idx`.") \
        from e
  if value < 0 or (lines is not None and value >= lines):
    bound = "" if lines is None else f" < {lines}, the {side} line count"
    raise errors.DataError(f"{path}:{number}: {side} index {value} is out of "
                           f"range; indices are 0-based line numbers, >= 0"
                           f"{bound}.")
  return value


def read_gold(path: str | os.PathLike, src_lines: int | None = None,
              tgt_lines: int | None = None) -> frozenset[Pair]:
  """The pairs of a gold.tsv (`src_idx<TAB>tgt_idx`, 0-based), checked
  against the line counts when given."""
  path = os.fspath(path)
  rows, numbers = readers.read_tsv(path, fields=2)
  gold: dict[Pair, int] = {}
  for (s, t), number in zip(rows, numbers):
    pair = (_index(path, number, s, src_lines, "src"),
            _index(path, number, t, tgt_lines, "tgt"))
    if pair in gold:
      raise errors.DataError(f"{path}:{number}: pair {pair} repeats line "
                             f"{gold[pair]}; list each pair once.")
    gold[pair] = number
  if not gold:
    raise errors.DataError(f"{path}: no gold pairs; recall is undefined.")
  return frozenset(gold)


def read(folder: str | os.PathLike) -> MiningSet:
  """A benchmark written by `write` (the README is optional)."""
  folder = os.fspath(folder)
  src, _ = readers.read_lines(os.path.join(folder, "src.txt"))
  tgt, _ = readers.read_lines(os.path.join(folder, "tgt.txt"))
  gold = read_gold(os.path.join(folder, "gold.tsv"), len(src), len(tgt))
  readme = os.path.join(folder, "README")
  recipe = ""
  if os.path.isfile(readme):
    with open(readme, encoding="utf-8") as f:
      recipe = f.read()
  return MiningSet(src, tgt, gold, recipe)


def _bucc_side(path: str) -> tuple[list[str], dict[str, int]]:
  rows, numbers = readers.read_tsv(path, fields=2)
  index: dict[str, int] = {}
  for (name, _), number in zip(rows, numbers):
    if name in index:
      raise errors.DataError(f"{path}:{number}: id {name!r} given twice; "
                             "BUCC ids name one sentence each.")
    index[name] = len(index)
  return [text for _, text in rows], index


def read_bucc(src: str, tgt: str, gold: str) -> MiningSet:
  """A benchmark in BUCC's format: `ID<TAB>sentence` files per side and a
  gold file of `src_id<TAB>tgt_id` lines."""
  src_texts, src_ids = _bucc_side(src)
  tgt_texts, tgt_ids = _bucc_side(tgt)
  rows, numbers = readers.read_tsv(gold, fields=2)
  pairs = set()
  for (s, t), number in zip(rows, numbers):
    for name, ids, side in ((s, src_ids, src), (t, tgt_ids, tgt)):
      if name not in ids:
        raise errors.DataError(f"{gold}:{number}: id {name!r} is not in "
                               f"{side}; the gold file pairs ids of the "
                               "two sentence files.")
    pairs.add((src_ids[s], tgt_ids[t]))
  recipe = (f"Mining benchmark read from BUCC files {src}, {tgt} and "
            f"{gold}: {len(src_texts)} x {len(tgt_texts)} sentences, "
            f"{len(pairs)} gold pairs.\n")
  return MiningSet(src_texts, tgt_texts, frozenset(pairs), recipe)
