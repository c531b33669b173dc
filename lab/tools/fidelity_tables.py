"""The tables of lab/fidelity.md measured with caption encoders trained
to align, each from the JSON lab/experiments/paper_fidelity/mlp_table5.py
wrote: lab/results/mlp_negatives.multi30k.<hardware>.json (MLP seed 0,
with the baselines), mlp_negatives.multi30k.seed1.<hardware>.json
(MLP seed 1) and mlp_negatives.multi30k.apart.<hardware>.json (the
positives and the noisy corpus from disjoint halves, --split-at)."""
from __future__ import annotations

import functools
import json
import math
import os

import markdown_table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "lab", "results")
HARDWARE = "intel-xeon-2core"
SEEDS = (f"mlp_negatives.multi30k.{HARDWARE}.json",
         f"mlp_negatives.multi30k.seed1.{HARDWARE}.json")
APART = (f"mlp_negatives.multi30k.apart.{HARDWARE}.json",)
KINDS = ("clean", "misaligned", "untranslated", "wrong_language", "short",
         "misordered")


def _runs(names: tuple[str, ...] = SEEDS) -> list[dict]:
  out = []
  for name in names:
    with open(os.path.join(RESULTS, name), encoding="utf-8") as f:
      out.append(json.load(f))
  return out


def _by_seed(runs: list[dict], selection: str, n: int, key: str,
             digits: int = 1) -> str:
  """`key` of the row in each seed's run, "seed 0 / seed 1"."""
  values = [r[key] for run in runs for r in run["rows"]
            if r["selection"] == selection and r.get("n") == n and key in r]
  return " / ".join(f"{v:.{digits}f}" for v in values)


def mlp_negatives_multi30k() -> list[str]:
  """Kim et al.'s Table 5 shape: the MLP per choice of negatives, with
  what each choice holds of the noisy corpus, beside cosine and CSLS."""
  return _negatives_table(_runs())


def mlp_negatives_multi30k_apart() -> list[str]:
  """The same with the positives and the noisy corpus apart (seed 0)."""
  return _negatives_table(_runs(APART))


def _negatives_table(runs: list[dict]) -> list[str]:
  first = runs[0]
  n = max(r["n"] for r in first["rows"])
  rows = []
  for r in first["rows"]:
    if r["n"] != n or "v3_auc" not in r:
      continue
    name, mlp = r["selection"], "negatives" in r
    count = r.get("negatives_count") or sum(r.get("kinds", {}).values())
    if r.get("negatives") == "shuffled":  # the positives, re-paired
      count = first["positives"]["lines"]
    held = " / ".join(f"{r['kinds'].get(k, 0):,}" for k in KINDS) \
        if "kinds" in r else ""
    rows.append([name if mlp else f"{name} (no MLP)",
                 f"{count:,}" if count else "", held,
                 *(_by_seed(runs if mlp else [first], name, n, key)
                   for key in ("v3_auc", "v6_auc", "align_error"))])
  kinds = " / ".join(k.replace("_", " ") for k in KINDS)
  return markdown_table.table(
      ["negatives", "lines", f"of them: {kinds}", "ParaCrawl v3 AUC",
       "v6 AUC", f"Multi30k 2016 alignment error % ({n:,} pairs)"], rows, 3)


def align_baselines_multi30k() -> list[str]:
  """Alignment recovery of the similarities and of Kim et al.'s baselines
  without embeddings, on the whole set and on its first pairs."""
  rows = [[r["selection"], f"{r['n']:,}", markdown_table.num(
      r["align_error"], 1)] for r in _runs()[0]["rows"]
          if "negatives" not in r]
  return markdown_table.table(["similarity", "pairs", "alignment error %"],
                              rows, 1)


# lab/experiments/paper_fidelity/bilingual_cut.py --own-batch: each preset
# with its own batch, the same number of updates.
KIM_EQUAL_STEPS = "bilingual_cut.kim2019-default.3000-own-batch.intel-xeon-2core.json"


def _error(rows: list[dict], similarity: str) -> str:
  """Multi30k 2016's alignment error (%, the mean of both directions)."""
  found = [r["mean"] for r in rows if r["set"] == "multi30k_test_2016_flickr"
           and r["similarity"] == similarity]
  return f"{found[0]:.1f}"


def kim_equal_steps() -> list[str]:
  """Kim et al.'s preset beside configs/bilingual.py:de, cut alike, at
  equal updates: the dev alignment accuracy at each evaluation and the
  Multi30k 2016 alignment error of the best checkpoint."""
  (run,) = _runs((KIM_EQUAL_STEPS,))
  return markdown_table.table(
      ["config", "batch", "updates", "time", "dev alignment accuracy %",
       "Multi30k 2016 error %, cosine", "CSLS"],
      [[f"`{p['spec']}`", str(p["batch_size"]), f"{p['train_steps']:,}",
        _minutes(p["seconds"]),
        " -> ".join(f"{a:.1f}" for a in p["dev_align_accuracy"]),
        _error(p["alignment"], "cosine"), _error(p["alignment"], "csls")]
       for p in run["presets"].values()], numeric_from=1)


def _kim_error(preset: str, similarity: str) -> str:
  (run,) = _runs((KIM_EQUAL_STEPS,))
  return _error(run["presets"][preset]["alignment"], similarity)


def _minutes(seconds: int) -> str:
  return f"{seconds // 60} min {seconds % 60} s"


def _kim_time(preset: str) -> str:
  (run,) = _runs((KIM_EQUAL_STEPS,))
  return _minutes(run["presets"][preset]["seconds"])


TABLES = (mlp_negatives_multi30k, mlp_negatives_multi30k_apart,
          align_baselines_multi30k, kim_equal_steps)
# The figures that prose quotes from the same files (render_tables' values).
VALUES = {f"kim_equal_steps.{preset}.{similarity}":
          functools.partial(_kim_error, preset, similarity)
          for preset in ("kim2019", "default")
          for similarity in ("cosine", "csls")}
VALUES.update({f"kim_equal_steps.{preset}.time":
               functools.partial(_kim_time, preset)
               for preset in ("kim2019", "default")})


def _mlp_seconds(names: tuple[str, ...]) -> str:
  """The shortest and longest MLP (training and scoring) of the runs."""
  seconds = [r["seconds"] for run in _runs(names) for r in run["rows"]
             if "negatives" in r]
  low, high = min(seconds), max(seconds)
  return (f"{low}-{high} s" if high < 60 else
          f"{_minutes(low)} to {_minutes(high)}")


def _seed_spread() -> str:
  """How far the two MLP seeds' alignment errors lie apart, per choice of
  negatives: the least and the most, in points."""
  first, second = (
      {(r["selection"], r["n"]): r["align_error"] for r in run["rows"]
       if "negatives" in r} for run in _runs())
  gaps = [abs(first[k] - second[k]) for k in first if k in second]
  return f"{min(gaps):.1f}-{max(gaps):.1f}"


def _auc_range() -> str:
  """The lowest and highest ParaCrawl ROC-AUC of every row of the three
  runs, cosine and CSLS included, in whole points around them."""
  aucs = [r[key] for run in _runs(SEEDS + APART) for r in run["rows"]
          for key in ("v3_auc", "v6_auc") if key in r]
  return f"{math.floor(min(aucs))}-{math.ceil(max(aucs))}"


VALUES.update({"mlp_negatives.seconds.seeds": lambda: _mlp_seconds(SEEDS),
               "mlp_negatives.seconds.apart": lambda: _mlp_seconds(APART),
               "mlp_negatives.seed_gap": _seed_spread,
               "mlp_negatives.auc_range": _auc_range})
