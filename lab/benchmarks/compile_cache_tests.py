"""What the test session's compilation cache saves: `pytest
tests/test_training.py` (one process) with PARAFLAX_COMPILATION_CACHE=off,
then with the session cache tests/conftest.py sets up (empty at the start,
shared by every test after the first that compiles a program). Each run's
wall time, CPU time (user + sys) and load, and its slowest tests
(pytest --durations), go to --output with the run's facts
(children.write_result).

  PARAFLAX_DATA_DIR=... python lab/benchmarks/compile_cache_tests.py \
      --output lab/results/compile_cache.tests.json
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time

import children  # lab/benchmarks/children.py, beside this script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# pytest --durations lines: "12.34s call     tests/test_x.py::test_name[id]".
_DURATION = re.compile(r"^([\d.]+)s call\s+\S+::(\S+)$", re.M)
SIDES = {"off": "off", "session_cache": None}  # None: conftest.py's cache


def run(cache: str | None, slowest: int) -> dict:
  env = dict(os.environ, PYTHONPATH=ROOT)
  env.pop("PARAFLAX_COMPILATION_CACHE", None)
  if cache:
    env["PARAFLAX_COMPILATION_CACHE"] = cache
  before = resource.getrusage(resource.RUSAGE_CHILDREN)
  load, start = os.getloadavg()[0], time.time()
  proc = subprocess.run(
      [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
       "tests/test_training.py", f"--durations={slowest}"],
      cwd=ROOT, env=env, capture_output=True, text=True, check=False)
  wall = time.time() - start
  if proc.returncode:
    sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
    raise SystemExit(f"tests/test_training.py failed ({proc.returncode})")
  after = resource.getrusage(resource.RUSAGE_CHILDREN)
  return {"wall_seconds": round(wall, 2),
          "user_seconds": round(after.ru_utime - before.ru_utime, 2),
          "sys_seconds": round(after.ru_stime - before.ru_stime, 2),
          "load_average_start": load,
          "load_average_end": os.getloadavg()[0],
          "durations": {name: float(seconds) for seconds, name
                        in _DURATION.findall(proc.stdout)}}


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--slowest", type=int, default=5,
                      help="how many of the slowest tests to keep")
  parser.add_argument("--output", required=True)
  args = parser.parse_args(argv)
  result = children.run_facts(__file__, argv)
  result["benchmark"] = "compile_cache_tests"
  for name, cache in SIDES.items():
    result[name] = run(cache, args.slowest)
    print(name, result[name], flush=True)
  children.write_result(args.output, result)


if __name__ == "__main__":
  main()
