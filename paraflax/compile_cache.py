"""A persistent cache of compiled XLA programs, shared by paraflax's runs.

Every run (train, a resume, translate, eval, mine, each pipeline stage)
compiles the same programs again: ~30 s for the NMT on an idle core. With
the cache a later run loads them from disk. `PARAFLAX_COMPILATION_CACHE`
names the folder, or `off`; by default `$XDG_CACHE_HOME/paraflax/xla`
(`~/.cache/paraflax/xla`), in a subfolder named for this host's CPU
(`host_key`). Like jax's own cache it must be trusted: whoever
may write to it can make paraflax run their code.

jax's file cache writes an entry in place: a SIGKILL mid-write leaves a
truncated entry that jax then fails to read, warns about and recompiles on
every later run, never replacing it. Ours writes each entry whole or not at
all (a temporary file renamed), drops an entry that does not read back
whole, and keeps the folder under a size cap by least recent use without a
lock: every step is one atomic file operation, so processes sharing the
folder at worst evict a little more than needed. jax writes from process 0
only; the others read.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import pathlib
import platform

import jax
from jax._src import compilation_cache
from jax._src import compilation_cache_interface

from paraflax import files

ENV = "PARAFLAX_COMPILATION_CACHE"
# Programs that compile faster than this are not kept: the NMT's took 7-22 s
# (loaded cores), a read takes milliseconds; lab/benchmarks/README.md
# ("Compilation cache").
MIN_COMPILE_SECONDS = 0.5
MAX_BYTES = 2 << 30  # least recently used entries go beyond this
_SUFFIX = "-cache"  # the name jax's own cache gives an entry
_HEADER = b"paraflax-xla1"  # then the entry's length: a cut entry reads short
_LENGTH_BYTES = 8


def directory() -> str | None:
  """This host's folder in the cache that `PARAFLAX_COMPILATION_CACHE`
  names (None: off)."""
  folder = files.user_cache(ENV, "xla")
  return folder and os.path.join(folder, host_key())


@functools.cache
def host_key() -> str:
  """Names the instruction set compiled programs were built for. XLA
  compiles host code (all of it on CPU) for the CPU it runs on, and jax's
  cache key holds the backend and its version but not the CPU's features:
  a cache folder shared by unlike machines (a home directory on NFS, a
  cluster of mixed nodes) must not hand one of them the other's code."""
  text = platform.machine() + platform.processor()
  with contextlib.suppress(OSError):
    with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
      first_cpu = f.read().split("\n\n")[0]
    text += "".join(line for line in first_cpu.splitlines()
                    if line.startswith(("model name", "flags", "Features",
                                        "CPU implementer", "CPU part")))
  return hashlib.sha256(text.encode()).hexdigest()[:16]


def use(path: str | None = None) -> str | None:
  """Compiled programs are read from and written to `path` (default:
  `directory()`, which may be off) from now on in this process; returns the
  folder, or None where the cache is off. Call it before jax compiles what
  it should cache (the paraflax CLI calls it before each command)."""
  path = path or directory()
  cache = None
  if path:
    try:
      cache = FileCache(path)
    except OSError as e:  # a read-only home: run, only without the cache
      logging.warning("compilation cache off: %s", e)
      path = None
  jax.config.update("jax_compilation_cache_dir", path)
  jax.config.update("jax_persistent_cache_min_compile_time_secs",
                    MIN_COMPILE_SECONDS)
  # jax has no public hook for the cache's storage: the module's `_cache`
  # is what `compiler` reads and writes through (CacheInterface: get, put).
  # reset_cache() also forgets whether a backend was found to use a cache.
  compilation_cache.reset_cache()
  compilation_cache._cache = cache  # pylint: disable=protected-access
  return path


def _read_whole(file: pathlib.Path) -> bytes | None:
  """The value stored in `file`; None where it is gone or not ours whole
  (an older jax's cut entry: a miss, which jax then compiles and puts back
  in its place)."""
  try:
    data = file.read_bytes()
  except FileNotFoundError:  # never written, or just evicted
    return None
  head = len(_HEADER) + _LENGTH_BYTES
  length = int.from_bytes(data[len(_HEADER):head], "big")
  if not data.startswith(_HEADER) or len(data) != head + length:
    return None
  return data[head:]


class FileCache(compilation_cache_interface.CacheInterface):
  """jax's cache interface over a folder: one file per compiled program,
  written atomically, its last use its modification time."""

  def __init__(self, path: str, max_bytes: int = MAX_BYTES):
    self._path = pathlib.Path(path)
    self._path.mkdir(parents=True, exist_ok=True)
    self._max_bytes = max_bytes
    self.hits = 0

  def _file(self, key: str) -> pathlib.Path:
    return self._path / f"{key}{_SUFFIX}"

  def get(self, key: str) -> bytes | None:
    file = self._file(key)
    value = _read_whole(file)
    if value is not None:
      with contextlib.suppress(OSError):  # evicted since, or another user's
        os.utime(file)  # used now: evicted last
      self.hits += 1
    return value

  def _entries(self) -> list[pathlib.Path]:
    """The entries' files, without those other runs are writing now."""
    return sorted(f for f in self._path.glob(f"*{_SUFFIX}")
                  if not f.name.startswith(".tmp-"))

  def values(self) -> list[bytes]:
    """What jax stored in each whole entry (the compiled program and its
    compile time), without marking them used."""
    found = (_read_whole(f) for f in self._entries())
    return [value for value in found if value is not None]

  def put(self, key: str, value: bytes) -> None:
    if len(value) > self._max_bytes:
      return
    with files.atomic_output(self._file(key), moment="compile_cache") as f:
      f.write(_HEADER + len(value).to_bytes(_LENGTH_BYTES, "big"))
      f.write(value)
    self._evict()

  def _evict(self) -> None:
    """Oldest entries go until the folder is under the cap; a temporary file
    that a killed run left goes after an hour."""
    files.remove_stale_temporaries(self._path)
    entries, total = [], 0
    for file in self._entries():
      with contextlib.suppress(FileNotFoundError):  # another run evicted it
        stat = file.stat()
        entries.append((stat.st_mtime, stat.st_size, file))
        total += stat.st_size
    for _, size, file in sorted(entries):
      if total <= self._max_bytes:
        break
      file.unlink(missing_ok=True)
      total -= size
