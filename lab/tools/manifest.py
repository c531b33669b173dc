"""The manifest of lab/results/: each result file's sha256, the script that
wrote it and the command that reruns it, so that a file changed by hand
is caught in every folder of the tree, not only in runs/.

    python lab/tools/manifest.py            # exit 1 naming each file that
                                            # differs from or is missing in
                                            # the manifest, or is unlisted

Writers enter their file with `record` (benchmarks through
`children.write_result`, collected runs through `collect_result.py`); an
entry is {"sha256", "written_by", "command"}. `written_by` null: the file
was kept before the record had a writer, its command is the one the file
holds (or null where it holds none).
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import sys
from collections.abc import Iterator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_results  # pylint: disable=wrong-import-position

RESULTS = os.path.join(run_results.ROOT, "lab", "results")
NAME = "manifest.json"


def _path(results: str) -> str:
  return os.path.join(results, NAME)


def load(results: str | None = None) -> dict[str, dict]:
  """The manifest's entries by path relative to `results`."""
  results = results or RESULTS
  try:
    with open(_path(results), encoding="utf-8") as f:
      return json.load(f)
  except FileNotFoundError:
    return {}


@contextlib.contextmanager
def _locked(results: str) -> Iterator[None]:
  # Two benchmarks finishing at once must not drop each other's entry.
  os.makedirs(results, exist_ok=True)
  with open(_path(results) + ".lock", "w", encoding="utf-8") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    yield


def record(path: str, *, written_by: str | None, command: str | None,
           results: str | None = None) -> bool:
  """Enters `path` with its sha256; False (nothing entered) when it lies
  outside `results`, as a scratch output does."""
  results = results or RESULTS
  rel = os.path.relpath(os.path.abspath(path), os.path.abspath(results))
  if rel.startswith(".."):
    return False
  with _locked(results):
    entries = load(results)
    entries[rel] = {"sha256": run_results.sha256(path),
                    "written_by": written_by, "command": command}
    tmp = _path(results) + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
      f.write(json.dumps(dict(sorted(entries.items())), indent=1) + "\n")
    os.replace(tmp, _path(results))
  return True


def files(results: str | None = None) -> list[str]:
  """Every result file under `results`, relative, the manifest excepted."""
  results = results or RESULTS
  out = []
  for folder, _, names in os.walk(results):
    for name in names:
      rel = os.path.relpath(os.path.join(folder, name), results)
      if rel != NAME and not name.endswith((".lock", ".tmp")):
        out.append(rel)
  return sorted(out)


def problems(results: str | None = None) -> list[str]:
  """One line per file that differs from its entry, is unlisted, or is
  listed but gone."""
  results = results or RESULTS
  entries, present = load(results), files(results)
  out = [f"{rel}: not in {NAME} (a result file is written by a script: "
         "children.write_result or collect_result.py)"
         for rel in present if rel not in entries]
  out += [f"{rel}: changed since its writer recorded it (sha256 "
          f"{run_results.sha256(os.path.join(results, rel))[:12]}, "
          f"recorded {entries[rel]['sha256'][:12]}); rerun: "
          f"python lab/run.py {rel}"
          for rel in present if rel in entries and entries[rel]["sha256"]
          != run_results.sha256(os.path.join(results, rel))]
  out += [f"{rel}: listed in {NAME} but missing" for rel in entries
          if rel not in present]
  return out


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--results", default=RESULTS)
  args = parser.parse_args(argv)
  found = problems(args.results)
  for line in found:
    print(line, file=sys.stderr)
  if not found:
    print(f"{len(files(args.results))} result files match {NAME}")
  return 1 if found else 0


if __name__ == "__main__":
  sys.exit(main())
