"""Corpus filtering against human labels: ParaCrawl pairs scored by each
similarity, ROC-AUC and precision at the top 25% of "valid" (label V) vs the
rest, next to the filter scores bundled in the same files.

Files (`paracrawl_human_eval/{release}.sorted.en-{xx}`): UTF-8 TSV, no
header, one labelled pair per line, sorted by the bicleaner score.
  v3:       url_en url_xx sent_en sent_xx hunalign zipporah bicleaner label
            comment                                          (9 columns)
  v6 (v6-2, v7):
            url_en url_xx sent_en sent_xx bicleaner label comment time_s
                                                              (8 columns)
Labels: V valid translation, F free translation, E translation error, MT
machine-translated, A incorrect alignment, L wrong language, T wrong
tokenization.

Source is the non-English side (sent_xx), target the English side, as for
every bitext in paraflax. Equal scores are handled without tie-breaking by
file order (the files are sorted by bicleaner, whose v6 scores have three
decimals, so order would leak a baseline into any tie): AUC counts a tie as
half, and precision at the top takes the expected share of a tied group
that straddles the cut.

An MLP similarity trained with negatives from the v3 text (as the issue
proposes) has seen the v3 sentences, though not their labels; its v6 numbers
are the ones free of that.
"""
from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from scipy import stats

from paraflax import errors
from paraflax import files
from paraflax.data import paths
from paraflax.data import readers
from paraflax.evaluation import fixed_width
from paraflax.mining import similarity

Embed = Callable[[Sequence[str], str], np.ndarray]  # (texts, lang) -> [N, d]
FOLDER = "paracrawl_human_eval"
LABELS = ("V", "F", "E", "MT", "A", "L", "T")
VALID = "V"
LANGS = ("de", "fr", "cs")
TOP = 0.25


@dataclasses.dataclass(frozen=True)
class Layout:
  """Column indices (0-based) of one release's files."""
  fields: int
  baselines: Mapping[str, int]  # bundled filter score name -> column
  label: int
  sent_en: int = 2
  sent_xx: int = 3


_V3 = Layout(fields=9, baselines={"hunalign": 4, "zipporah": 5,
                                  "bicleaner": 6}, label=7)
_V6 = Layout(fields=8, baselines={"bicleaner": 4}, label=5)
LAYOUTS: dict[str, Layout] = {"v3": _V3, "v6": _V6, "v6-2": _V6, "v7": _V6}
RELEASES = ("v3", "v6")  # those in the developer copy of the data


@dataclasses.dataclass(frozen=True)
class Sample:
  """One labelled file: row i is line `lines[i]`."""
  path: str
  release: str
  source: list[str]  # non-English sentences
  target: list[str]  # English sentences
  labels: list[str]
  baselines: dict[str, np.ndarray]  # bundled filter scores, float64 [N]
  lines: list[int]

  @property
  def valid(self) -> np.ndarray:
    return np.asarray([l == VALID for l in self.labels])


def _number(path: str, number: int, name: str, text: str) -> float:
  try:
    value = float(text)
  except ValueError:
    value = math.nan
  if not math.isfinite(value):
    raise errors.DataError(f"{path}:{number}: {name} score {text!r} is not a "
                           "finite number. Fix that column.")
  return value


def read(path: str | os.PathLike, release: str) -> Sample:
  """A `{release}.sorted.en-xx` file; a malformed row stops with file:line."""
  if release not in LAYOUTS:
    raise errors.ConfigError(f"unknown ParaCrawl release {release!r}; use "
                             f"one of {sorted(LAYOUTS)}.")
  layout, path = LAYOUTS[release], os.fspath(path)
  rows, numbers = readers.read_tsv(path, fields=layout.fields)
  baselines = {name: [] for name in layout.baselines}
  for row, number in zip(rows, numbers):
    if row[layout.label] not in LABELS:
      raise errors.DataError(
          f"{path}:{number}: label {row[layout.label]!r} in column "
          f"{layout.label + 1} is not one of {', '.join(LABELS)}. Is this a "
          f"{release} file ({layout.fields} columns)?")
    for name, column in layout.baselines.items():
      baselines[name].append(_number(path, number, name, row[column]))
  return Sample(path, release, [r[layout.sent_xx] for r in rows],
                [r[layout.sent_en] for r in rows],
                [r[layout.label] for r in rows],
                {k: np.asarray(v, np.float64) for k, v in baselines.items()},
                numbers)


def load(release: str, lang: str) -> Sample:
  """`paracrawl_human_eval/{release}.sorted.en-{lang}` of the data dir."""
  return read(paths.data_path(FOLDER, f"{release}.sorted.en-{lang}"),
              release)


# --- Metrics ----------------------------------------------------------------


def _check(scores, positive) -> tuple[np.ndarray, np.ndarray]:
  scores = np.asarray(scores, np.float64)
  positive = np.asarray(positive, bool)
  if scores.shape != positive.shape or scores.ndim != 1:
    raise errors.DataError(f"{scores.shape} scores for {positive.shape} "
                           "labels; give one score per labelled pair.")
  if not np.all(np.isfinite(scores)):
    raise errors.DataError("scores contain NaN or inf; fix the scorer.")
  return scores, positive


def roc_auc(scores, positive) -> float:
  """P(score of a positive > score of a negative), ties counting half.

  Mann-Whitney U from average ranks: (rank sum of positives - P(P+1)/2) /
  (P N). NaN when one class is empty.
  """
  scores, positive = _check(scores, positive)
  n_pos = int(positive.sum())
  n_neg = len(positive) - n_pos
  if not n_pos or not n_neg:
    return math.nan
  ranks = stats.rankdata(scores)  # average ranks for ties
  return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2)
               / (n_pos * n_neg))


def precision_at(scores, positive, top: float = TOP) -> float:
  """Share of positives among the ceil(top * N) highest scores.

  A tied group across the cut contributes the share it would on average
  under a random order of its members.
  """
  scores, positive = _check(scores, positive)
  if not 0 < top <= 1 or not len(scores):
    raise errors.ConfigError(f"precision at top {top} of {len(scores)} "
                             "pairs: use 0 < top <= 1 and a non-empty set.")
  n_top = math.ceil(top * len(scores))
  cut = np.sort(scores)[::-1][n_top - 1]
  above, tied = scores > cut, scores == cut
  share = (n_top - above.sum()) / tied.sum()
  return float((positive[above].sum() + share * positive[tied].sum())
               / n_top)


def evaluate(scores, labels: Sequence[str] | np.ndarray, top: float = TOP
             ) -> dict[str, float]:
  """ROC-AUC of V vs the rest and precision at the top `top` share.

  `labels` are label strings or already a boolean "valid" mask.
  """
  labels = np.asarray(labels)
  positive = labels if labels.dtype == bool else labels == VALID
  return {"auc": roc_auc(scores, positive),
          "precision": precision_at(scores, positive, top),
          "n": int(len(positive)), "valid": int(positive.sum())}


def baselines(sample: Sample, top: float = TOP) -> dict[str, dict]:
  """The bundled filter scores of a sample, evaluated like the similarities
  (bicleaner; also hunalign and zipporah on v3)."""
  return {name: evaluate(s, sample.labels, top)
          for name, s in sample.baselines.items()}


# --- Scoring and reporting --------------------------------------------------


def score_sample(embed: Embed, lang: str, sample: Sample,
                 similarities: Mapping[str, Mapping]) -> dict[str, np.ndarray]:
  """{similarity: [N] scores}; `similarities` maps a name of
  `similarity.SIMILARITIES` to its context (e.g. {"csls": {"k": 10}})."""
  x, y = embed(sample.source, lang), embed(sample.target, "en")
  return {name: similarity.score(name, x, y, **ctx)
          for name, ctx in similarities.items()}


def evaluate_all(embed: Embed, similarities: Mapping[str, Mapping], *,
                 releases: Sequence[str] = RELEASES,
                 langs: Sequence[str] = LANGS, top: float = TOP
                 ) -> list[dict]:
  """One row per release x language x scorer (similarities, then the
  bundled baselines)."""
  rows = []
  for release in releases:
    for lang in langs:
      sample = load(release, lang)
      scored = score_sample(embed, lang, sample, similarities)
      where = {"release": release, "lang": lang}
      rows += [{**where, "scorer": name, "kind": "similarity",
                **evaluate(s, sample.labels, top)}
               for name, s in scored.items()]
      rows += [{**where, "scorer": name, "kind": "baseline", **metrics}
               for name, metrics in baselines(sample, top).items()]
  return rows


def format_table(rows: Sequence[dict], top: float = TOP) -> str:
  """AUC and precision x 100; `V%` is the precision of keeping at random."""
  key = fixed_width.key
  return fixed_width.table(
      [("release", "<8", key("release")), ("lang", "<6", key("lang")),
       ("scorer", "<12", key("scorer")), ("kind", "<11", key("kind")),
       ("n", ">6", key("n")),
       ("V%", ">7.1f", lambda r: 100 * r["valid"] / r["n"]),
       ("AUC", ">8.2f", key("auc", 100)),
       (f"P@{100 * top:g}%", ">8.2f", key("precision", 100))], rows)


# --- Score distributions ----------------------------------------------------


def histograms(scores: Mapping[str, np.ndarray], valid: np.ndarray,
               bins: int = 40) -> dict[str, dict[str, np.ndarray]]:
  """Per scorer: shared bin `edges` and the counts of V (`valid`) and of the
  other pairs (`rest`)."""
  valid = np.asarray(valid, bool)
  out = {}
  for name, s in scores.items():
    s, valid = _check(s, valid)
    edges = np.histogram_bin_edges(s, bins)
    out[name] = {"edges": edges,
                 "valid": np.histogram(s[valid], edges)[0],
                 "rest": np.histogram(s[~valid], edges)[0]}
  return out


def plot_distributions(path: str | os.PathLike,
                       scores: Mapping[str, np.ndarray], valid: np.ndarray, *,
                       bins: int = 40, title: str = "") -> None:
  """A PNG with one histogram panel per scorer, V vs the rest (the paper's
  Figure 3 with {"cosine": ..., "mlp": expit(mlp logits)})."""
  try:
    import matplotlib  # pylint: disable=g-import-not-at-top
  except ModuleNotFoundError as e:
    raise ModuleNotFoundError(
        "plotting needs matplotlib, which is not installed; `pip install "
        "matplotlib`, or draw `histograms(...)` elsewhere.") from e
  matplotlib.use("Agg")
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top

  counts = histograms(scores, valid, bins)
  fig, axes = pyplot.subplots(1, len(counts), figsize=(4 * len(counts), 3),
                              squeeze=False)
  for ax, (name, h) in zip(axes[0], counts.items()):
    ax.stairs(h["rest"], h["edges"], label="not V", fill=True, alpha=0.5)
    ax.stairs(h["valid"], h["edges"], label="V (valid)", fill=True,
              alpha=0.5)
    ax.set_xlabel(f"{name} score")
    ax.set_ylabel("pairs")
    ax.legend()
  if title:
    fig.suptitle(title)
  fig.tight_layout()
  with files.atomic_output(path) as f:
    fig.savefig(f, format="png", dpi=120)
  pyplot.close(fig)
