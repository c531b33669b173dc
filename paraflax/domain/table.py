"""PPDB-like paraphrase tables: `e1 ||| e2 ||| score [||| name=value ...]`.

Lines are sorted by e1, then by score (highest first). The score is the
table's own ranking (p(e2|e1) for `paraflax pivot`); named features, if
any, are other rankings of the same pairs (`paraflax monods` writes p and
monods there).
"""
from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterator, Sequence

from paraflax import errors
from paraflax.data import readers

SEP = " ||| "


@dataclasses.dataclass(frozen=True)
class Entry:
  e1: str
  e2: str
  score: float
  features: dict[str, float] = dataclasses.field(default_factory=dict)


def format_line(e1: str, e2: str, score: float,
                features: Sequence[tuple[str, float]] = ()) -> str:
  fields = [e1, e2, f"{score:.6g}"]
  if features:
    fields.append(" ".join(f"{k}={v:.6g}" for k, v in features))
  return SEP.join(fields) + "\n"


def _bad(path: str, number: int, what: str) -> errors.DataError:
  return errors.DataError(
      f"{path}:{number}: {what}. Each line must read `e1 ||| e2 ||| score` "
      "with optional `||| name=value ...` (the tables of paraflax pivot); "
      "fix or remove the line.")


def parse_line(path: str, number: int, line: str) -> Entry:
  fields = line.rstrip("\n").split(" ||| ")
  if len(fields) not in (3, 4):
    raise _bad(path, number, f"{len(fields) - 1} ' ||| ' separator(s), "
               "expected 2 or 3")
  e1, e2, score = (f.strip() for f in fields[:3])
  if not e1 or not e2:
    raise _bad(path, number, "an empty phrase")
  features = {}
  for item in fields[3].split() if len(fields) == 4 else ():
    name, eq, raw = item.partition("=")
    if not eq or not name:
      raise _bad(path, number, f"feature {item!r} is not name=value")
    features[name] = _number(path, number, raw)
  return Entry(e1, e2, _number(path, number, score), features)


def _number(path: str, number: int, text: str) -> float:
  try:
    value = float(text)
  except ValueError:
    value = math.nan
  if not math.isfinite(value):
    raise _bad(path, number, f"{text!r} is not a finite number")
  return value


def iter_table(path: str | os.PathLike) -> Iterator[Entry]:
  """The entries of a table in file order, each line checked."""
  path = os.fspath(path)
  lines, _ = readers.read_lines(path, fix="Remove them: every line is one "
                                "paraphrase pair.")
  for number, line in enumerate(lines, start=1):
    yield parse_line(path, number, line)


def read_table(path: str | os.PathLike) -> dict[str, list[Entry]]:
  """e1 -> its entries in file order; the whole table is checked before
  the caller writes anything."""
  out: dict[str, list[Entry]] = {}
  for entry in iter_table(path):
    out.setdefault(entry.e1, []).append(entry)
  if not out:
    raise errors.DataError(f"{os.fspath(path)}: the table has no lines.")
  return out
