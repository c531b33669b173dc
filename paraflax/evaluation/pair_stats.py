"""Length, cost and score statistics and random examples of a
back-translated paraphrase corpus (`paraflax backtranslate` JSONL, or its
`paraflax score-paraphrases` output), for a first look before filtering and
to set a filter's bounds from the measured distribution."""
from __future__ import annotations

import json
import random
from collections.abc import Sequence

import numpy as np

from paraflax import files
from paraflax.data import shards

# Written to --json; the printed table shows _SHOWN. The deciles and
# quartiles are what a filter grid's bounds are read from.
_PERCENTILES = (1, 5, 10, 25, 50, 75, 90, 95, 99)
_SHOWN = (5, 50, 95)
KEYS = ("id", "reference", "translation", "rank", "cost", "source")


def _describe(values: Sequence[float]) -> dict[str, float]:
  a = np.asarray(values, np.float64)
  return {"mean": float(a.mean()),
          **{f"p{q}": float(np.percentile(a, q)) for q in _PERCENTILES},
          "min": float(a.min()), "max": float(a.max())}


def _scores(best: Sequence[dict]) -> dict[str, dict[str, float]]:
  """The statistics of each numeric `scores` field (score-paraphrases) that
  every 1-best record holds, over its finite values; `non_finite` counts the
  others (an empty translation's inf perplexity). None in a backtranslate
  JSONL."""
  names = set.intersection(*(set(r.get("scores") or ()) for r in best))
  stats = {}
  for name in sorted(names):
    values = [r["scores"][name] for r in best]
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool)
               for x in values):
      continue  # not a score to describe (a label, a list)
    finite = [x for x in values if np.isfinite(x)]
    stats[name] = {**(_describe(finite) if finite else {}),
                   "non_finite": len(values) - len(finite)}
  return stats


def summarize(records: Sequence[dict]) -> dict:
  """Statistics of the 1-best pairs (rank 0); lengths in whitespace words."""
  best = [r for r in records if r["rank"] == 0]
  if not best:
    return {"records": len(records), "pairs": 0}
  ref = [len(r["reference"].split()) for r in best]
  hyp = [len(r["translation"].split()) for r in best]
  return {
      "records": len(records), "pairs": len(best),
      "reference_words": _describe(ref), "translation_words": _describe(hyp),
      "length_ratio": _describe([h / max(r, 1) for r, h in zip(ref, hyp)]),
      "cost": _describe([r["cost"] for r in best]),
      "identical": sum(r["reference"] == r["translation"] for r in best),
      "distinct_translations": len({r["translation"] for r in best}),
      "distinct_sources": len({r["source"] for r in best}),
      "scores": _scores(best)}


def sample(records: Sequence[dict], n: int, seed: int) -> list[dict]:
  """`n` random 1-best records in id order, the same for the same seed."""
  best = [r for r in records if r["rank"] == 0]
  picked = random.Random(seed).sample(best, min(n, len(best)))
  return sorted(picked, key=lambda r: r["id"])


def format_report(stats: dict, examples: Sequence[dict]) -> str:
  lines = [f"{stats['pairs']} pairs (rank 0) of {stats['records']} records"]
  if stats["pairs"]:
    shown = ("mean", *(f"p{q}" for q in _SHOWN), "min", "max")
    lines.append(f"{'':<18}" + "".join(f"{k:>8}" for k in shown))
    rows = {k: stats[k] for k in ("reference_words", "translation_words",
                                  "length_ratio", "cost")}
    for key, d in {**rows, **stats["scores"]}.items():
      lines.append(f"{key:<18}" + "".join(
          f"{d[k]:>8.2f}" if k in d else f"{'-':>8}" for k in shown)
          + (f"  ({d['non_finite']} not finite)" if d.get("non_finite")
             else ""))
    lines.append(f"identical to the reference: {stats['identical']}; "
                 f"distinct translations: {stats['distinct_translations']}; "
                 f"distinct sources: {stats['distinct_sources']}")
  for r in examples:
    lines += ["", f"id {r['id']}  cost {r['cost']:.3f}",
              f"  source:      {r['source']}",
              f"  reference:   {r['reference']}",
              f"  translation: {r['translation']}"]
  return "\n".join(lines)


def report_file(input: str, examples: int = 10, seed: int = 0,
                json_path: str | None = None, overwrite: bool = False
                ) -> dict:
  """`paraflax pair-stats`: prints the statistics and `examples` random
  pairs of a back-translation JSONL; also writes them to `json_path`."""
  if json_path:
    files.check_output(json_path)
  records = shards.read_jsonl(input, keys=KEYS)
  stats = summarize(records)
  print(format_report(stats, sample(records, examples, seed)))
  if json_path:
    files.write_once(json_path, json.dumps(stats, indent=2) + "\n",
                     overwrite=overwrite)
  return stats
