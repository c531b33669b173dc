"""Cosine-similarity STS evaluation: Pearson and Spearman per dataset.

Protocol (the usual reproducibility trap): plain cosine, no regressor, also on
SICK; rows without gold are left out; per-year plain and size-weighted means.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

from paraflax import vectors
from paraflax.data import sts as sts_data

Embed = Callable[[Sequence[str]], np.ndarray]
DEFAULT_SETS = tuple(sts_data.all_names())
NOTES = (
    "cosine similarity, no regressor (also for SICK); rows without gold "
    "score are excluded (STS15 answers-forums/answers-students/belief/"
    "headlines/images are partly scored)",
    "not in the data, so not in any mean: " + ", ".join(sts_data.MISSING),
    "SICK test and SemEval STS 2016 are held out; SICK rows are train+trial",
    "STSb.test is complete (285 of its lines are held-out STS 2016 pairs); "
    "model selection uses STSb.dev-tuning, STSb.dev without the 22 such lines",
)


def correlations(predicted: np.ndarray, gold: np.ndarray) -> dict[str, float]:
  return {"pearson": float(stats.pearsonr(predicted, gold)[0]),
          "spearman": float(stats.spearmanr(predicted, gold)[0]),
          "n": int(len(gold))}


def score(embed: Embed, sets: Sequence[sts_data.StsSet]
          ) -> dict[str, dict[str, float]]:
  """Embeds every distinct sentence once, then correlates per set."""
  sentences = sorted({s for x in sets for s in x.sentence1 + x.sentence2})
  table = embed(sentences)
  row = {s: i for i, s in enumerate(sentences)}
  out = {}
  for x in sets:
    keep = x.scored()
    e1 = table[[row[s] for s in x.sentence1]][keep]
    e2 = table[[row[s] for s in x.sentence2]][keep]
    out[x.name] = correlations(np.asarray(vectors.cosine(e1, e2)),
                               x.scores[keep])
  return out


def _means(rows: dict[str, dict[str, float]]) -> dict[str, float]:
  n = np.asarray([r["n"] for r in rows.values()], np.float64)
  out = {"datasets": len(rows), "n": int(n.sum())}
  for key in ("pearson", "spearman"):
    v = np.asarray([r[key] for r in rows.values()])
    out[f"mean_{key}"] = float(v.mean())
    out[f"weighted_{key}"] = float((v * n).sum() / n.sum())
  return out


def report(per_set: dict[str, dict[str, float]]) -> dict:
  """Per-set numbers, per-group means and the SemEval 2012-2015 means."""
  groups: dict[str, dict[str, dict[str, float]]] = {}
  for name, row in per_set.items():
    groups.setdefault(name.split(".")[0], {})[name] = row
  semeval = {k: v for k, v in per_set.items()
             if k.split(".")[0] in sts_data.SEMEVAL}
  out = {"datasets": per_set,
         # Means only within a SemEval year: STSb splits and SICK
         # train/trial are different samples of one set, not datasets.
         "groups": {g: _means(rows) if g in sts_data.SEMEVAL else None
                    for g, rows in groups.items()},
         "missing": list(sts_data.MISSING), "notes": list(NOTES)}
  if semeval:
    out["semeval_2012_2015"] = _means(semeval)
  return out


def evaluate(embed: Embed, names: Sequence[str] = DEFAULT_SETS) -> dict:
  return report(score(embed, [sts_data.load(n) for n in names]))


def format_table(result: dict) -> str:
  """A fixed-width table of Pearson / Spearman x 100."""
  lines = [f"{'dataset':<24}{'n':>6}{'pearson':>9}{'spearman':>10}"]
  groups = result["groups"]
  for group, summary in groups.items():
    for name, row in result["datasets"].items():
      if name.split(".")[0] == group:
        lines.append(f"{name:<24}{row['n']:>6}{100 * row['pearson']:>9.2f}"
                     f"{100 * row['spearman']:>10.2f}")
    if summary:
      lines.append(_summary_line(f"{group} mean", summary, "mean"))
      lines.append(_summary_line(f"{group} weighted", summary, "weighted"))
  if "semeval_2012_2015" in result:
    lines.append("-" * 49)
    lines.append(_summary_line("STS12-15 mean", result["semeval_2012_2015"],
                               "mean"))
    lines.append(_summary_line("STS12-15 weighted",
                               result["semeval_2012_2015"], "weighted"))
  lines += [f"note: {n}" for n in result["notes"]]
  return "\n".join(lines)


def _summary_line(label: str, summary: dict, kind: str) -> str:
  return (f"  {label:<22}{summary['n']:>6}"
          f"{100 * summary[f'{kind}_pearson']:>9.2f}"
          f"{100 * summary[f'{kind}_spearman']:>10.2f}")
