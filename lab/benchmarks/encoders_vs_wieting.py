r"""Avg and LSTM-avg training pairs/s: ours against Wieting's PyTorch code.

Both train on the same pairs (the 19,432 human English pairs of
`paraphrase_en_human`, tokenized and cut to `data.max_len` words as our
recipe does, written as the `sent1<TAB>sent2` file their
`preprocess/text2HDF5.py` reads), with the same batch (100), megabatch (40,
their annealing off), word dimension (300), margin (0.4), Adam 1e-3, for
the same number of megabatches; the first megabatch of each is warm-up
(our compile, their first allocations) and pairs/s comes from the median of
the rest. Each side runs in its own child process; the two alternate,
`--rounds` times each (theirs first in odd rounds, ours first in even
ones), so that load which comes and goes falls on both, and a side's
pairs/s is the median of its rounds (each round's, and the load at its
start, are kept):

- theirs: `lab/benchmarks/wieting_child.py` under the peer's python (torch),
  importing their modules from a checkout of
  jwieting/paraphrastic-representations-at-scale;
- ours: `lab/benchmarks/train_throughput.py`'s child (`configs/avg.py`,
  `configs/lstmavg.py`, 1 CPU device, `length_groups` as configured).

Their LSTM model is a bidirectional LSTM (150 units each way, their
default, 300-d output) averaged over time; ours a forward LSTM of 300 units
(300-d output), which costs 4/3 of theirs in matmul FLOPs per word.

With `--quality` (Avg only), each side also trains for the same
`--megabatches` x megabatch updates and both are scored by our STS
evaluator (`evaluators.sts`, what `paraflax eval-sts` runs) on the same
sentences: theirs is their trained word table and vocabulary (the child
writes them), a sentence the mean of the vectors of its words that are in
their vocabulary (tokenized by our tokenizer, which made the words their
vocabulary was built from; words not in it are dropped, their
`zero_unk=1`, and a sentence with none is their UNK vector); ours is
`configs/avg.py` trained for the same updates in the parent, its checkpoint
at the last update (evaluation and checkpoint only there).

Commands (write lab/results/encoders_vs_wieting.json, then
encoders_vs_wieting_quality.json, by children.write_result: the run's
facts, with torch's version and the peer checkout's commit as the peer's):
  .venv/bin/python lab/benchmarks/encoders_vs_wieting.py \
      --peer-python $PEERS/wieting/bin/python \
      --peer-src $PEERS/wieting-src --megabatches 3
  .venv/bin/python lab/benchmarks/encoders_vs_wieting.py \
      --peer-python $PEERS/wieting/bin/python \
      --peer-src $PEERS/wieting-src --models avg --quality \
      --megabatches 8
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import children  # lab/benchmarks/children.py, beside this script

_HERE = os.path.dirname(os.path.abspath(__file__))
_RESULTS = os.path.join(os.path.dirname(_HERE), "results")
_AVG_CONFIG = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "configs", "avg.py")
# The STS figures the tables quote: name -> (result key path).
_FIGURES = {"STSb dev": ("datasets", "STSb.dev", "pearson"),
            "STSb test": ("datasets", "STSb.test", "pearson"),
            "STS12-15 mean": ("semeval_2012_2015", "mean_pearson")}
_PEER = "jwieting/paraphrastic-representations-at-scale"
# Our model name -> theirs.
_MODELS = {"avg": "avg", "lstmavg": "lstm"}


def _parse(argv: list[str] | None) -> argparse.Namespace:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--peer-python", required=True,
                      help="a python with torch, scipy and sacremoses")
  parser.add_argument("--peer-src", required=True,
                      help="checkout of paraphrastic-representations-at-scale")
  parser.add_argument("--models", nargs="+", choices=sorted(_MODELS),
                      default=["avg", "lstmavg"])
  parser.add_argument("--megabatches", type=int, default=3,
                      help="per side and model; the first is warm-up")
  parser.add_argument("--rounds", type=int, default=3,
                      help="speed runs of each side and model, alternating")
  parser.add_argument("--quality", action="store_true",
                      help="Avg only: also train both for --megabatches "
                      "megabatches and score both on STS with our evaluator")
  parser.add_argument("--output", default="",
                      help="default: results/encoders_vs_wieting.json, or "
                      "encoders_vs_wieting_quality.json with --quality")
  args = parser.parse_args(argv)
  if args.quality and args.models != ["avg"]:
    parser.error("--quality scores Avg only (their LSTM is no word table): "
                 "give --models avg")
  args.output = args.output or os.path.join(
      _RESULTS, "encoders_vs_wieting"
      + ("_quality" if args.quality else "") + ".json")
  return args


def _write_pairs(path: str) -> dict[str, Any]:
  """Our training pairs as their text input: tokens joined by spaces."""
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  from paraflax.data import words  # pylint: disable=g-import-not-at-top
  config = config_lib.load(_AVG_CONFIG)
  examples = tasks.examples(config.data.task, config.data.split)
  cut = config.data.max_len
  with open(path, "w", encoding="utf-8") as f:
    for e in examples:
      a, b = (" ".join(words.tokenize(e[k])[:cut])
              for k in ("sentence1", "sentence2"))
      f.write(f"{a}\t{b}\n")
  return {"task": config.data.task, "pairs": len(examples), "max_len": cut,
          "batch_size": config.batch_size, "megabatch": config.megabatch}


def _theirs(args: argparse.Namespace, pairs: str, model: str,
            data: dict[str, Any], vectors: str = "") -> dict[str, Any]:
  proc = subprocess.run(
      [args.peer_python, os.path.join(_HERE, "wieting_child.py"),
       "--src", args.peer_src, "--pairs", pairs, "--model", model,
       "--batch", str(data["batch_size"]),
       "--megabatch", str(data["megabatch"]),
       "--megabatches", str(args.megabatches), "--vectors", vectors],
      stdout=subprocess.PIPE, text=True, check=False)
  lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
  if proc.returncode or not lines:
    raise children.ChildFailed(f"Wieting {model} child failed (exit "
                               f"{proc.returncode}); its stderr is above.")
  return json.loads(lines[-1])


def _interleaved(model: str, theirs: Callable[[], dict[str, Any]],
                 ours: Callable[[], dict[str, Any]], rounds: int
                 ) -> dict[str, Any]:
  """`rounds` runs of each side, alternating which goes first; each side's
  last run with pairs/s the median over its runs."""
  runs: dict[str, list[dict[str, Any]]] = {"ours": [], "wieting": []}
  for r in range(rounds):
    order = [("wieting", theirs), ("ours", ours)]
    for side, run in order if r % 2 == 0 else order[::-1]:
      load = os.getloadavg()[0]
      runs[side].append({**run(), "load_average_1min_at_start": load})
  row = {"model": model, "rounds": rounds}
  for side, done in runs.items():
    rates = [d["pairs_per_s"] for d in done]
    row[side] = {**done[-1], "pairs_per_s": statistics.median(rates),
                 "pairs_per_s_by_round": rates,
                 "load_average_1min_by_round": [
                     d["load_average_1min_at_start"] for d in done]}
  row["ours_over_wieting"] = (row["ours"]["pairs_per_s"]
                              / row["wieting"]["pairs_per_s"])
  return row


def _ours(args: argparse.Namespace, model: str) -> dict[str, Any]:
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  groups = config_lib.load(os.path.join(
      os.path.dirname(os.path.dirname(_HERE)), "configs", f"{model}.py")).length_groups
  return children.run_child(
      [os.path.join(_HERE, "train_throughput.py"), "--child", "1",
       "--calls", str(args.megabatches - 1), "--model", model,
       "--groups", str(groups)], 1)


def _sts(embed: Callable[[Sequence[str], str | None], Any]
         ) -> dict[str, Any]:
  """Our STS table of an embedding function, and the figures it quotes
  (Pearson x 100)."""
  from paraflax.evaluation import evaluators  # pylint: disable=g-import-not-at-top
  details = evaluators.sts(evaluators.Model(embed=embed)).details
  figures = {}
  for name, keys in _FIGURES.items():
    value = details
    for key in keys:
      value = value[key]
    figures[name] = 100 * value
  return {"figures": figures, "sts": details}


def _their_embed(path: str) -> Callable[[Sequence[str], str | None], Any]:
  """Their Avg model from the child's word table (see the docstring)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from paraflax.data import words  # pylint: disable=g-import-not-at-top
  saved = np.load(path)
  ids = {w: i for i, w in enumerate(saved["words"].tolist())}
  unk, table = ids[str(saved["unk"])], saved["vectors"]

  def embed(texts: Sequence[str], lang: str | None) -> np.ndarray:
    del lang  # English only, as their vocabulary
    return np.stack([
        table[[ids[w] for w in words.tokenize(t) if w in ids] or [unk]]
        .mean(0) for t in texts])
  return embed


def _our_quality(workdir: str, updates: int) -> dict[str, Any]:
  """configs/avg.py trained for `updates`, scored at its last update."""
  import paraflax  # pylint: disable=g-import-not-at-top
  from paraflax.inference import embedders  # pylint: disable=g-import-not-at-top
  overrides = [f"--config.{k}={updates}"
               for k in ("train_steps", "eval_every", "checkpoint.every")]
  start = time.perf_counter()
  paraflax.train(_AVG_CONFIG, workdir, overrides)
  train_s = time.perf_counter() - start
  embed, step = embedders.load(workdir, [])
  return {"overrides": overrides, "train_s": train_s, "checkpoint_step": step,
          **_sts(embed)}


def _quality_row(args: argparse.Namespace, pairs: str, data: dict[str, Any],
                 tmp: str) -> dict[str, Any]:
  """Avg trained by both codes for the same updates, scored alike."""
  vectors = os.path.join(tmp, "wieting_avg.npz")
  start = time.perf_counter()
  theirs = _theirs(args, pairs, "avg", data, vectors)
  theirs["train_s"] = time.perf_counter() - start  # whole child, data incl.
  theirs.update(_sts(_their_embed(vectors)))
  updates = args.megabatches * data["megabatch"]
  ours = _our_quality(os.path.join(tmp, "ours_avg"), updates)
  return {"model": "avg", "updates": updates, "ours": ours, "wieting": theirs}


def main(argv: list[str] | None = None) -> None:
  args = _parse(argv)
  if args.megabatches < 2:
    raise SystemExit("--megabatches must be at least 2 (one is warm-up)")
  rows = []
  with tempfile.TemporaryDirectory() as tmp:
    pairs = os.path.join(tmp, "pairs.txt")
    data = _write_pairs(pairs)
    if args.quality:
      rows.append(_quality_row(args, pairs, data, tmp))
    for ours_name, their_name in _MODELS.items():
      if ours_name not in args.models or args.quality:
        continue
      rows.append(_interleaved(
          ours_name, lambda their_name=their_name: _theirs(
              args, pairs, their_name, data),
          lambda ours_name=ours_name: _ours(args, ours_name), args.rounds))
  report = {
      **children.run_facts(__file__, argv),
      "benchmark": "encoders_vs_wieting",
      "data": data,
      "peer": _PEER,
      "results": rows,
  }
  peer_commit = subprocess.run(
      ["git", "-C", args.peer_src, "rev-parse", "HEAD"], capture_output=True,
      text=True, check=False).stdout.strip()
  children.write_result(args.output, report, peers={
      "torch": rows[0]["wieting"]["torch"], _PEER: peer_commit or "unknown"})
  if args.quality:
    _print_quality(rows[0])
  else:
    _print_speed(rows)
  print(f"wrote {args.output}")


def _print_quality(row: dict[str, Any]) -> None:
  print(f"Avg after {row['updates']} updates, Pearson x 100")
  print(f"{'':>14} {'ours':>7} {'Wieting':>8}")
  for name in _FIGURES:
    print(f"{name:>14} {row['ours']['figures'][name]:>7.2f} "
          f"{row['wieting']['figures'][name]:>8.2f}")
  print(f"{'train s':>14} {row['ours']['train_s']:>7.1f} "
        f"{row['wieting']['train_s']:>8.1f}")


def _print_speed(rows: list[dict[str, Any]]) -> None:
  print(f"{'model':>8} {'ours pairs/s':>12} {'Wieting pairs/s':>15} "
        f"{'ratio':>6}")
  for r in rows:
    print(f"{r['model']:>8} {r['ours']['pairs_per_s']:>12.1f} "
          f"{r['wieting']['pairs_per_s']:>15.1f} "
          f"{r['ours_over_wieting']:>6.2f}")


if __name__ == "__main__":
  main()
