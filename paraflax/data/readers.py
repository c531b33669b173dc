"""Text files read line by line, with validation: whole or streamed, one
file or line-aligned parallel files, tab-separated columns.

Every reader stops on bad input with a `DataError` naming the file, the line
and the fix. Empty lines are counted and reported; they are dropped only when
the caller asks for it (`empty="drop"`), never silently; an empty file is an
error. Every file is read the same way: a line ends at LF and nowhere
else, and the CR of CRLF (Windows) line endings and a UTF-8 byte-order mark
at the file's start are removed with a warning naming the file. A NUL byte
(a binary or UTF-16 file) and a CR alone (old Mac line ends, which would
make a file one line) stop the read with the line number. Other control
characters and the Unicode separators U+0085, U+2028, U+2029 are text
inside the line: public corpora hold them (newstest2009, SemEval STS 2012),
and every paraflax reader gives them the same lines.
"""
from __future__ import annotations

import codecs
import contextlib
import dataclasses
import gzip
import itertools
import logging
import math
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Literal

from paraflax import errors

EmptyPolicy = Literal["error", "drop", "keep"]
_GZIP_MAGIC = b"\x1f\x8b"
_SHOWN = 5  # how many offending line numbers an error message lists
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
# What no line of text may hold: NUL (binary data) and a CR that ends no
# line.
_CONTROL = re.compile("[\x00\r]")


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


def _gfile():
  """`tf.io.gfile`, for paths such as gs://bucket/file (TensorFlow is
  loaded only for them)."""
  from paraflax import quiet  # pylint: disable=g-import-not-at-top
  return quiet.tensorflow().io.gfile


def _is_url(path: str) -> bool:
  return "://" in path


def _open_binary(path: str) -> IO[bytes]:
  return _gfile().GFile(path, "rb") if _is_url(path) else open(path, "rb")


def _check_readable(path: str) -> None:
  if _is_url(path):
    if not _gfile().exists(path):
      raise errors.DataError(f"{path}: file not found. Check the path.")
    if _gfile().isdir(path):
      raise errors.DataError(f"{path}: is a directory, expected a text file.")
    return
  if path == "-":
    raise errors.DataError("-: standard input is not read by paraflax "
                           "(inputs are read twice: checked, then used). "
                           "Write it to a file and give that file's path.")
  if os.path.islink(path) and not os.path.exists(path):
    raise errors.DataError(f"{path}: a symbolic link that leads to no file "
                           f"(-> {os.readlink(path)}, dangling or a loop). "
                           "Fix the link, or give the file's own path.")
  if not os.path.exists(path):
    raise errors.DataError(f"{path}: file not found. Check the path, or set "
                    "PARAFLAX_DATA_DIR to the folder that holds the corpora.")
  if os.path.isdir(path):
    raise errors.DataError(f"{path}: is a directory, expected a text file.")


def _empty_file(path: str) -> errors.DataError:
  return errors.DataError(f"{path}: empty file, nothing to read. Give a "
                          "file with at least one line.")


def _corrupt_gzip(path: str, e: Exception) -> errors.DataError:
  return errors.DataError(f"{path}: corrupt gzip file ({e}). Re-download or "
                          "re-compress it.")


def _read_bytes(path: str | os.PathLike) -> bytes:
  path = os.fspath(path)
  _check_readable(path)
  with _open_binary(path) as f:
    raw = f.read()
  if raw[:2] == _GZIP_MAGIC:
    try:
      raw = gzip.decompress(raw)
    except (OSError, EOFError) as e:
      raise _corrupt_gzip(path, e) from e
  return raw


def decode_line(path: str, number: int, line: bytes) -> str:
  """Line `number` (its bytes, without the LF) as text, its CR removed;
  bad bytes and control characters stop with the line number."""
  name = os.path.basename(path)
  if number == 1 and line.startswith(_UTF16_BOMS):
    raise errors.DataError(
        f"{path}: UTF-16 text; paraflax reads UTF-8. Re-encode it: "
        f"`iconv -f utf-16 -t utf-8 {name}`.")
  try:
    text = line.decode("utf-8").removesuffix("\r")
  except UnicodeDecodeError as e:
    raise errors.DataError(
        f"{path}:{number}: invalid UTF-8 (byte 0x{line[e.start]:02x} at "
        f"column {e.start + 1}). Re-encode the file as UTF-8, e.g. "
        f"`iconv -f latin1 -t utf-8 {name}` for Latin-1 text.") from e
  bad = _CONTROL.search(text)
  if bad:
    char = bad.group()
    fix = ("the file ends lines with CR alone (old Mac): convert it, e.g. "
           f"`tr '\\r' '\\n' < {name}`" if char == "\r" else
           "a binary file? Remove the NUL bytes, or give the text file")
    raise errors.DataError(
        f"{path}:{number}: character U+{ord(char):04X} at column "
        f"{bad.start() + 1}; a line of text holds no NUL and no CR but at "
        f"its end. Fix: {fix}.")
  return text


def _decode_lines(path: str, raw: bytes) -> list[str]:
  if raw.startswith(codecs.BOM_UTF8):
    raw = raw[len(codecs.BOM_UTF8):]
    logging.warning("%s: removed the UTF-8 byte-order mark at its start",
                    path)
  lines = raw.split(b"\n")
  if lines and lines[-1] == b"":
    lines.pop()
  if not lines:
    raise _empty_file(path)
  out = [decode_line(path, number, line)
         for number, line in enumerate(lines, start=1)]
  crlf = [n for n, line in enumerate(lines, start=1)
          if line.endswith(b"\r")]
  if crlf:
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


def check_sentence(path: str, number: int, line: str) -> str:
  """`line` of a file read as one sentence per line: a tab on its first
  line means the file holds columns (a TSV given where plain text is
  expected); a tab further down is text (web corpora hold some)."""
  if number == 1 and "\t" in line:
    raise errors.DataError(
        f"{path}:{number}: a tab; this file is read as one sentence per "
        "line, and a tab-separated file of pairs is a data spec: "
        f"tsv:{path} (--task, --config.data.train; docs/your-data.md). "
        "Otherwise replace the tabs with spaces.")
  return line


def sentences_only(path: str | os.PathLike, lines: Sequence[str]
                   ) -> Sequence[str]:
  """`lines` of `path`, checked by `check_sentence`."""
  if lines:
    check_sentence(os.fspath(path), 1, lines[0])
  return lines


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


def iter_parallel(paths: Sequence[str | os.PathLike], *,
                  empty: EmptyPolicy = "drop",
                  fix: str = "Remove those rows from every side."
                  ) -> Iterator[tuple[str, ...]]:
  """`read_parallel` (one path: `read_lines`) one row at a time, for
  corpora that may not fit in memory: the same rows under each policy.
  Under "error" the first row with an empty side stops the read (read
  whole, every such row is named at once); files of different lengths
  stop at the first row without a partner, with both line counts (the
  longer file is read to its end to count it)."""
  paths = [os.fspath(p) for p in paths]
  sides = [iter_lines(p) for p in paths]
  dropped = []
  for number, row in enumerate(itertools.zip_longest(*sides), start=1):
    if None in row:
      # The longer files are read to their end, for their line counts.
      counts = [number - 1 if side is None else number + sum(1 for _ in it)
                for side, it in zip(row, sides)]
      short, long = (min(range(len(paths)), key=counts.__getitem__),
                     max(range(len(paths)), key=counts.__getitem__))
      raise errors.DataError(
          f"{paths[short]} has {counts[short]} lines but {paths[long]} has "
          f"{counts[long]} lines: parallel files must be line-aligned. Line "
          f"{number} of {paths[long]} has no partner; fix the alignment (or "
          "pass the right files).")
    if empty == "keep" or all(side.strip() for side in row):
      yield row
    elif empty == "drop":
      dropped.append(number)
    elif len(paths) == 1:
      raise errors.DataError(
          f"{paths[0]}: an empty line at line {number}. " + fix)
    else:
      where = "; ".join(f"{path} line {number}" for path, side
                        in zip(paths, row) if not side.strip())
      raise errors.DataError(
          f"empty line(s) in parallel files: {where}. " + fix)
  if dropped:
    logging.warning("%s: dropped %d row(s) with an empty side at line %s",
                    " + ".join(paths), len(dropped), _line_list(dropped))


def read_tsv(path: str | os.PathLike, *, fields: int,
             allow_extra: bool = False, header: bool = False,
             empty: EmptyPolicy = "error"
             ) -> tuple[list[tuple[str, ...]], list[int]]:
  """Reads a tab-separated file into rows of exactly `fields` columns.

  Returns the rows and their 1-based line numbers. With `allow_extra`,
  columns beyond `fields` are ignored (STS Benchmark carries source columns).
  """
  path = os.fspath(path)
  rows, numbers = [], []
  for number, row in _tsv_rows(path, read_lines(path, empty="keep")[0],
                               fields, allow_extra, header, empty):
    rows.append(row)
    numbers.append(number)
  return rows, numbers


def iter_tsv(path: str | os.PathLike, *, fields: int,
             allow_extra: bool = False, empty: EmptyPolicy = "error"
             ) -> Iterator[tuple[str, ...]]:
  """`read_tsv`'s rows one at a time, for files that may not fit in
  memory."""
  path = os.fspath(path)
  for _, row in _tsv_rows(path, iter_lines(path), fields, allow_extra,
                          False, empty):
    yield row


def _tsv_rows(path: str, lines: Iterable[str], fields: int,
              allow_extra: bool, header: bool, empty: EmptyPolicy
              ) -> Iterator[tuple[int, tuple[str, ...]]]:
  """(line number, row) of `lines`, the lines of TSV file `path`."""
  for number, line in enumerate(lines, start=1):
    if header and number == 1:
      continue
    if not line.strip():
      if empty == "error":
        raise errors.DataError(
            f"{path}:{number}: empty line. Remove it: every line of a TSV "
            "is one row (an empty last line too).")
      if empty == "drop":
        continue
    cols = line.split("\t")
    if len(cols) < fields or (len(cols) > fields and not allow_extra):
      raise errors.DataError(
          f"{path}:{number}: expected {fields} tab-separated fields, found "
          f"{len(cols)}. Check for a missing or extra tab on that line.")
    yield number, tuple(cols[:fields])


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


def raw_lines(path: str) -> Iterator[bytes]:
  """The lines of a file (gzipped or not) as bytes, one at a time; an
  empty file is an error."""
  _check_readable(path)
  with _open_binary(path) as f:
    gzipped = f.read(2) == _GZIP_MAGIC
  try:
    with _open_binary(path) as raw, (
        gzip.open(raw, "rb") if gzipped else contextlib.nullcontext(raw)
        ) as f:
      first = f.readline()
      if not first:
        raise _empty_file(path)
      yield first
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
  for number, raw in enumerate(raw_lines(path), start=1):
    if number == 1:
      raw = raw.removeprefix(codecs.BOM_UTF8)
    yield decode_line(path, number, raw.removesuffix(b"\n"))
