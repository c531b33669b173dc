"""Trains configs/bilingual.py:de and configs/papers/kim2019.py:de cut to
2 CPU cores (Multi30k de-en only, 64-unit layers, 2,000-piece vocabulary,
--steps updates, 200 by default, of batches of 32, or of each preset's own
batch with --own-batch: 32 and the paper's 120) and writes their dev
alignment accuracy and Multi30k 2016 alignment errors to a JSON file,
OUT_DIR/bilingual_cut_<presets>[_<steps>][_own-batch].json (by
children.write_result: the run's command, commit, hardware, load and
seconds, the figures under "presets").

  python lab/experiments/paper_fidelity/bilingual_cut.py OUT_DIR [PRESET ...]
      [--steps N] [--own-batch] [--json FILE]

--json FILE writes the result there instead (lab/results/... enters it in
the manifest).
"""
import argparse
import json
import os
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[3]  # the checkout
sys.path.insert(0, str(ROOT / "lab"))
# pylint: disable=g-import-not-at-top,wrong-import-position
from benchmarks import children  # lab/benchmarks/children.py
from paraflax import config as config_lib
from paraflax.evaluation import alignment
from paraflax.inference import scoring
from paraflax.recipes import train

CUT = {"vocab.size": 2000, "model.word_dim": 64, "model.hidden": 64,
       "eval.sentences": 200, "evals.dev.sentences": 200, "log_every": 50,
       "mesh.num_devices": 1}
PRESETS = {"default": "configs/bilingual.py:de",
           "kim2019": "configs/papers/kim2019.py:de"}


def cut(spec: str, steps: int, own_batch: bool):
  """The preset cut: CUT, `steps` updates with a dev evaluation and a
  checkpoint at each half, batches of 32 unless `own_batch`."""
  # The preset's file from the checkout, whatever the working directory.
  config = config_lib.load_file(str(ROOT / spec))
  config.unlock()
  every = max(1, steps // 2)
  keys = {**CUT, "train_steps": steps, "eval_every": every,
          "checkpoint.every": every}
  if not own_batch:
    keys["batch_size"] = 32
  for key, value in keys.items():
    *path, last = key.split(".")
    block = config
    for p in path:
      block = block[p]
    block[last] = value
  config.data.train = ("bitext_multi30k_de_en",)
  config.data.max_len = 32
  return config


def main(out: str, names=tuple(PRESETS), steps: int = 200,
         own_batch: bool = False, json_path: str | None = None) -> None:
  rows = {}
  tag = "".join([f"_{steps}" if steps != 200 else "",
                 "_own-batch" if own_batch else ""])
  for name in names:
    spec = PRESETS[name]
    workdir = os.path.join(out, f"bi_{name}{tag}")
    start = time.time()
    config = cut(spec, steps, own_batch)
    train.train(config, workdir)
    seconds = time.time() - start
    with open(os.path.join(workdir, "metrics.jsonl")) as f:
      dev = [r["dev/align_accuracy"] for r in map(json.loads, f)
             if "dev/align_accuracy" in r]
    enc = scoring.open_workdir(workdir, "de", "en")
    sims = {"cosine": {}, "csls": {"k": 10}}
    errs = alignment.evaluate(enc.embed, "de", sims,
                              sets=["multi30k_test_2016_flickr",
                                    "newstest2012"])
    rows[name] = {"spec": spec, "seconds": round(seconds),
                  "train_steps": steps, "batch_size": config.batch_size,
                  "dev_align_accuracy": dev,
                  "alignment": errs}
    print(name, json.dumps(rows[name]), flush=True)
  children.write_result(
      json_path or os.path.join(out, f"bilingual_cut_{'_'.join(names)}{tag}.json"),
      {**children.run_facts(__file__, None), "presets": rows})


if __name__ == "__main__":
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("out_dir")
  parser.add_argument("presets", nargs="*", metavar="PRESET",
                      help=f"of {', '.join(PRESETS)} (default: both)")
  parser.add_argument("--steps", type=int, default=200,
                      help="updates each (default 200)")
  parser.add_argument("--own-batch", action="store_true",
                      help="each preset's own batch (32; the paper's 120) "
                           "instead of 32 for both")
  parser.add_argument("--json", dest="json_path", metavar="FILE",
                      help="the result file (default: in OUT_DIR)")
  args = parser.parse_args()
  if set(args.presets) - set(PRESETS):
    parser.error(f"PRESET: one of {', '.join(PRESETS)}")
  main(args.out_dir, tuple(args.presets) or tuple(PRESETS), args.steps,
       args.own_batch, args.json_path)
