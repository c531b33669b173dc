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


@dataclasses.dataclass(frozen=True, slots=True)
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


def _bad(path: str, number: int | str, what: str) -> errors.DataError:
  return errors.DataError(
      f"{path}:{number}: {what}. Each line must read `e1 ||| e2 ||| score` "
      "with optional `||| name=value ...` (the tables of paraflax pivot); "
      "fix or remove the line.")


def parse_line(path: str, number: int | str, line: str) -> Entry:
  """One checked entry; `number` says where the line is (its number, or
  `byte N`)."""
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


def _number(path: str, number: int | str, text: str) -> float:
  try:
    value = float(text)
  except ValueError:
    value = math.nan
  if not math.isfinite(value):
    raise _bad(path, number, f"{text!r} is not a finite number")
  return value


def iter_table(path: str | os.PathLike) -> Iterator[Entry]:
  """The entries of a table in file order, one at a time, each line
  checked."""
  for number, line in enumerate(readers.iter_lines(path), start=1):
    yield parse_line(os.fspath(path), number, line)


def iter_groups(path: str | os.PathLike) -> Iterator[list[Entry]]:
  """The entries of each e1 together; the table must be sorted by e1 (as
  paraflax pivot writes it), else a `DataError`."""
  group: list[Entry] = []
  for entry in iter_table(path):
    if group and entry.e1 != group[0].e1:
      if entry.e1 < group[0].e1:
        raise errors.DataError(
            f"{os.fspath(path)}: {entry.e1!r} comes after {group[0].e1!r}: "
            "the table is not sorted by e1. Sort it (LC_ALL=C sort -s -t'|' "
            "-k1,1) or write it with paraflax pivot.")
      yield group
      group = []
    group.append(entry)
  if group:
    yield group



def _gzipped(path: str) -> bool:
  with open(path, "rb") as f:
    return f.read(2) == b"\x1f\x8b"


def _e1(raw: bytes) -> bytes:
  return raw.split(SEP.encode(), 1)[0].strip()


def entries_of(path: str | os.PathLike, e1: str) -> list[Entry]:
  """The entries of `e1` in a table sorted by e1, in file order. A plain
  file is searched by bisection over byte offsets (UTF-8 bytes sort as
  the code points `paraflax pivot` sorts by), a few reads whatever its
  size; a gzipped one is streamed up to e1. A bad line found by
  bisection is named by its byte offset."""
  path = os.fspath(path)
  if not os.path.isfile(path) or _gzipped(path):
    found = []
    for number, line in enumerate(readers.iter_lines(path), start=1):
      key = line.split(SEP, 1)[0].strip()
      if key == e1:
        found.append(parse_line(path, number, line))
      elif key > e1:
        break
    return found
  want = e1.encode("utf-8")
  with open(path, "rb") as f:
    def line_at(offset: int) -> tuple[int, bytes]:
      """The first line that starts at `offset` or after, and its start."""
      if offset:
        f.seek(offset - 1)
        f.readline()
      else:
        f.seek(0)
      return f.tell(), f.readline()

    lo, hi = 0, os.fstat(f.fileno()).st_size
    while lo < hi:
      mid = (lo + hi) // 2
      raw = line_at(mid)[1]
      if not raw or _e1(raw) >= want:
        hi = mid
      else:
        lo = mid + 1
    start, raw = line_at(lo)
    found = []
    while raw and _e1(raw) == want:
      found.append(parse_line(path, f"byte {start}",
                              raw.decode("utf-8").rstrip("\r\n")))
      start, raw = f.tell(), f.readline()
  return found
