"""Sharded JSONL outputs and the one way readers find them.

A command that writes shards names them after its `--output`:
`OUT.jsonl` -> `OUT-00000-of-00004.jsonl` ... `OUT-00003-of-00004.jsonl`,
or, for a folder (`OUT/`, or a folder that exists),
`OUT/part-00000-of-00004.jsonl` ...; one shard of a file output is the
file itself. A reader given any of the three (a file, a glob, a folder),
or the `OUT.jsonl` whose shards exist, reads the files in shard order as
one input, and stops when a shard is missing or two sets of shards share a
name.
"""
from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator, Sequence

from paraflax import errors
from paraflax.data import jsonl

SUFFIX = ".jsonl"
_NAMED = re.compile(r"^(?P<stem>.*)-(?P<index>\d{5})-of-(?P<count>\d{5})"
                    r"(?P<suffix>\.jsonl)?$")
_GLOB = re.compile(r"[*?[]")


def is_folder(output: str) -> bool:
  """An output written as a folder of shards: it ends with a slash or is
  a folder already."""
  return output.endswith(("/", os.sep)) or os.path.isdir(output)


def is_glob(path: str) -> bool:
  return bool(_GLOB.search(path))


def _split(output: str) -> tuple[str, str]:
  return (output[:-len(SUFFIX)], SUFFIX) if output.endswith(SUFFIX) \
      else (output, "")


def any_count(output: str) -> str:
  """A glob of the shard files of `output` for any shard count."""
  if is_folder(output):
    return os.path.join(glob.escape(output), f"part-*-of-*{SUFFIX}")
  stem, suffix = _split(output)
  return f"{glob.escape(stem)}-[0-9]*-of-[0-9]*{suffix}"


def output_paths(output: str, count: int) -> list[str]:
  """The files of an output of `count` shards, in shard order."""
  if count < 1:
    raise errors.ConfigError(f"{count} shards: an output has at least one.")
  if is_folder(output):
    return [os.path.join(output, f"part-{i:05d}-of-{count:05d}{SUFFIX}")
            for i in range(count)]
  if count == 1:
    return [output]
  stem, suffix = _split(output)
  return [f"{stem}-{i:05d}-of-{count:05d}{suffix}" for i in range(count)]


def _complete(found: Sequence[str], what: str) -> list[str]:
  """`found` in shard order; every shard of one set, or a DataError."""
  named = {p: _NAMED.match(os.path.basename(p)) for p in found}
  sets = {(os.path.join(os.path.dirname(p), m["stem"]), m["count"])
          for p, m in named.items() if m}
  if not sets:
    return sorted(found)
  if len(sets) > 1 or len(sets) == 1 and not all(named.values()):
    shown = ", ".join(sorted(os.path.basename(p) for p in found)[:6])
    raise errors.DataError(
        f"{what} holds shards of more than one output ({shown}, ...); "
        "give the one output's files (a glob such as OUT-*-of-00004.jsonl), "
        "or move the others away.")
  (_, count), = sets
  have = {int(m["index"]) for m in named.values()}
  missing = sorted(set(range(int(count))) - have)
  if missing:
    raise errors.DataError(
        f"{what}: shard(s) {', '.join(str(i) for i in missing[:10])} of "
        f"{int(count)} are missing; finish the run that writes them (rerun "
        "it: it resumes) or give the shards that are there by name.")
  return sorted(found, key=lambda p: int(named[p]["index"]))


def resolve(path: str | os.PathLike) -> list[str]:
  """The files a reader of `path` reads, in order: the file itself; a
  glob's matches; a folder's `*.jsonl` files; or, for an `OUT.jsonl` that
  is not there, its shards `OUT-*-of-*.jsonl`."""
  path = os.fspath(path)
  if is_glob(path) and not os.path.exists(path):
    found = [p for p in glob.glob(os.path.expanduser(path))
             if os.path.isfile(p)]
    if not found:
      raise errors.DataError(f"{path}: matches no file. Check the pattern "
                             f"(relative paths start at {os.getcwd()}).")
    return _complete(found, path)
  if os.path.isdir(path):
    found = [os.path.join(path, n) for n in os.listdir(path)
             if n.endswith(SUFFIX) and not n.startswith(".")]
    if not found:
      raise errors.DataError(f"{path}: a folder with no *{SUFFIX} file; "
                             "give the output's folder or files.")
    return _complete(found, path)
  if not os.path.exists(path):
    found = [p for p in glob.glob(any_count(path))
             if _NAMED.match(os.path.basename(p))]
    if found:
      return _complete(found, path)
  return [path]


def iter_jsonl(path: str | os.PathLike, *, keys: Sequence[str],
               fix: str = "") -> Iterator[dict]:
  """`jsonl.iter_jsonl` over every file of `resolve(path)`, in order."""
  for part in resolve(path):
    yield from jsonl.iter_jsonl(part, keys=keys, fix=fix)


def read_jsonl(path: str | os.PathLike, *, keys: Sequence[str],
               fix: str = "") -> list[dict]:
  """`jsonl.read_jsonl` of every file of `resolve(path)`, concatenated."""
  return [r for part in resolve(path)
          for r in jsonl.read_jsonl(part, keys=keys, fix=fix)]


def is_shard(path: str) -> bool:
  """Named as a shard: `...-00001-of-00004[.jsonl]`."""
  return bool(_NAMED.match(os.path.basename(path)))


def numbered_jsonl(path: str | os.PathLike, *, keys: Sequence[str],
                   fix: str = "") -> Iterator[tuple[str, int, dict]]:
  """(file, 1-based line, record) of `iter_jsonl(path)`: messages name the
  shard and its line."""
  for part in resolve(path):
    for number, record in enumerate(
        jsonl.iter_jsonl(part, keys=keys, fix=fix), start=1):
      yield part, number, record
