r"""Peak memory of `paraflax train` against the size of its training file:
the paraphrase recipe streams a back-translated file into the workdir's
encoded cache and reads its megabatches from there, so peak RSS should not
grow from 10^5 to 10^7 pairs; and its first logged losses against those of
another checkout (the in-memory path before streaming) on the same small
file.

Command (writes benchmarks/results/stage_scale_training.<hardware>.json,
the hardware from /proc/cpuinfo's model name and the core count):
  paraflax export-pairs --task paraphrase_en_human --output /tmp/human.jsonl
  nice -n 10 .venv/bin/python benchmarks/train_memory.py \
    --source /tmp/human.jsonl --sizes 100000 10000000 --scratch /tmp/tm \
    [--baseline-tree /tmp/before --baseline-commit COMMIT \
     --baseline-sizes 100000 1000000]
Measurements made apart (--output A.json, B.json) are joined with
  .venv/bin/python benchmarks/train_memory.py --merge A.json B.json
(a later file's run of a size and path replaces an earlier one's).

Data: the records of --source (the 19,432 human pairs as back-translation
records), repeated in file order with new ids to reach each size (the JSON
says how many times over); the files are written under --scratch, never in
the repository. Model: configs/gran.py with random words and tiny sizes
(32-dimensional words and states, batches of 50, megabatches of 4,
max_len 24), --steps updates, a loss logged every 4. Each run is a child
`paraflax train` under `/usr/bin/time -v`: its peak RSS is "Maximum
resident set size", cache building (two streamed passes: the vocabulary,
then the encoding) included. --baseline-tree is a checkout whose
`paraflax` (first on PYTHONPATH) trains on the first size for the loss
comparison.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
import children  # pylint: disable=wrong-import-position
from paraflax.data import paths  # pylint: disable=wrong-import-position

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = ("--config.data.mixture=()", "--config.model.word_vectors=",
        "--config.model.word_dim=32", "--config.model.hidden=32",
        "--config.batch_size=50", "--config.megabatch=4",
        "--config.data.max_len=24", "--config.log_every=4",
        "--config.eval_every=100000", "--config.checkpoint.every=100000",
        "--config.mesh.num_devices=1")


def make_file(source: str, n: int, output: str) -> float:
  """`n` records of `source` repeated in order, ids renumbered; returns
  how many times over the source was used."""
  with open(source, encoding="utf-8") as f:
    records = [json.loads(line) for line in f]
  if os.path.exists(output):
    with open(output, "rb") as f:
      if sum(1 for _ in f) == n:
        return n / len(records)
  tmp = output + ".tmp"
  with open(tmp, "w", encoding="utf-8") as f:
    for i in range(n):
      record = dict(records[i % len(records)], id=i)
      f.write(json.dumps(record, ensure_ascii=False) + "\n")
  os.replace(tmp, output)
  return n / len(records)


def train(data: str, workdir: str, steps: int, tree: str | None = None
          ) -> dict:
  """One `paraflax train` under /usr/bin/time -v: peak RSS, wall time,
  the logged losses."""
  shutil.rmtree(workdir, ignore_errors=True)
  env = dict(os.environ)
  # The corpora as this checkout finds them (the other one lies elsewhere).
  env.setdefault("PARAFLAX_DATA_DIR", str(paths.data_dir()))
  if tree:
    env["PYTHONPATH"] = tree
  argv = ["/usr/bin/time", "-v", sys.executable, "-m", "paraflax.cli",
          "train", "--config", os.path.join(ROOT, "configs", "gran.py"),
          "--workdir", workdir, f"--config.data.task=backtranslated:{data}",
          f"--config.train_steps={steps}", *TINY]
  start = time.time()
  done = subprocess.run(argv, env=env, cwd=tree or ROOT, capture_output=True,
                        text=True, check=False)
  wall = time.time() - start
  if done.returncode:
    sys.stderr.write(done.stderr[-4000:])
    raise children.ChildFailed(f"paraflax train on {data} failed")
  peak_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)",
                           done.stderr)[1])
  with open(os.path.join(workdir, "metrics.jsonl"), encoding="utf-8") as f:
    rows = [json.loads(line) for line in f]
  cache = os.path.join(workdir, "data_cache")
  cache_bytes = sum(os.path.getsize(os.path.join(d, n))
                    for d, _, names in os.walk(cache) for n in names)
  return {"peak_rss_mib": round(peak_kib / 1024, 1),
          "wall_s": round(wall, 1),
          "losses": [[r["step"], r["loss"]] for r in rows if "loss" in r],
          "encoded_cache_mib": round(cache_bytes / 2**20, 1)}


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--source")
  parser.add_argument("--sizes", type=int, nargs="*",
                      default=[100_000, 10_000_000])
  parser.add_argument("--scratch")
  parser.add_argument("--steps", type=int, default=8)
  parser.add_argument("--baseline-tree")
  parser.add_argument("--baseline-commit", default="")
  parser.add_argument("--baseline-sizes", type=int, nargs="*",
                      help="sizes the baseline trains on (the first of "
                      "--sizes by default)")
  parser.add_argument("--merge", nargs="+", metavar="RESULT",
                      help="only join the runs of these result files")
  parser.add_argument("--output")
  args = parser.parse_args(argv)
  if args.merge:
    merge(args.merge, args.output or _default_output())
    return
  if not (args.source and args.scratch):
    parser.error("--source and --scratch are needed to measure")
  os.makedirs(args.scratch, exist_ok=True)
  out = {"benchmark": "stage_scale_training",
         **children.run_facts("benchmarks/train_memory.py", argv),
         "model": "configs/gran.py, random words, " + " ".join(TINY),
         "steps": args.steps, "commit": _commit(), "runs": []}
  output = args.output or _default_output()
  for n in args.sizes:
    data = os.path.join(args.scratch, f"pairs_{n}.jsonl")
    times = make_file(args.source, n, data)
    result = train(data, os.path.join(args.scratch, f"w_{n}"), args.steps)
    out["runs"].append({"pairs": n, "source_repeated": round(times, 3),
                        "path": "streamed", **result})
    _write(output, out)
  for n in (args.baseline_sizes or args.sizes[:1]) if args.baseline_tree \
      else ():
    data = os.path.join(args.scratch, f"pairs_{n}.jsonl")
    times = make_file(args.source, n, data)
    result = train(data, os.path.join(args.scratch, f"w_{n}_baseline"),
                   args.steps, args.baseline_tree)
    out["runs"].append({"pairs": n, "source_repeated": round(times, 3),
                        "path": "in-memory", "commit": args.baseline_commit,
                        **result})
    _write(output, out)
  print(output)


def _commit() -> str:
  """The checkout's commit, with `+changes` when its files differ from it."""
  def git(*cmd):
    return subprocess.run(["git", *cmd], cwd=ROOT, capture_output=True,
                          text=True, check=False).stdout.strip()
  return git("rev-parse", "--short", "HEAD") + (
      "+changes" if git("status", "--porcelain", "--untracked-files=no")
      else "")


def _default_output() -> str:
  return os.path.join(ROOT, "benchmarks", "results",
                      f"stage_scale_training.{children.hardware()}.json")


def _summarise(out: dict) -> None:
  """Peak RSS growth per path, and whether the streamed and in-memory runs
  of one size logged the same losses."""
  for path in ("streamed", "in-memory"):
    runs = sorted((r for r in out["runs"] if r["path"] == path),
                  key=lambda r: r["pairs"])
    if len(runs) > 1:
      out[f"peak_rss_growth_mib.{path}"] = {
          f"{runs[0]['pairs']}->{r['pairs']}": round(
              r["peak_rss_mib"] - runs[0]["peak_rss_mib"], 1)
          for r in runs[1:]}
  by = {(r["pairs"], r["path"]): r["losses"] for r in out["runs"]}
  out["same_losses"] = {str(n): by[n, "streamed"] == by[n, "in-memory"]
                        for n, path in by if path == "streamed"
                        and (n, "in-memory") in by}


def merge(results: list[str], output: str) -> None:
  """One result file of the runs of several, each run with its part (its
  command, date and commit); a later file's run of a size and path
  replaces an earlier one's."""
  out = {"benchmark": "stage_scale_training", "parts": [], "runs": []}
  for path in results:
    with open(path, encoding="utf-8") as f:
      part = json.load(f)
    out["parts"].append({k: v for k, v in part.items()
                         if k not in ("runs", "benchmark", "parts")
                         and not k.startswith(("peak_rss_growth",
                                               "same_losses"))})
    later = {(r["pairs"], r["path"]) for r in part["runs"]}
    out["runs"] = [r for r in out["runs"]
                   if (r["pairs"], r["path"]) not in later]
    out["runs"] += [dict(r, part=len(out["parts"]) - 1) for r in part["runs"]]
  out["runs"].sort(key=lambda r: (r["path"], r["pairs"]))
  _write(output, out)
  print(output)


def _write(output: str, out: dict) -> None:
  """The results so far (after every run: a long one may be cut short)."""
  print(json.dumps(out["runs"][-1]), flush=True)
  _summarise(out)
  with open(output, "w", encoding="utf-8") as f:
    json.dump(out, f, indent=2)
    f.write("\n")

if __name__ == "__main__":
  main()
