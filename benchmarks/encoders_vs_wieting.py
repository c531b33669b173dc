r"""Avg and LSTM-avg training pairs/s: ours against Wieting's PyTorch code.

Both train on the same pairs (the 19,432 human English pairs of
`paraphrase_en_human`, tokenized and cut to `data.max_len` words as our
recipe does, written as the `sent1<TAB>sent2` file their
`preprocess/text2HDF5.py` reads), with the same batch (100), megabatch (40,
their annealing off), word dimension (300), margin (0.4), Adam 1e-3, for
the same number of megabatches; the first megabatch of each is warm-up
(our compile, their first allocations) and pairs/s comes from the median of
the rest. Each side runs in its own child process, one after another:

- theirs: `benchmarks/wieting_child.py` under the peer's python (torch),
  importing their modules from a checkout of
  jwieting/paraphrastic-representations-at-scale;
- ours: `benchmarks/train_throughput.py`'s child (`configs/avg.py`,
  `configs/lstmavg.py`, 1 CPU device, `length_groups` as configured).

Their LSTM model is a bidirectional LSTM (150 units each way, their
default, 300-d output) averaged over time; ours a forward LSTM of 300 units
(300-d output), which costs 4/3 of theirs in matmul FLOPs per word.

Command (writes benchmarks/results/encoders_vs_wieting.json):
  .venv/bin/python benchmarks/encoders_vs_wieting.py \
      --peer-python /work/peers/wieting/bin/python \
      --peer-src /work/peers/wieting-src --megabatches 3
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from typing import Any

import children  # benchmarks/children.py, beside this script

_HERE = os.path.dirname(os.path.abspath(__file__))
_DEFAULT_OUTPUT = os.path.join(_HERE, "results", "encoders_vs_wieting.json")
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
  parser.add_argument("--output", default=_DEFAULT_OUTPUT)
  return parser.parse_args(argv)


def _write_pairs(path: str) -> dict[str, Any]:
  """Our training pairs as their text input: tokens joined by spaces."""
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  from paraflax.data import words  # pylint: disable=g-import-not-at-top
  config = config_lib.load(os.path.join(os.path.dirname(_HERE), "configs",
                                        "avg.py"))
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
            data: dict[str, Any]) -> dict[str, Any]:
  proc = subprocess.run(
      [args.peer_python, os.path.join(_HERE, "wieting_child.py"),
       "--src", args.peer_src, "--pairs", pairs, "--model", model,
       "--batch", str(data["batch_size"]),
       "--megabatch", str(data["megabatch"]),
       "--megabatches", str(args.megabatches)],
      stdout=subprocess.PIPE, text=True, check=False)
  lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
  if proc.returncode or not lines:
    raise children.ChildFailed(f"Wieting {model} child failed (exit "
                               f"{proc.returncode}); its stderr is above.")
  return json.loads(lines[-1])


def _ours(args: argparse.Namespace, model: str) -> dict[str, Any]:
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  groups = config_lib.load(os.path.join(
      os.path.dirname(_HERE), "configs", f"{model}.py")).length_groups
  return children.run_child(
      [os.path.join(_HERE, "train_throughput.py"), "--child", "1",
       "--calls", str(args.megabatches - 1), "--model", model,
       "--groups", str(groups)], 1)


def main(argv: list[str] | None = None) -> None:
  args = _parse(argv)
  if args.megabatches < 2:
    raise SystemExit("--megabatches must be at least 2 (one is warm-up)")
  from paraflax import files  # pylint: disable=g-import-not-at-top
  load_before = os.getloadavg()
  rows = []
  with tempfile.TemporaryDirectory() as tmp:
    pairs = os.path.join(tmp, "pairs.txt")
    data = _write_pairs(pairs)
    for ours_name, their_name in _MODELS.items():
      if ours_name not in args.models:
        continue
      theirs = _theirs(args, pairs, their_name, data)
      ours = _ours(args, ours_name)
      rows.append({"model": ours_name, "ours": ours, "wieting": theirs,
                   "ours_over_wieting": ours["pairs_per_s"]
                   / theirs["pairs_per_s"]})
  report = {
      "benchmark": "encoders_vs_wieting",
      "command": shlex.join([os.path.relpath(sys.executable), *sys.argv]),
      "date": time.strftime("%Y-%m-%d"),
      "data": data,
      "peer": "jwieting/paraphrastic-representations-at-scale",
      "loadavg_start": load_before,
      "loadavg_end": os.getloadavg(),
      "cpu_count": os.cpu_count(),
      "results": rows,
  }
  files.write_text_atomic(args.output, json.dumps(report, indent=2) + "\n")
  print(f"{'model':>8} {'ours pairs/s':>12} {'Wieting pairs/s':>15} "
        f"{'ratio':>6}")
  for r in rows:
    print(f"{r['model']:>8} {r['ours']['pairs_per_s']:>12.1f} "
          f"{r['wieting']['pairs_per_s']:>15.1f} "
          f"{r['ours_over_wieting']:>6.2f}")
  print(f"wrote {args.output}")


if __name__ == "__main__":
  main()
