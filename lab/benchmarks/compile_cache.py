"""What the compilation cache saves the NMT's start-up (paraflax.compile_cache).

Five `paraflax train --config configs/nmt.py:de` runs, one after the other:
without the cache (`off`), with an empty one (`cold`), with the cold run's
(`warm`), then each of `off` and `warm` resumed to twice the steps. Each
run's wall time, the seconds to its first step and its CPU time (user +
sys, which other jobs on the cores distort less) go to --output, with the
run's facts (children.write_result).

  PARAFLAX_DATA_DIR=... python lab/benchmarks/compile_cache.py \
      --folder /tmp/cc --output lab/results/compile_cache.json
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import time

import children  # lab/benchmarks/children.py, beside this script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# tqdm's "<done>/<total>" in the progress bar: the first nonzero one is
# the end of the first step (the progress bar refreshes at most each 0.1 s).
_PROGRESS = re.compile(r"\b([1-9]\d*)/\d+ \[")
# The file that marks --folder as this benchmark's scratch.
_CLAIM = ".compile_cache_benchmark"


def _cpu_seconds() -> float:
  usage = resource.getrusage(resource.RUSAGE_CHILDREN)
  return usage.ru_utime + usage.ru_stime


def _claim(folder: str) -> None:
  """Empties `folder` for a new run where this script made it, or makes
  it; a folder holding anything else stops the run before any work."""
  if (os.path.isdir(folder) and os.listdir(folder)
      and not os.path.exists(os.path.join(folder, _CLAIM))):
    raise SystemExit(f"--folder {folder}: it holds files this benchmark did "
                     "not write; give it a new or empty folder")
  shutil.rmtree(folder, ignore_errors=True)
  os.makedirs(folder)
  with open(os.path.join(folder, _CLAIM), "w", encoding="utf-8"):
    pass


def run(folder: str, workdir: str, cache: str, steps: int) -> dict:
  """Trains `folder`/`workdir` to `steps` with PARAFLAX_COMPILATION_CACHE
  `cache`; the recorded command names the folder FOLDER, as the result's
  own command does (the scratch is this machine's)."""
  command = [sys.executable, "-m", "paraflax.cli", "train", "--config",
             "configs/nmt.py:de", "--workdir", os.path.join(folder, workdir),
             f"--config.train_steps={steps}"]
  env = dict(os.environ, PARAFLAX_COMPILATION_CACHE=cache)
  load, cpu, start = os.getloadavg()[0], _cpu_seconds(), time.time()
  first_step = None
  with subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True) as proc:
    for chunk in iter(lambda: proc.stdout.read(256), ""):
      if first_step is None and _PROGRESS.search(chunk):
        first_step = time.time() - start
  if proc.returncode:
    raise SystemExit(f"{' '.join(command)} failed ({proc.returncode})")
  shown = f"PARAFLAX_COMPILATION_CACHE={cache} " + " ".join(command[1:])
  return {"command": shown.replace(folder, "FOLDER"),
          "seconds": round(time.time() - start, 1),
          "first_step_seconds": round(first_step or float("nan"), 1),
          "cpu_seconds": round(_cpu_seconds() - cpu, 1),
          "load_average_start": load,
          "load_average_end": os.getloadavg()[0]}


def compile_seconds(values: list[bytes]) -> list[int]:
  """The compile time jax stored in each entry (whole seconds, cut)."""
  from jax._src import compilation_cache  # pylint: disable=g-import-not-at-top
  return sorted(compilation_cache.extract_executable_and_time(
      compilation_cache.decompress_executable(value))[1] for value in values)


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--folder", required=True,
                      help="scratch: workdirs and the cache (a new or empty "
                      "folder, or this benchmark's own, emptied first)")
  parser.add_argument("--steps", type=int, default=20)
  parser.add_argument("--output", required=True)
  args = parser.parse_args(argv)
  _claim(args.folder)
  cache = os.path.join(args.folder, "xla")
  plan = (("off", "off", "w_off", args.steps),
          ("cold", cache, "w_cache", args.steps),
          ("warm", cache, "w_warm", args.steps),
          ("resume_off", "off", "w_off", 2 * args.steps),
          ("resume_warm", cache, "w_warm", 2 * args.steps))
  runs = {}
  for name, cache_setting, workdir, steps in plan:
    runs[name] = run(args.folder, workdir, cache_setting, steps)
    print(name, runs[name], flush=True)
  from paraflax import compile_cache  # pylint: disable=g-import-not-at-top
  values = compile_cache.FileCache(
      os.path.join(cache, compile_cache.host_key())).values()
  result = {**children.run_facts(__file__, argv),
            "benchmark": "compile_cache", "runs": runs,
            "cache_entries": len(values),
            "cache_bytes": sum(len(value) for value in values),
            "compile_seconds": compile_seconds(values)}
  children.write_result(args.output, result)


if __name__ == "__main__":
  main()
