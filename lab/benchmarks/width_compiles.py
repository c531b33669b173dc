"""What `data.width_multiple` costs in compiles and changes in results: the
same NMT run at each multiple, its programs' compiles counted (jax's
JAX_LOG_COMPILES lines, one a program and shape), its losses and its dev
BLEU at the end.

    python lab/benchmarks/width_compiles.py --work OUT \\
        --output lab/results/width_compiles.intel-xeon-2core.json

Each run trains a 24-unit `configs/nmt.py:de` (`data.max_len=64`) for
--steps steps in a fresh workdir with the compilation cache off, logging
the loss every 10 steps, then evaluates `evals.dev` (the first 500 dev
pairs, beam 4) as training does at its last step. Per run: wall seconds,
the compiles of each program (`step` is the train step, `search_all` the
beam search), the logged losses and the dev BLEU. The result is written by
children.write_result, with the command, commit, hardware and load.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import time

import children  # lab/benchmarks/children.py, beside this script

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# A small NMT: the compiles, not the model, are measured.
_SETTINGS = ("--config.vocab.size=600", "--config.model.emb_dim=24",
             "--config.model.hidden=24", "--config.model.attention_dim=24",
             "--config.data.max_len=64", "--config.log_every=10",
             "--config.checkpoint.every=100000")
_COMPILE = re.compile(r"Compiling jit\((\w+)\) with global shapes")


def run(multiple: int, steps: int, work: str) -> dict:
  """One training run at `multiple`; its compiles, losses and dev BLEU."""
  workdir = os.path.join(work, f"width{multiple}")
  shutil.rmtree(workdir, ignore_errors=True)
  start = time.perf_counter()
  done = subprocess.run(
      [os.path.join(_ROOT, ".venv", "bin", "paraflax"), "train", "--config",
       "configs/nmt.py:de", "--workdir", workdir,
       f"--config.data.width_multiple={multiple}",
       f"--config.train_steps={steps}", f"--config.eval_every={steps}",
       *_SETTINGS],
      cwd=_ROOT, capture_output=True, text=True, check=False,
      env=dict(os.environ, JAX_LOG_COMPILES="1",
               PARAFLAX_COMPILATION_CACHE="off"))
  wall = time.perf_counter() - start
  if done.returncode:
    sys.exit(f"width {multiple}: paraflax train failed:\n{done.stderr[-3000:]}")
  with open(os.path.join(workdir, "metrics.jsonl"), encoding="utf-8") as f:
    rows = [json.loads(line) for line in f]
  losses = [[r["step"], r["loss"]] for r in rows if "loss" in r]
  (bleu,) = (r["dev/bleu"] for r in rows if "dev/bleu" in r)
  return {"width_multiple": multiple, "wall_s": round(wall, 2),
          "compiles": dict(sorted(collections.Counter(
              _COMPILE.findall(done.stderr)).items())),
          "losses": losses, "last_loss": losses[-1][1], "dev_bleu": bleu}


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--work", required=True,
                      help="scratch folder for the workdirs")
  parser.add_argument("--multiples", type=int, nargs="+", default=[8, 32],
                      help="the data.width_multiple of each run")
  parser.add_argument("--steps", type=int, default=300)
  parser.add_argument("--output", help="the result JSON")
  args = parser.parse_args(argv)
  work = os.path.abspath(args.work)
  runs = []
  for multiple in args.multiples:
    runs.append(run(multiple, args.steps, work))
    print(json.dumps({k: v for k, v in runs[-1].items() if k != "losses"}),
          file=sys.stderr)
  report = {**children.run_facts(__file__, argv), "steps": args.steps,
            "settings": list(_SETTINGS), "runs": runs}
  if args.output:
    children.write_result(args.output, report)


if __name__ == "__main__":
  main()
