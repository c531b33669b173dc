"""Output files are written atomically: a temp name, then a rename.

A killed job never leaves a half-written output under the final name. One
policy holds for an output that is already there: a rerun with the same
settings resumes it (`claim_output`, for outputs written in parts) or finds
it already written (`write_once`, for outputs written whole), a run that
would change it is refused, and only an explicit overwrite replaces it.
"""
from __future__ import annotations

import atexit
import contextlib
import fcntl
import fnmatch
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any

from paraflax import errors
from paraflax import faults
# fingerprint, lines_digest, finished_prefix: files' names too, as their
# callers use them.
from paraflax.fingerprints import fingerprint  # pylint: disable=unused-import
from paraflax.fingerprints import lines_digest  # pylint: disable=unused-import
from paraflax.resume import finished_prefix  # pylint: disable=unused-import

_SHOWN_VALUE = 40  # longer settings (digests) are named, not shown


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, mode: str = "wb", *,
                  moment: str = "atomic") -> Iterator[IO]:
  """`path` appears whole or not at all, even after a SIGKILL; `moment`
  names the crash moments `<moment>.written` and `<moment>.renamed`."""
  path = os.fspath(path)
  if os.path.isdir(path):
    raise errors.DataError(f"{path}: is a directory; give the output a file "
                           "path.")
  folder = os.path.dirname(os.path.abspath(path))
  os.makedirs(folder, exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-",
                             suffix="-" + os.path.basename(path))
  try:
    with os.fdopen(fd, mode) as f:
      yield f
      f.flush()
      os.fsync(f.fileno())
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs are shared
    faults.moment(f"{moment}.written")
    os.replace(tmp, path)
  except BaseException:
    with contextlib.suppress(FileNotFoundError):
      os.remove(tmp)
    raise
  faults.moment(f"{moment}.renamed")


STALE_SECONDS = 3600  # a temporary file this old was left by a killed run


def remove_older(folder: str | os.PathLike, pattern: str,
                 seconds: float) -> None:
  """Removes the files of `folder` named like `pattern` (fnmatch) that were
  last modified more than `seconds` ago."""
  for name in fnmatch.filter(os.listdir(folder), pattern):
    path = os.path.join(folder, name)
    with contextlib.suppress(FileNotFoundError):  # another run removed it
      if time.time() - os.stat(path).st_mtime > seconds:
        os.remove(path)


def remove_stale_temporaries(folder: str | os.PathLike) -> None:
  """Removes the `.tmp-` files (`atomic_output`'s, and those named like
  them) that runs killed before their rename left in `folder`."""
  remove_older(folder, ".tmp-*", STALE_SECONDS)


def _umask() -> int:
  mask = os.umask(0)
  os.umask(mask)
  return mask


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
  with atomic_output(path, "w") as f:
    f.write(text)


def check_output(path: str | os.PathLike) -> None:
  """Fails before any work when `path` cannot be written as an output."""
  path = os.fspath(path)
  if os.path.isdir(path):
    raise errors.DataError(f"{path}: is a directory; give the output a file "
                           "path.")
  folder = os.path.dirname(os.path.abspath(path))
  while not os.path.exists(folder):
    folder = os.path.dirname(folder)
  if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
    raise errors.ConfigError(f"{path}: cannot be written ({folder} is not a "
                             "writable folder); choose another path.")


def _holds(path: str, data: bytes, overwrite: bool) -> bool:
  """True when `path` holds `data` already; other contents are refused
  with a `ConfigError` unless `overwrite`."""
  if not os.path.isfile(path) or overwrite:
    return False
  if os.path.getsize(path) == len(data):
    with open(path, "rb") as f:
      if f.read() == data:
        return True
  raise errors.ConfigError(
      f"{path} exists and holds another result; write to a new output, or "
      "pass --overwrite to replace it.")


def write_once(path: str | os.PathLike, data: bytes | str, *,
               overwrite: bool) -> bool:
  """Writes `data` to `path` atomically; False when `path` holds it already
  (a rerun of the same command). Other contents are refused with a
  `ConfigError` unless `overwrite`: finished work is never lost silently."""
  return write_all_once({path: data}, overwrite=overwrite)


def write_all_once(outputs: Mapping[str | os.PathLike, bytes | str], *,
                   overwrite: bool) -> bool:
  """`write_once` for the files of one result: every file is checked before
  any is written, so a refusal leaves none of them changed. False when all
  hold their data already."""
  encoded = {os.fspath(p): d.encode("utf-8") if isinstance(d, str) else d
             for p, d in outputs.items()}
  todo = {p: d for p, d in encoded.items() if not _holds(p, d, overwrite)}
  for path, data in todo.items():
    with atomic_output(path) as f:
      f.write(data)
  return bool(todo)


def copy_atomic(source: str | os.PathLike, path: str | os.PathLike) -> None:
  with open(source, "rb") as src, atomic_output(path) as f:
    shutil.copyfileobj(src, f)


def user_cache(env: str, name: str) -> str | None:
  """The absolute folder of a cache that the environment variable `env`
  names, by default $XDG_CACHE_HOME/paraflax/<name> (~/.cache/paraflax/
  <name>); None where `env` says `off`."""
  value = os.environ.get(env, "").strip()
  if value.lower() == "off":
    return None
  if not value:
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    value = os.path.join(base, "paraflax", name)
  return os.path.abspath(os.path.expanduser(value))


def settings_path(output: str) -> str:
  """Where `claim_output` keeps the settings an output was made with."""
  return output + ".meta.json"


_CLAIM_FILES = (".meta.json", ".lock")  # written before any work


def holds_work(path: str) -> bool:
  """Whether `path` holds work: a non-empty file other than the settings
  and lock files a claim writes first, or a folder with one inside. A
  start that failed before its first result leaves none, so it never
  blocks its corrected rerun."""
  if os.path.isdir(path):
    return any(holds_work(os.path.join(root, name))
               for root, _, names in os.walk(path) for name in names)
  return _size(path) > 0 and not path.endswith(_CLAIM_FILES)


def claim_output(output: str, settings: dict[str, Any], *, overwrite: bool,
                 leftovers: Sequence[str] = (), lock: bool = True) -> None:
  """Makes `output` this run's before any of it is written.

  Work already there (the output, or `leftovers` such as a folder of
  finished parts) made with the same `settings` is the caller's to resume;
  work of other settings, or of unrecorded ones, stops the run with a
  `ConfigError`. `overwrite` removes any of it instead. The settings are
  recorded (atomically) before the caller writes, so whatever it writes is
  covered by them. The output is locked for the rest of the run
  (`lock_output`): two runs never write one output at once; `lock` False
  is for the processes of one run that share an output by design.
  """
  if lock:
    lock_output(output)
  meta = settings_path(output)
  settings = json.loads(json.dumps(settings))  # as it will read back
  saved = _read_json(meta)
  if saved == settings and not overwrite:
    return
  present = [p for p in (output, *leftovers) if holds_work(p)]
  if present and not overwrite:
    differs = ("it has no " + meta if saved is None
               else "differs in " + _differences(saved, settings))
    raise errors.ConfigError(
        f"{output} holds the output of another run ({differs}); this run "
        "would change it. Rerun with the same settings to resume it, write "
        "to a new output, or pass --overwrite to replace it.")
  for path in present:
    if os.path.isdir(path):
      shutil.rmtree(path)
    else:
      os.remove(path)
  write_text_atomic(meta, json.dumps(settings, indent=2, sort_keys=True)
                    + "\n")


def _identity(path: str) -> tuple[int, int] | None:
  """The (device, inode) of the file `path` resolves to; None if absent."""
  try:
    st = os.stat(path)
  except (FileNotFoundError, NotADirectoryError):
    return None
  return st.st_dev, st.st_ino


def _within(path: str, folder: str) -> bool:
  path, folder = os.path.realpath(path), os.path.realpath(folder)
  return os.path.commonpath([path, folder]) == folder


def refuse_inputs_as_outputs(inputs: Sequence[tuple[str, str]],
                             outputs: Sequence[tuple[str, str]]) -> None:
  """Stops before any work when an output is an input: the same file by
  any name (a symbolic or hard link, a relative path), or a folder that
  holds an input. `--overwrite` does not weaken this: a command never
  destroys what it reads. Both are (flag, path) pairs."""
  for out_flag, output in outputs:
    out_id = _identity(output)
    for in_flag, source in inputs:
      same = (os.path.realpath(source) == os.path.realpath(output)
              or (out_id is not None and _identity(source) == out_id))
      if same or (os.path.isdir(output) and _within(source, output)):
        what = "is" if same else "holds"
        raise errors.ConfigError(
            f"{out_flag} {output} {what} the input {in_flag} {source}: "
            "writing it would destroy the input. Write to another path.")


_LOCKS: dict[str, int] = {}  # lock file -> its open descriptor


def _take_lock(path: str, blocking: bool) -> tuple[int | None, str]:
  """(a descriptor holding the exclusive lock of file `path`, with this
  process's pid written in it, "") or, not `blocking` and another process
  holding it, (None, the holder's pid)."""
  os.makedirs(os.path.dirname(path), exist_ok=True)
  while True:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
      holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
      os.close(fd)
      return None, holder
    st = os.fstat(fd)
    if _identity(path) == (st.st_dev, st.st_ino):  # not removed meanwhile
      os.ftruncate(fd, 0)
      os.write(fd, f"{os.getpid()}\n".encode())
      return fd, ""
    os.close(fd)


def lock_output(output: str) -> None:
  """Makes this process the only writer of `output` until it ends (or
  `release_output`, `release_output_locks`): an exclusive lock on
  `OUTPUT.lock`, which the kernel releases when the process dies, so a
  killed run never blocks the next. A second run on the same output stops
  with a `ConfigError` before it writes anything, instead of appending the
  same records twice."""
  path = os.path.abspath(output) + ".lock"
  if path in _LOCKS:
    return
  fd, holder = _take_lock(path, blocking=False)
  if fd is None:
    raise errors.ConfigError(
        f"{output}: another run (process {holder}) is writing it. Wait "
        "for that run to end, then rerun this command (it finds the "
        "output finished, or resumes it), or write to another output.")
  _LOCKS[path] = fd


def writer_of(path: str) -> str | None:
  """The process id of another run that holds `path`'s `lock_output` lock
  (it is writing `path` now), or None. Probes with a shared lock, released
  at once, and never creates the lock file."""
  lock = os.path.abspath(path) + ".lock"
  if lock in _LOCKS:
    return None  # this process writes it: its own stages read it after
  try:
    fd = os.open(lock, os.O_RDONLY)
  except OSError:
    return None
  try:
    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
  except BlockingIOError:
    return os.read(fd, 32).decode(errors="replace").strip() or "?"
  finally:
    os.close(fd)  # also ends the probe's shared lock
  return None


def refuse_unfinished_inputs(inputs: Sequence[tuple[str, str]]) -> None:
  """Stops before any work when an input is an output that another run is
  still writing (it holds the lock): what is there now is only part of it.
  `inputs` are (flag, path) pairs."""
  for flag, path in inputs:
    holder = writer_of(path)
    if holder is not None:
      raise errors.ConfigError(
          f"{flag} {path}: another run (process {holder}) is still writing "
          "it, so it holds part of its records. Wait for that run to end, "
          "then rerun this command.")


@contextlib.contextmanager
def waiting_lock(path: str) -> Iterator[None]:
  """Holds the exclusive lock of file `path` for the block, first waiting
  (and saying so) for the process that holds it; the file is removed
  after. A killed holder's lock is released by the kernel."""
  fd, holder = _take_lock(path, blocking=False)
  if fd is None:
    logging.info("%s: process %s holds it; waiting for it", path, holder)
    fd, _ = _take_lock(path, blocking=True)
  try:
    yield
  finally:
    with contextlib.suppress(FileNotFoundError):
      os.remove(path)  # first: a waiting process then locks a new file
    os.close(fd)


@atexit.register
def release_output_locks() -> None:
  """Ends this process's `lock_output` locks and removes their files."""
  for path in list(_LOCKS):
    _release(path)


def release_output(output: str) -> None:
  """Ends this process's `lock_output` lock of `output`, if it holds one:
  for a long-lived process (a pipeline, a notebook) done with it."""
  path = os.path.abspath(output) + ".lock"
  if path in _LOCKS:
    _release(path)


def _release(path: str) -> None:
  with contextlib.suppress(FileNotFoundError):
    os.remove(path)  # first: a waiting run then locks a new file
  os.close(_LOCKS.pop(path))


def _size(path: str) -> int:
  return os.path.getsize(path) if os.path.isfile(path) else 0


def _read_json(path: str) -> Any:
  if not os.path.exists(path):
    return None
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def _changed_keys(saved: Any, settings: Any, prefix: str = ""
                  ) -> Iterator[tuple[str, Any, Any]]:
  """(dotted key, old, new) for each leaf that differs; a key found on one
  side only is one change, whatever it holds. Dicts compare by content,
  not by the order of their keys (a meta file is written sorted)."""
  if not (isinstance(saved, dict) and isinstance(settings, dict)):
    if saved != settings:
      yield prefix, saved, settings
    return
  for key in sorted(saved.keys() | settings.keys()):
    name = f"{prefix}.{key}" if prefix else str(key)
    if key in saved and key in settings:
      yield from _changed_keys(saved[key], settings[key], name)
    else:
      yield name, saved.get(key), settings.get(key)


def _differences(saved: dict[str, Any], settings: dict[str, Any]) -> str:
  """The keys (dotted, for nested settings) whose values differ, each with
  its old and new value when both are short."""
  changes = []
  for key, old, new in _changed_keys(saved, settings):
    old, new = json.dumps(old, sort_keys=True), json.dumps(new, sort_keys=True)
    changes.append(f"{key} {old} -> {new}"
                   if len(old) + len(new) <= _SHOWN_VALUE else key)
  return ", ".join(changes)
