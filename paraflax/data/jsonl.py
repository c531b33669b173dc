"""JSONL files of records (records.py checks each), read whole or one
record at a time."""
from __future__ import annotations

import codecs
import os
from collections.abc import Iterator, Sequence

from paraflax import errors
from paraflax.data import readers, records


def read_jsonl(path: str | os.PathLike, *, keys: Sequence[str], fix: str = ""
               ) -> list[dict]:
  """One JSON object per line, each with at least `keys`, its fields as
  `records.FIELDS` says, and no (id, rank) twice; `fix` ends the message on a
  record without them."""
  path = os.fspath(path)
  lines, _ = readers.read_lines(path)
  unique = records.UniqueRecords(path)
  out = []
  for number, line in enumerate(lines, start=1):
    out.append(records.parse_record(path, number, line, keys, fix))
    unique.check(number, out[-1])
  return out


def jsonl_record(path: str, number: int, raw: bytes, *, keys: Sequence[str],
                 fix: str = "") -> dict:
  """Line `number` (1-based, as bytes) of the JSONL file `path`, checked as
  `iter_jsonl` checks it: a reader of a byte range of the file (a Beam
  worker's block) gives the same records and the same messages."""
  if number == 1:
    raw = raw.removeprefix(codecs.BOM_UTF8)
  line = readers.decode_line(path, number, raw.removesuffix(b"\n"))
  if not line.strip():
    raise errors.DataError(f"{path}:{number}: empty line. Remove it: every "
                           "line is one record.")
  return records.parse_record(path, number, line, keys, fix)


def iter_jsonl_sized(path: str | os.PathLike, *, keys: Sequence[str],
                     fix: str = "") -> Iterator[tuple[dict, int]]:
  """`iter_jsonl`'s records, each with the bytes its line takes (newline
  included; of the decompressed text for a gzipped file): the byte ranges
  a later reader seeks to."""
  path = os.fspath(path)
  unique = records.UniqueRecords(path)
  for number, raw in enumerate(readers.raw_lines(path), start=1):
    record = jsonl_record(path, number, raw, keys=keys, fix=fix)
    unique.check(number, record)
    yield record, len(raw)


def iter_jsonl(path: str | os.PathLike, *, keys: Sequence[str],
               fix: str = "") -> Iterator[dict]:
  """`read_jsonl` one record at a time, for files that may not fit in
  memory: the same checks, stopping at the first bad line."""
  for record, _ in iter_jsonl_sized(path, keys=keys, fix=fix):
    yield record
