"""The record of one lent machine's scale.sh run, run.json beside its
results: what children.run_facts records of a benchmark (the command that
reruns it, the commit, the machine with its GPUs, the versions, the load
at the start), then the span of the whole script, whose phases are
separate programs.

  python lab/benchmarks/gpu/scale_record.py start RUN_JSON [NAME=VALUE ...]
  python lab/benchmarks/gpu/scale_record.py end RUN_JSON SCRIPT_PID
(NAME=VALUE: the settings scale.sh was given, each a variable of its
environment.)
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import children  # pylint: disable=g-import-not-at-top,wrong-import-position
from paraflax import files  # pylint: disable=g-import-not-at-top,wrong-import-position


def cpu_seconds(pid: int) -> float:
  """The CPU seconds of process `pid` and of the children it has waited
  for (/proc/PID/stat's utime, stime, cutime, cstime)."""
  with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
    # The command name in parentheses may hold spaces: split after it.
    fields = f.read().rsplit(")", 1)[1].split()
  return sum(int(t) for t in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def command(settings: list[str]) -> str:
  """scale.sh's command with its settings: `env NAME=VALUE ... bash ...`."""
  script = ["bash", "lab/benchmarks/gpu/scale.sh", "OUT"]
  return shlex.join(["env", *settings, *script] if settings else script)


def start(path: str, settings: list[str]) -> None:
  facts = children.run_facts(__file__, [])
  files.write_text_atomic(path, json.dumps(
      {**facts, "command": command(settings), "started": time.time()},
      indent=2) + "\n")


def end(path: str, pid: int) -> None:
  with open(path, encoding="utf-8") as f:
    record = json.load(f)
  record["run"] = {"wall_s": round(time.time() - record.pop("started"), 2),
                   "cpu_s": round(cpu_seconds(pid), 2),
                   "load_average_at_end": os.getloadavg(),
                   "peers": children.versions(("torch",
                                               "sentence-transformers"))}
  files.write_text_atomic(path, json.dumps(record, indent=2) + "\n")


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("when", choices=("start", "end"))
  parser.add_argument("path")
  parser.add_argument("what", nargs="*",
                      help="start: the settings; end: the script's pid")
  args = parser.parse_args(argv)
  if args.when == "start":
    start(args.path, args.what)
  else:
    end(args.path, int(args.what[0]))


if __name__ == "__main__":
  main()
