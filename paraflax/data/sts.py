"""The STS evaluation sets: SemEval STS 2012-2015, STS Benchmark, SICK.

Each set is a list of sentence pairs with gold scores; rows without a gold
score (SemEval 2015 leaves many empty) are kept out of `scored()`.
"""
from __future__ import annotations

import dataclasses
import pathlib

import numpy as np

from paraflax import errors
from paraflax.data import paths
from paraflax.data import readers

# SemEval subsets present in the data (2012 MSRvid and 2013 SMT are missing
# upstream, see sts/DATA.md).
SEMEVAL = {
    "STS12": ("MSRpar", "OnWN", "SMTeuroparl", "SMTnews"),
    "STS13": ("FNWN", "OnWN", "headlines"),
    "STS14": ("deft-forum", "deft-news", "headlines", "images", "OnWN",
              "tweet-news"),
    "STS15": ("answers-forums", "answers-students", "belief", "headlines",
              "images"),
}
MISSING = ("STS12.MSRvid", "STS13.SMT")
OVERLAP_FILE = "OVERLAP_with_heldout_STS2016.tsv"


@dataclasses.dataclass(frozen=True)
class StsSet:
  name: str   # e.g. "STS14.images", "STSb.dev", "SICK.trial"
  group: str  # e.g. "STS14", "STSb", "SICK"
  sentence1: tuple[str, ...]
  sentence2: tuple[str, ...]
  scores: np.ndarray  # NaN where there is no gold score
  lines: tuple[int, ...]  # 1-based line numbers in the source file

  def scored(self) -> np.ndarray:
    return ~np.isnan(self.scores)

  def without_lines(self, excluded: set[int]) -> "StsSet":
    keep = [i for i, n in enumerate(self.lines) if n not in excluded]
    return dataclasses.replace(
        self, sentence1=tuple(self.sentence1[i] for i in keep),
        sentence2=tuple(self.sentence2[i] for i in keep),
        scores=self.scores[keep], lines=tuple(self.lines[i] for i in keep))


def _make(name: str, group: str, path: pathlib.Path,
          rows: list[tuple[str, ...]], numbers: list[int],
          s1: int, s2: int, score: int) -> StsSet:
  scores = [readers.parse_score(str(path), n, r[score])
            for r, n in zip(rows, numbers)]
  return StsSet(name, group, tuple(r[s1] for r in rows),
                tuple(r[s2] for r in rows), np.asarray(scores, np.float64),
                tuple(numbers))


def load_semeval(year: str, subset: str, root: pathlib.Path) -> StsSet:
  path = root / "semeval_sts" / f"20{year[-2:]}" / f"{subset}.test.tsv"
  rows, numbers = readers.read_tsv(path, fields=3)
  return _make(f"{year}.{subset}", year, path, rows, numbers, 1, 2, 0)


def load_stsb(split: str, root: pathlib.Path) -> StsSet:
  path = root / "stsbenchmark" / f"sts-{split}.csv"
  # Tab-separated despite the name; some lines carry two source columns.
  rows, numbers = readers.read_tsv(path, fields=7, allow_extra=True)
  return _make(f"STSb.{split}", "STSb", path, rows, numbers, 5, 6, 4)


def load_sick(split: str, root: pathlib.Path) -> StsSet:
  path = root / "sick2014" / f"SICK_{split}.txt"
  rows, numbers = readers.read_tsv(path, fields=5, header=True)
  return _make(f"SICK.{split}", "SICK", path, rows, numbers, 1, 2, 3)


def stsb_overlap(split: str, root: pathlib.Path) -> set[int]:
  """STSb line numbers (1-based) that are pairs of held-out STS 2016."""
  path = root / "stsbenchmark" / OVERLAP_FILE
  lines, _ = readers.read_lines(path)
  out = set()
  for number, line in enumerate(lines, start=1):
    if line.startswith("#") or line.startswith("split\t"):
      continue
    cols = line.split("\t")
    if len(cols) < 2 or not cols[1].isdigit():
      raise errors.DataError(f"{path}:{number}: expected `split<TAB>line`.")
    if cols[0] == split:
      out.add(int(cols[1]))
  return out


def load(name: str, root: pathlib.Path | None = None) -> StsSet:
  """One set by name: `STS14.images`, `STSb.dev`, `SICK.trial`, ...

  `STSb.<split>-tuning` is that split without the lines that overlap held-out
  STS 2016, the only form allowed for model selection.
  """
  root = root or paths.data_path("sts")
  group, _, subset = name.partition(".")
  if group in SEMEVAL and subset in SEMEVAL[group]:
    return load_semeval(group, subset, root)
  if group == "STSb" and subset.endswith("-tuning"):
    split = subset.removesuffix("-tuning")
    return dataclasses.replace(
        load_stsb(split, root).without_lines(stsb_overlap(split, root)),
        name=name)
  if group == "STSb" and subset in ("train", "dev", "test"):
    return load_stsb(subset, root)
  if group == "SICK" and subset in ("train", "trial"):
    return load_sick(subset, root)
  raise errors.DataError(
      f"unknown STS set {name!r}. Known: {', '.join(all_names())}, and "
      "STSb.<split>-tuning.")


def all_names() -> list[str]:
  names = [f"{y}.{s}" for y, subsets in SEMEVAL.items() for s in subsets]
  return names + ["STSb.dev", "STSb.test", "SICK.train", "SICK.trial"]
