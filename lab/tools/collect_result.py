"""Keeps a command's output file as the source of a results table.

    python lab/tools/collect_result.py --table sts_encoders --name avg \\
        --command "paraflax train --config configs/avg.py --workdir runs/avg \\
                   && paraflax eval-sts --workdir runs/avg" \\
        --config configs/avg.py --hardware "AMD EPYC, 2 cores" \\
        --time "1 min 0 s" runs/avg/sts.json

copies FILE unchanged to lab/results/runs/TABLE/NAME.json and writes
NAME.about.json beside it (its kind, the command, config, hardware, time,
the commit that ran it, the file's sha256 and, for a FILE in this checkout
or in a clone of it, its path there). It
refuses a file that is not one of the outputs `lab/tools/run_results.py`
knows (report.json of `paraflax pipeline`, sts.json of `eval-sts`,
evals.json of `eval`, results.json of `sweep` or `eval-domain`,
eval_filtering.json of `eval-filtering`, the --output of `mining-eval` or
`eval-reconstruction`),
a command that names a path of one machine, and one that reads a runs/
folder none of its steps makes where lab/tools/run_needs.py names no run
that makes it. Then
`python lab/tools/render_tables.py` renders the tables from it.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import manifest  # pylint: disable=wrong-import-position
import run_needs  # pylint: disable=wrong-import-position
import run_results  # pylint: disable=wrong-import-position

WRITER = "lab/tools/collect_result.py"  # as the manifest names it
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]*")
_LOCAL = re.compile(r"(?:^|\s|=)(?:/|~)\S")


def _local_paths(path: str) -> list[str]:
  """The string values of JSON file `path` that name an absolute path,
  at their start or within (a failed sweep point's message)."""
  def strings(v):
    if isinstance(v, dict):
      v = list(v.values())
    if isinstance(v, list):
      return [s for x in v for s in strings(x)]
    return [v] if isinstance(v, str) else []
  with open(path, encoding="utf-8") as f:
    return [s for s in strings(json.load(f)) if _LOCAL.search(s)]


def checkout_of(path: str) -> tuple[str, str]:
  """The root and HEAD of the git checkout holding `path` (this one or a
  fresh clone), ("", "") outside one."""
  proc = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(path)),
                         "rev-parse", "--show-toplevel", "HEAD"],
                        capture_output=True, text=True, check=False)
  lines = proc.stdout.split()
  return (lines[0], lines[1]) if proc.returncode == 0 and len(lines) == 2 \
      else ("", "")


def collect(args: argparse.Namespace) -> str:
  """Copies the output in; returns where it went."""
  for flag in ("table", "name"):
    if not _NAME.fullmatch(getattr(args, flag)):
      raise ValueError(f"--{flag} {getattr(args, flag)!r}: lower-case "
                       "letters, digits, '_', '-' and '.' only")
  if _LOCAL.search(args.command):
    raise ValueError(f"--command {args.command!r} names an absolute path: "
                     "give it as a user reruns it (runs/..., configs/...)")
  unmade = run_needs.uncovered(f"{args.table}/{args.name}", args.command,
                               lambda ref: run_results.load(ref).about[
                                   "command"])
  if unmade:
    raise ValueError(
        f"--command reads {', '.join(unmade)}, which none of its steps "
        "makes: start it with the commands that make it, or name the kept "
        "run that does in lab/tools/run_needs.py's NEEDS")
  kind = run_results.kind_of(args.file)
  local = _local_paths(args.file)
  if local:
    raise ValueError(f"{args.file} names paths of this machine ({local[0]!r}"
                     "): rerun the command with the paths of --command")
  folder = os.path.join(run_results.RUNS, args.table)
  target = os.path.join(folder, args.name + ".json")
  if os.path.exists(target) and not args.overwrite:
    raise ValueError(f"{os.path.relpath(target, run_results.ROOT)} exists; "
                     "--overwrite replaces it")
  os.makedirs(folder, exist_ok=True)
  shutil.copyfile(args.file, target)
  about = {"kind": kind, "command": args.command, "config": args.config,
           "hardware": args.hardware, "time": args.time,
           "sha256": run_results.sha256(target)}
  checkout, head = checkout_of(args.file)
  commit = getattr(args, "commit", None) or head
  if commit:
    about["commit"] = commit
  for measured in ("load", "cpu_id"):  # by lab/tools/rerun.py
    if getattr(args, measured, None):
      about[measured] = getattr(args, measured)
  output = os.path.relpath(os.path.abspath(args.file),
                           checkout or run_results.ROOT)
  if not output.startswith(".."):  # where a rerun of the command writes it
    about["output"] = output
  manifest.record(target, written_by=WRITER, command=args.command)
  write_about(args.table, args.name, about)
  return target


def write_about(table: str, name: str, about: dict) -> None:
  """Writes run TABLE/NAME's sidecar `about` and enters it in the
  manifest as this script's output."""
  path = os.path.join(run_results.RUNS, table, name + run_results.ABOUT)
  with open(path, "w", encoding="utf-8") as f:
    f.write(json.dumps(about, indent=1, ensure_ascii=False) + "\n")
  manifest.record(path, written_by=WRITER, command=about["command"])


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("file", help="the output file, as the command wrote it")
  parser.add_argument("--table", required=True,
                      help="the table it feeds (a name of TABLES)")
  parser.add_argument("--name", required=True, help="the run's name")
  parser.add_argument("--command", required=True,
                      help="the commands that produced it, as a user runs "
                      "them")
  parser.add_argument("--config", default="", help="its config and overrides")
  parser.add_argument("--hardware", required=True,
                      help='where it ran, e.g. "AMD EPYC, 2 cores"')
  parser.add_argument("--time", default="",
                      help="the wall time the commands took there")
  parser.add_argument("--commit", help="the commit that ran the command "
                      "(default: HEAD of the checkout or clone holding the "
                      "file)")
  parser.add_argument("--overwrite", action="store_true",
                      help="replace a run of the same name")
  args = parser.parse_args(argv)
  try:
    target = collect(args)
  except (ValueError, OSError) as e:
    print(f"collect_result: {e}", file=sys.stderr)
    return 1
  print(f"kept {os.path.relpath(target, run_results.ROOT)}; now run "
        "python lab/tools/render_tables.py")
  return 0


if __name__ == "__main__":
  sys.exit(main())
