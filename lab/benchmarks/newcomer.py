"""The time a newcomer gets: a fresh clone of this checkout's commit, cold
caches, and the README's own set-up command run step by step.

    python lab/benchmarks/newcomer.py main [--output lab/results/newcomer.main.HW.json]
    python lab/benchmarks/newcomer.py tests [--output ...]

`main` is the first command of the README's Quick start (install, KenLM,
the tiny pipeline), `tests` the README's test command; each is split at
` && ` and every step timed (wall, CPU of its processes, the peak memory
of its largest process, the 1-minute load at its start and sampled
during it). The clone sits in a scratch
folder beside a link to the data folder ($PARAFLAX_DATA_DIR, else
../shared/data beside this checkout), as
a newcomer's checkout sits beside ../shared; pip's cache and paraflax's
compilation cache are empty folders of the scratch, so nothing this
machine downloaded or compiled before is reused. The README renders its
times from this file (`lab/tools/bench_tables.py`).
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import children  # pylint: disable=wrong-import-position

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# Which fenced block of the README each job is: the one after the heading.
_BLOCKS = {"main": "## Quick start", "tests": "## Tests"}


def readme_command(job: str, readme: str) -> str:
  """The first fenced command after the README heading of `job`."""
  after = readme.split(_BLOCKS[job], 1)
  if len(after) < 2:
    raise ValueError(f"README.md has no {_BLOCKS[job]!r} section")
  m = re.search(r"```\n(.+?)\n```", after[1], re.S)
  if not m:
    raise ValueError(f"README.md's {_BLOCKS[job]!r} has no command block")
  return m.group(1).strip()


_LOAD_EVERY_S = 10
# Runs the command and writes the peak resident memory (KiB) of its
# largest process. The kernel keeps the peak of the memory a process
# replaces at exec, so a child forked from this process would report at
# least this process's own peak; the launcher's children start from the
# launcher's small one.
_LAUNCHER = """
import os, resource, subprocess, sys
code = subprocess.call(["bash", "-c", sys.argv[1]])
with open(sys.argv[2], "w") as f:
  f.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
if code < 0:
  os.kill(os.getpid(), -code)
sys.exit(code)
"""


def _cpu_of_children() -> float:
  u = resource.getrusage(resource.RUSAGE_CHILDREN)
  return u.ru_utime + u.ru_stime


def timed(command: str, cwd: str, env: dict[str, str]) -> dict:
  """`command` in bash from `cwd`: its exit code, wall and CPU seconds, the
  peak resident memory of its largest process and the 1-minute load at its
  start and, sampled every 10 s, during it."""
  cpu, start, loads = _cpu_of_children(), time.time(), [os.getloadavg()[0]]
  with tempfile.NamedTemporaryFile("r", suffix=".maxrss") as peak:
    with subprocess.Popen([sys.executable, "-c", _LAUNCHER, command,
                           peak.name], cwd=cwd, env=env) as proc:
      while proc.poll() is None:
        try:
          proc.wait(timeout=_LOAD_EVERY_S)
        except subprocess.TimeoutExpired:
          loads.append(os.getloadavg()[0])
    kib = int(peak.read() or 0)
  return {"exit": proc.returncode, "wall_s": round(time.time() - start, 1),
          "cpu_s": round(_cpu_of_children() - cpu, 1),
          "peak_rss_mib": round(kib / 1024),
          "load_at_start": round(loads[0], 2),
          "load_max": round(max(loads), 2),
          "load_mean": round(sum(loads) / len(loads), 2)}


def run_steps(command: str, cwd: str, env: dict[str, str]) -> list[dict]:
  """Each ` && ` step of `command` in `cwd`, `timed`; stops at a failure."""
  rows = []
  for step in command.split(" && "):
    rows.append({"step": step, **timed(step, cwd, env)})
    print(f"{rows[-1]['wall_s']:8.1f} s  {step}", file=sys.stderr)
    if rows[-1]["exit"]:
      break
  return rows


def clone(scratch: str) -> str:
  """A clone of this checkout in `scratch`, a link to the data folder in
  `scratch/shared/data` beside it."""
  path = os.path.join(scratch, "paraflax")
  subprocess.run(["git", "clone", "-q", _ROOT, path], check=True)
  data = os.environ.get("PARAFLAX_DATA_DIR") or os.path.join(
      os.path.dirname(_ROOT), "shared", "data")
  os.makedirs(os.path.join(scratch, "shared"))
  os.symlink(os.path.abspath(data), os.path.join(scratch, "shared", "data"))
  return path


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("job", choices=sorted(_BLOCKS))
  parser.add_argument("--output", help="default: lab/results/"
                      "newcomer.JOB.HARDWARE.json")
  parser.add_argument("--keep", action="store_true",
                      help="keep the scratch clone (its runs/ folder)")
  args = parser.parse_args(argv)
  output = args.output or os.path.join(
      _ROOT, "lab", "results", f"newcomer.{args.job}.{children.hardware()}.json")
  if children.commit().endswith("+changes"):
    print("newcomer: commit the checkout first; a clone holds the commit, "
          "not the working tree", file=sys.stderr)
    return 2
  with open(os.path.join(_ROOT, "README.md"), encoding="utf-8") as f:
    command = readme_command(args.job, f.read())
  # The output is part of the recorded command, so `lab/run.py NAME --as
  # NEW` repeats it beside NAME on another machine of the same name.
  head = children.run_facts(__file__, [args.job, "--output",
                                       os.path.abspath(output)])
  scratch = tempfile.mkdtemp(prefix="newcomer.")
  try:
    clone_dir = clone(scratch)
    env = {k: v for k, v in children.USER_ENV.items()
           if not k.startswith(("VIRTUAL_ENV", "PYTHON", "PARAFLAX_"))}
    env.update(PIP_CACHE_DIR=os.path.join(scratch, "pip-cache"),
               XDG_CACHE_HOME=os.path.join(scratch, "cache"),
               PATH=os.pathsep.join(
                   p for p in env.get("PATH", "").split(os.pathsep)
                   if not p.endswith(os.path.join(".venv", "bin"))))
    steps = run_steps(command, clone_dir, env)
  finally:
    if not args.keep:
      shutil.rmtree(scratch, ignore_errors=True)
  result = {**head, "job": args.job, "readme_command": command,
            "steps": steps, "ok": all(s["exit"] == 0 for s in steps),
            "wall_s": round(sum(s["wall_s"] for s in steps), 1)}
  children.write_result(output, result)
  print(f"{args.job}: {result['wall_s']} s, "
        f"{'ok' if result['ok'] else 'FAILED'}; wrote {output}")
  return 0 if result["ok"] else 1


if __name__ == "__main__":
  sys.exit(main())
