"""Readers for the text formats paraflax consumes, with validation.

Every reader stops on bad input with a `DataError` naming the file, the line
and the fix. Empty lines are counted and reported; they are dropped only when
the caller asks for it (`empty="drop"`), never silently. Every file is
normalised the same way, with a warning naming it: a UTF-8 byte-order mark
at its start is removed, and so is the CR of CRLF (Windows) line endings.
"""
from __future__ import annotations

import codecs
import dataclasses
import gzip
import itertools
import json
import logging
import math
import os
from collections.abc import Iterator, Sequence
from typing import Literal

from paraflax import errors

EmptyPolicy = Literal["error", "drop", "keep"]
_GZIP_MAGIC = b"\x1f\x8b"
_SHOWN = 5  # how many offending line numbers an error message lists


@dataclasses.dataclass(frozen=True)
class ReadReport:
  """What a reader saw besides the rows it returned."""
  path: str
  lines: int
  empty_lines: tuple[int, ...] = ()  # 1-based line numbers
  dropped: int = 0


def _line_list(numbers: Sequence[int]) -> str:
  shown = ", ".join(str(n) for n in numbers[:_SHOWN])
  more = len(numbers) - _SHOWN
  return shown + (f" (and {more} more)" if more > 0 else "")


def _check_readable(path: str) -> None:
  if not os.path.exists(path):
    raise errors.DataError(f"{path}: file not found. Check the path, or set "
                    "PARAFLAX_DATA_DIR to the folder that holds the corpora.")
  if os.path.isdir(path):
    raise errors.DataError(f"{path}: is a directory, expected a text file.")


def _corrupt_gzip(path: str, e: Exception) -> errors.DataError:
  return errors.DataError(f"{path}: corrupt gzip file ({e}). Re-download or "
                          "re-compress it.")


def _read_bytes(path: str | os.PathLike) -> bytes:
  path = os.fspath(path)
  _check_readable(path)
  with open(path, "rb") as f:
    raw = f.read()
  if raw[:2] == _GZIP_MAGIC:
    try:
      raw = gzip.decompress(raw)
    except (OSError, EOFError) as e:
      raise _corrupt_gzip(path, e) from e
  return raw


def _decode(path: str, number: int, line: bytes) -> str:
  try:
    return line.decode("utf-8")
  except UnicodeDecodeError as e:
    raise errors.DataError(
        f"{path}:{number}: invalid UTF-8 (byte 0x{line[e.start]:02x} at "
        f"column {e.start + 1}). Re-encode the file as UTF-8, e.g. "
        f"`iconv -f latin1 -t utf-8 {os.path.basename(path)}`.") from e


def _decode_lines(path: str, raw: bytes) -> list[str]:
  if raw.startswith(codecs.BOM_UTF8):
    raw = raw[len(codecs.BOM_UTF8):]
    logging.warning("%s: removed the UTF-8 byte-order mark at its start",
                    path)
  lines = raw.split(b"\n")
  if lines and lines[-1] == b"":
    lines.pop()
  out = [_decode(path, number, line)
         for number, line in enumerate(lines, start=1)]
  crlf = [n for n, text in enumerate(out, start=1) if text.endswith("\r")]
  if crlf:
    out = [text.removesuffix("\r") for text in out]
    logging.warning("%s: %d line(s) end with CRLF (Windows), read without "
                    "the CR, at line %s", path, len(crlf), _line_list(crlf))
  return out


def read_lines(path: str | os.PathLike, *, empty: EmptyPolicy = "error",
               fix: str = "Remove them: every line is one item."
               ) -> tuple[list[str], ReadReport]:
  """Reads a UTF-8 text file (gzipped or not), one item per line; `fix`
  ends the message on empty lines with what the caller's user can do."""
  path = os.fspath(path)
  lines = _decode_lines(path, _read_bytes(path))
  empties = tuple(i for i, l in enumerate(lines, start=1) if not l.strip())
  report = ReadReport(path, len(lines), empties)
  if not empties or empty == "keep":
    return lines, report
  if empty == "error":
    raise errors.DataError(
        f"{path}: {len(empties)} empty line(s) at line {_line_list(empties)}. "
        + fix)
  kept = [l for l in lines if l.strip()]
  logging.warning("%s: dropped %d empty line(s) at line %s", path,
                  len(empties), _line_list(empties))
  return kept, dataclasses.replace(report, dropped=len(empties))


def read_parallel(paths: Sequence[str | os.PathLike], *,
                  empty: EmptyPolicy = "error",
                  fix: str = "Remove those rows from every side."
                  ) -> tuple[list[tuple[str, ...]], list[ReadReport]]:
  """Reads line-aligned files; row i holds line i of every file.

  With `empty="drop"` a row is dropped when any side is empty, so the
  alignment of the remaining rows is kept.
  """
  paths = [os.fspath(p) for p in paths]
  sides = [read_lines(p, empty="keep")[0] for p in paths]
  counts = [len(s) for s in sides]
  if len(set(counts)) > 1:
    shortest = min(range(len(paths)), key=counts.__getitem__)
    longest = max(range(len(paths)), key=counts.__getitem__)
    raise errors.DataError(
        f"{paths[longest]} has {counts[longest]} lines but "
        f"{paths[shortest]} has {counts[shortest]}: parallel files must be "
        f"line-aligned. Line {counts[shortest] + 1} of {paths[longest]} has "
        "no partner; fix the alignment (or pass the right pair of files).")
  rows = list(zip(*sides))
  reports = []
  for path, side in zip(paths, sides):
    empties = tuple(i for i, l in enumerate(side, start=1) if not l.strip())
    reports.append(ReadReport(path, len(side), empties))
  bad = sorted({n for r in reports for n in r.empty_lines})
  if not bad or empty == "keep":
    return rows, reports
  if empty == "error":
    where = "; ".join(f"{r.path} line {_line_list(r.empty_lines)}"
                      for r in reports if r.empty_lines)
    raise errors.DataError(
        f"{len(bad)} empty line(s) in parallel files: {where}. " + fix)
  bad_set = set(bad)
  kept = [r for i, r in enumerate(rows, start=1) if i not in bad_set]
  logging.warning("%s: dropped %d row(s) with an empty side at line %s",
                  " + ".join(paths), len(bad), _line_list(bad))
  return kept, [dataclasses.replace(r, dropped=len(bad)) for r in reports]


def iter_parallel(paths: Sequence[str | os.PathLike]
                  ) -> Iterator[tuple[str, ...]]:
  """`read_parallel(paths, empty="drop")` one row at a time, for bitexts
  that may not fit in memory: a row with an empty side is dropped (a
  warning at the end counts them); a file that ends before the others
  stops at the first row without a partner."""
  paths = [os.fspath(p) for p in paths]
  dropped = 0
  for number, row in enumerate(itertools.zip_longest(
      *(iter_lines(p) for p in paths)), start=1):
    if None in row:
      short = paths[row.index(None)]
      raise errors.DataError(
          f"{short} has {number - 1} lines but another of {', '.join(paths)} "
          f"has more: parallel files must be line-aligned. Line {number} "
          "has no partner; fix the alignment (or pass the right files).")
    if all(side.strip() for side in row):
      yield row
    else:
      dropped += 1
  if dropped:
    logging.warning("%s: dropped %d row(s) with an empty side",
                    " + ".join(paths), dropped)


def read_tsv(path: str | os.PathLike, *, fields: int,
             allow_extra: bool = False, header: bool = False,
             empty: EmptyPolicy = "error"
             ) -> tuple[list[tuple[str, ...]], list[int]]:
  """Reads a tab-separated file into rows of exactly `fields` columns.

  Returns the rows and their 1-based line numbers. With `allow_extra`,
  columns beyond `fields` are ignored (STS Benchmark carries source columns).
  """
  path = os.fspath(path)
  lines, _ = read_lines(path, empty="keep")
  rows, numbers = [], []
  for number, line in enumerate(lines, start=1):
    if header and number == 1:
      continue
    if not line.strip():
      if empty == "error":
        raise errors.DataError(f"{path}:{number}: empty line. Remove it, or set the "
                        "empty-line policy to 'drop'.")
      if empty == "drop":
        continue
    cols = line.split("\t")
    if len(cols) < fields or (len(cols) > fields and not allow_extra):
      raise errors.DataError(
          f"{path}:{number}: expected {fields} tab-separated fields, found "
          f"{len(cols)}. Check for a missing or extra tab on that line.")
    rows.append(tuple(cols[:fields]))
    numbers.append(number)
  return rows, numbers


def parse_score(path: str, number: int, text: str) -> float:
  """A gold similarity score; empty means 'no gold' and gives NaN."""
  if not text.strip():
    return math.nan
  try:
    return float(text)
  except ValueError as e:
    raise errors.DataError(f"{path}:{number}: score {text!r} is not a number. Fix "
                    "the score column (or leave it empty for 'no gold').") \
        from e


def _record(path: str, number: int, line: str, keys: Sequence[str],
            fix: str) -> dict:
  try:
    record = json.loads(line)
  except json.JSONDecodeError as e:
    raise errors.DataError(f"{path}:{number}: not JSON ({e.msg}). A killed writer "
                    "leaves a half line: rerun it to finish the file.") from e
  missing = [k for k in keys if not isinstance(record, dict) or k not in record]
  if missing:
    raise errors.DataError(f"{path}:{number}: record lacks {missing}. {fix}"
                           .rstrip())
  return record


def read_jsonl(path: str | os.PathLike, *, keys: Sequence[str], fix: str = ""
               ) -> list[dict]:
  """One JSON object per line, each with at least `keys`; `fix` ends the
  message on a record without them."""
  path = os.fspath(path)
  lines, _ = read_lines(path)
  return [_record(path, number, line, keys, fix)
          for number, line in enumerate(lines, start=1)]


def _raw_lines(path: str) -> Iterator[bytes]:
  """The lines of a file (gzipped or not) as bytes, one at a time."""
  _check_readable(path)
  with open(path, "rb") as f:
    gzipped = f.read(2) == _GZIP_MAGIC
  try:
    with (gzip.open if gzipped else open)(path, "rb") as f:
      yield from f
  except (OSError, EOFError) as e:
    if not gzipped:
      raise
    raise _corrupt_gzip(path, e) from e


def iter_lines(path: str | os.PathLike) -> Iterator[str]:
  """`read_lines` one line at a time (empty lines kept), for corpora that may
  not fit in memory: the same decoding and normalisation, stopping at the
  first line that is not UTF-8."""
  path = os.fspath(path)
  for number, raw in enumerate(_raw_lines(path), start=1):
    if number == 1:
      raw = raw.removeprefix(codecs.BOM_UTF8)
    yield _decode(path, number, raw).removesuffix("\n").removesuffix("\r")


def jsonl_record(path: str, number: int, raw: bytes, *, keys: Sequence[str],
                 fix: str = "") -> dict:
  """Line `number` (1-based, as bytes) of the JSONL file `path`, checked as
  `iter_jsonl` checks it: a reader of a byte range of the file (a Beam
  worker's block) gives the same records and the same messages."""
  if number == 1:
    raw = raw.removeprefix(codecs.BOM_UTF8)
  line = _decode(path, number, raw)
  if not line.strip():
    raise errors.DataError(f"{path}:{number}: empty line. Remove it: every "
                           "line is one record.")
  return _record(path, number, line, keys, fix)


def iter_jsonl_sized(path: str | os.PathLike, *, keys: Sequence[str],
                     fix: str = "") -> Iterator[tuple[dict, int]]:
  """`iter_jsonl`'s records, each with the bytes its line takes (newline
  included; of the decompressed text for a gzipped file): the byte ranges
  a later reader seeks to."""
  path = os.fspath(path)
  for number, raw in enumerate(_raw_lines(path), start=1):
    yield jsonl_record(path, number, raw, keys=keys, fix=fix), len(raw)


def iter_jsonl(path: str | os.PathLike, *, keys: Sequence[str],
               fix: str = "") -> Iterator[dict]:
  """`read_jsonl` one record at a time, for files that may not fit in
  memory: the same checks, stopping at the first bad line."""
  for record, _ in iter_jsonl_sized(path, keys=keys, fix=fix):
    yield record
