"""Length and cost statistics and random examples of a back-translated
paraphrase corpus (`paraflax backtranslate` JSONL), for a first look before
filtering."""
from __future__ import annotations

import json
import random
from collections.abc import Sequence

import numpy as np

from paraflax import files
from paraflax.data import shards

_PERCENTILES = (5, 50, 95)
KEYS = ("id", "reference", "translation", "rank", "cost", "source")


def _describe(values: Sequence[float]) -> dict[str, float]:
  a = np.asarray(values, np.float64)
  return {"mean": float(a.mean()),
          **{f"p{q}": float(np.percentile(a, q)) for q in _PERCENTILES},
          "min": float(a.min()), "max": float(a.max())}


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
      "distinct_sources": len({r["source"] for r in best})}


def sample(records: Sequence[dict], n: int, seed: int) -> list[dict]:
  """`n` random 1-best records in id order, the same for the same seed."""
  best = [r for r in records if r["rank"] == 0]
  picked = random.Random(seed).sample(best, min(n, len(best)))
  return sorted(picked, key=lambda r: r["id"])


def format_report(stats: dict, examples: Sequence[dict]) -> str:
  lines = [f"{stats['pairs']} pairs (rank 0) of {stats['records']} records"]
  if stats["pairs"]:
    lines.append(f"{'':<18}{'mean':>8}" + "".join(
        f"{f'p{q}':>8}" for q in _PERCENTILES) + f"{'min':>8}{'max':>8}")
    for key in ("reference_words", "translation_words", "length_ratio",
                "cost"):
      d = stats[key]
      lines.append(f"{key:<18}" + "".join(
          f"{d[k]:>8.2f}" for k in ("mean", "p5", "p50", "p95", "min",
                                    "max")))
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
