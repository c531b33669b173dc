r"""Peak memory of `paraflax train` against the size of its training file:
each recipe streams its file into the workdir's encoded cache and reads
its batches from there, so peak RSS should not grow from 10^5 to 10^7
pairs; and its first logged losses against those of another checkout
(the in-memory path before streaming) on the same small file.
--recipe paraphrase (default) trains on back-translation records,
--recipe nmt or bilingual on de-en line files.

Command (writes lab/results/stage_scale_training.<hardware>.json,
the hardware from /proc/cpuinfo's model name and the core count, by
children.write_result after every run, with the run's facts):
  paraflax export-pairs --task paraphrase_en_human --output /tmp/human.jsonl
  nice -n 10 .venv/bin/python lab/benchmarks/train_memory.py \
    --source /tmp/human.jsonl --sizes 100000 10000000 --scratch /tmp/tm \
    [--baseline-tree /tmp/before --baseline-commit COMMIT \
     --baseline-sizes 100000 1000000]
Measurements made apart (--output A.json, B.json) are joined with
  .venv/bin/python lab/benchmarks/train_memory.py --merge A.json B.json
(a later file's run of a size and path replaces an earlier one's; each
part keeps its own command, commit, date and run facts).

Data: the records of --source (the 19,432 human pairs as back-translation
records), repeated in file order with new ids to reach each size (the JSON
says how many times over); for nmt and bilingual the 29,000 Multi30k
train pairs (de-en) repeated, and the first 8 validation pairs as dev;
the files are written under --scratch, never in the repository. Model:
configs/gran.py with random words and tiny sizes (32-dimensional words
and states, batches of 50, megabatches of 4, max_len 24); for nmt and
bilingual configs/<recipe>.py:de with 24 units, 2,000 subwords, batches
of 32 and dev scores of 4 pairs at the last step; --steps updates, a loss
logged every 4. With --subwords-from N the workdir's subword models are
trained on the first N pairs before the run (as a resumed run finds
them): the run's peak is then the streaming's and training's, without
the subword sample (at most 2,000,000 pairs, held while the models
train). Each run is a child
`paraflax train` under `/usr/bin/time -v`: its peak RSS is "Maximum
resident set size", cache building (two streamed passes: the vocabulary,
then the encoding) included. --baseline-tree is a checkout whose
`paraflax` (first on PYTHONPATH) trains on the first size for the loss
comparison.
"""
from __future__ import annotations

import argparse
import dataclasses
import gzip
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
import children  # pylint: disable=wrong-import-position
from paraflax.data import paths  # pylint: disable=wrong-import-position

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_LOOP = ("--config.log_every=4", "--config.eval_every=100000",
         "--config.checkpoint.every=100000", "--config.mesh.num_devices=1")
TINY = ("--config.data.mixture=()", "--config.model.word_vectors=",
        "--config.model.word_dim=32", "--config.model.hidden=32",
        "--config.batch_size=50", "--config.megabatch=4",
        "--config.data.max_len=24", *_LOOP)
_SEQ2SEQ = ("--config.vocab.size=2000", "--config.model.hidden=24",
            "--config.batch_size=32", "--config.evals.dev.sentences=4",
            *_LOOP)


@dataclasses.dataclass(frozen=True)
class Recipe:
  config: str  # under configs/
  flags: tuple[str, ...]
  make_file: Callable[[str, int, str], float]  # (source, n, output)
  data_flag: str  # the flag that names the file, {path} in it


def _bitext_file(source: str, n: int, output: str) -> float:
  """`n` Multi30k train pairs repeated in order, as `output`.de and
  `output`.en (a line may hold a tab: no TSV); returns how many times
  over. `source` is unused: the bundled pairs are read."""
  del source
  sides = []
  for lang in ("de", "en"):
    with gzip.open(paths.data_path("multi30k_task1", f"train.{lang}.gz"),
                   "rt", encoding="utf-8") as f:
      sides.append(f.read().splitlines())
    path = f"{output}.{lang}"
    if not os.path.exists(path):
      with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in itertools.islice(
            itertools.cycle(sides[-1]), n))
      os.replace(path + ".tmp", path)
  return n / len(sides[0])


def _dev_file(scratch: str) -> str:
  """The first 8 Multi30k validation pairs as a TSV."""
  path = os.path.join(scratch, "dev.tsv")
  sides = []
  for lang in ("de", "en"):
    with gzip.open(paths.data_path("multi30k_task1", f"val.{lang}.gz"),
                   "rt", encoding="utf-8") as f:
      sides.append(f.read().splitlines()[:8])
  with open(path, "w", encoding="utf-8") as f:
    f.writelines(f"{s}\t{t}\n" for s, t in zip(*sides))
  return path


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


RECIPES = {
    "paraphrase": Recipe("gran.py", TINY, make_file,
                         "--config.data.task=backtranslated:{path}"),
    "nmt": Recipe("nmt.py:de", ("--config.model.emb_dim=24",
                                "--config.model.attention_dim=24",
                                *_SEQ2SEQ),
                  _bitext_file,
                  "--config.data.train=('lines:{path}.de,{path}.en',)"),
    "bilingual": Recipe("bilingual.py:de", (
        "--config.model.word_dim=24", "--config.eval.sentences=4",
        "--config.eval.batch_size=4", *_SEQ2SEQ),
                        _bitext_file,
                        "--config.data.train=('lines:{path}.de,{path}.en',)"),
}


def _subwords(recipe: str, data: str, workdir: str, pairs: int) -> None:
  """The workdir's subword models, trained on the first `pairs` pairs of
  `data`.de and `data`.en with the recipe's vocabulary settings."""
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  from paraflax.data import sentencepiece_vocab  # pylint: disable=g-import-not-at-top
  config = config_lib.load(os.path.join(ROOT, "configs",
                                        RECIPES[recipe].config))
  config.vocab.size = 2000
  with open(data + ".de", encoding="utf-8") as de, \
      open(data + ".en", encoding="utf-8") as en:
    first = [(s.rstrip("\n"), t.rstrip("\n"))
             for s, t in itertools.islice(zip(de, en), pairs)]
  sentencepiece_vocab.pair(workdir, first, **config.vocab.to_dict())


def train(data: str, workdir: str, steps: int, tree: str | None = None,
          recipe: str = "paraphrase", extra: tuple[str, ...] = (),
          subwords_from: int = 0) -> dict:
  """One `paraflax train` under /usr/bin/time -v: peak RSS, wall time,
  the logged losses."""
  shutil.rmtree(workdir, ignore_errors=True)
  if subwords_from:
    _subwords(recipe, data, workdir, subwords_from)
  env = dict(os.environ)
  # The corpora as this checkout finds them (the other one lies elsewhere).
  env.setdefault("PARAFLAX_DATA_DIR", str(paths.data_dir()))
  if tree:
    env["PYTHONPATH"] = tree
  # The checkout's own config: another checkout's keys may differ.
  argv = ["/usr/bin/time", "-v", sys.executable, "-m", "paraflax.cli",
          "train", "--config",
          os.path.join(tree or ROOT, "configs", RECIPES[recipe].config),
          "--workdir", workdir, RECIPES[recipe].data_flag.format(path=data),
          f"--config.train_steps={steps}", *RECIPES[recipe].flags, *extra]
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
  parser.add_argument("--recipe", choices=sorted(RECIPES),
                      default="paraphrase")
  parser.add_argument("--subwords-from", type=int, default=0,
                      help="nmt, bilingual: train the subword models on "
                      "this many first pairs before the run")
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
    merge(args.merge, args.output or _default_output(), argv)
    return
  recipe = RECIPES[args.recipe]
  if not (args.scratch and (args.source or args.recipe != "paraphrase")):
    parser.error("--scratch (and, for paraphrase, --source) are needed to "
                 "measure")
  os.makedirs(args.scratch, exist_ok=True)
  extra = () if args.recipe == "paraphrase" else (
      f"--config.data.dev=tsv:{_dev_file(args.scratch)}",)
  out = {"benchmark": "stage_scale_training",
         **children.run_facts(__file__, argv),
         "recipe": args.recipe,
         "model": f"configs/{recipe.config}, " + " ".join(recipe.flags),
         "subwords_from": args.subwords_from,
         "steps": args.steps, "runs": []}
  output = args.output or _default_output(args.recipe)
  suffix = "jsonl" if args.recipe == "paraphrase" else "txt"
  runs = [(n, "streamed", None) for n in args.sizes] + [
      (n, "in-memory", args.baseline_tree)
      for n in (args.baseline_sizes or args.sizes[:1])
      if args.baseline_tree]
  for n, path, tree in runs:
    data = os.path.join(args.scratch, f"pairs_{n}.{suffix}")
    times = recipe.make_file(args.source, n, data)
    workdir = os.path.join(args.scratch, f"w_{n}" + (
        "_baseline" if tree else ""))
    result = train(data, workdir, args.steps, tree, args.recipe, extra,
                   args.subwords_from)
    out["runs"].append({"pairs": n, "source_repeated": round(times, 3),
                        "path": path, **result, **(
                            {"commit": args.baseline_commit} if tree else {})})
    _write(output, out)
  print(output)


def _default_output(recipe: str = "paraphrase") -> str:
  variant = "" if recipe == "paraphrase" else recipe + "."
  return os.path.join(ROOT, "lab", "results", "stage_scale_training."
                      f"{variant}{children.hardware()}.json")


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


def merge(results: list[str], output: str,
          argv: list[str] | None = None) -> None:
  """One result file of the runs of several, each run with its part (its
  command, date and commit); a later file's run of a size and path
  replaces an earlier one's."""
  out = {**children.run_facts(__file__, argv),
         "benchmark": "stage_scale_training", "parts": [], "runs": []}
  for path in results:
    with open(path, encoding="utf-8") as f:
      part = json.load(f)
    recipe = part.get("recipe", "paraphrase")
    if out.setdefault("recipe", recipe) != recipe:
      raise SystemExit(f"{path}: runs of the {recipe} recipe; the files "
                       f"before it hold the {out['recipe']} recipe's.")
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
  children.write_result(output, out)

if __name__ == "__main__":
  main()
