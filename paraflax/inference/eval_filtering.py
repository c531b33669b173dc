"""Corpus filtering judged by the NMT it trains (Kim et al. 2019, WMT 2018
filtering; Artetxe & Schwenk 2019, ParaCrawl): every pair of a noisy
bitext scored by each similarity of a bilingual workdir (and by any score
column the file carries), the best-scored pairs kept up to N target words,
the NMT config trained on each selection with the same steps and seed, its
BLEU on newstest beside a random selection and the unfiltered corpus. With
the labels of `paraflax noise-bitext` (NOISY.labels), each selection's
count of each kind of noise.

The noisy file: source<TAB>target[<TAB>score ...] per line; a score column
is named `column<i>` (i from 2, 0-based), higher is better.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from paraflax import errors
from paraflax import files
from paraflax.data import readers
from paraflax.filtering import noise
from paraflax.mining import margin
from paraflax.mining import similarity as similarity_lib

SIMILARITIES = ("cosine", "csls", "margin", "mlp")
REPORT = "eval_filtering.json"
# (config spec, overrides, workdir) -> BLEU of the trained NMT.
TrainFn = Callable[[str, Sequence[str], str], float]


def select(scores: np.ndarray, target_words: np.ndarray, budget: int
           ) -> np.ndarray:
  """Indices of the best-scored pairs (ties in line order) whose target
  words add up to at most `budget`, in line order."""
  order = np.argsort(-np.asarray(scores, np.float64), kind="stable")
  total = np.cumsum(np.asarray(target_words)[order])
  return np.sort(order[:int(np.searchsorted(total, budget, side="right"))])


def _distinct(texts: Sequence[str] | None, rows: int
              ) -> tuple[np.ndarray, np.ndarray]:
  """The rows of the distinct texts (their first lines) and, per line, the
  index of its text among them; every row when `texts` is None."""
  if texts is None:
    return np.arange(rows), np.arange(rows)
  _, inverse = margin.deduplicate(texts)
  return np.unique(inverse, return_index=True)[1], inverse


def margin_scores(x: np.ndarray, y: np.ndarray, k: int = 4,
                  src: Sequence[str] | None = None,
                  tgt: Sequence[str] | None = None) -> np.ndarray:
  """The ratio margin of each aligned pair (x_i, y_i): cos(x_i, y_i)
  against the means of both sides' k nearest neighbours. With the texts
  `src` / `tgt`, the neighbours are found among each side's distinct
  sentences, as `paraflax mine` deduplicates: a repeated sentence is not
  its own copy's neighbour."""
  (x_rows, x_lines), (y_rows, y_lines) = (
      _distinct(texts, len(e)) for texts, e in ((src, x), (tgt, y)))
  c = margin.score_candidates(np.asarray(x)[x_rows], np.asarray(y)[y_rows],
                              k, margin="ratio")
  return margin.ratio(similarity_lib.score("cosine", x, y),
                      c.mean_x[x_lines] / 2 + c.mean_y[y_lines] / 2)


def read_noisy(path: str) -> tuple[list[str], list[str], dict[str, np.ndarray],
                                   list[str] | None]:
  """(sources, targets, {column<i>: scores}, labels or None)."""
  lines, _ = readers.read_lines(path)
  rows = [line.split("\t") for line in lines]
  width = {len(r) for r in rows}
  if len(width) != 1 or min(width) < 2:
    raise errors.DataError(f"{path}: give source<TAB>target[<TAB>score...] "
                           "with the same number of fields on every line.")
  columns = {}
  for c in range(2, width.pop()):
    try:
      columns[f"column{c}"] = np.asarray([float(r[c]) for r in rows])
    except ValueError as e:
      raise errors.DataError(f"{path}: column {c} is not a number ({e}).")
  labels = None
  if os.path.exists(path + ".labels"):
    labels = _read_labels(path + ".labels", len(rows))
  return [r[0] for r in rows], [r[1] for r in rows], columns, labels


def _read_labels(path: str, rows: int) -> list[str]:
  """One kind of `noise` per line of the noisy file, checked here: a short
  file or an unknown kind would otherwise fail after the NMTs trained."""
  with open(path, encoding="utf-8") as f:
    labels = f.read().splitlines()
  if len(labels) != rows:
    raise errors.DataError(
        f"{path}: {len(labels)} labels for {rows} lines of the noisy file; "
        "give one label per line (as `paraflax noise-bitext` writes them), "
        "or remove the .labels file to evaluate without them.")
  kinds = (noise.CLEAN,) + noise.KINDS
  for i, label in enumerate(labels):
    if label not in kinds:
      raise errors.DataError(
          f"{path}:{i + 1}: label {label!r} is not one of "
          f"{', '.join(kinds)}.")
  return labels


def check_words(words: Sequence[int]) -> None:
  """--words: target-word budgets, each a positive count."""
  if not words:
    raise errors.ConfigError("--words: give at least one budget of target "
                             "words, e.g. --words 100000.")
  bad = [n for n in words if n <= 0]
  if bad:
    raise errors.ConfigError(
        f"--words {' '.join(map(str, bad))}: each budget is a count of "
        "target words to keep; give numbers > 0.")


def _train_nmt(config: str, overrides: Sequence[str], workdir: str) -> float:
  """Trains the NMT of one selection: `config` with `overrides`, which
  `eval_filtering` checked, but for data.train (the selection's TSV)."""
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import train  # pylint: disable=g-import-not-at-top
  train.run(config_lib.load(config, overrides), workdir)
  with open(os.path.join(workdir, "metrics.jsonl"), encoding="utf-8") as f:
    bleu = [r["dev/bleu"] for r in map(json.loads, f) if "dev/bleu" in r]
  return bleu[-1]


def evaluate(src: Sequence[str], tgt: Sequence[str],
             scores: Mapping[str, np.ndarray], words: Sequence[int],
             output: str, *, config: str, overrides: Sequence[str] = (),
             labels: Sequence[str] | None = None, seed: int = 0,
             train_fn: TrainFn = _train_nmt) -> list[dict]:
  """One row per (scorer, N) and one for the unfiltered corpus: the
  selection written as OUTPUT/sel_<scorer>_<N>.tsv, the NMT trained on it
  into OUTPUT/nmt_<scorer>_<N>, its BLEU; `random` is added to `scores`."""
  check_words(words)
  target_words = np.asarray([len(t.split()) for t in tgt])
  scores = {**scores, "random": np.random.default_rng(seed).random(len(src))}
  runs = [("unfiltered", 0, np.arange(len(src)))]
  runs += [(name, n, select(s, target_words, n))
           for n in words for name, s in scores.items()]
  rows = []
  done = os.path.join(output, REPORT)
  if os.path.exists(done):
    with open(done, encoding="utf-8") as f:
      rows = json.load(f)["rows"]
  have = {(r["scorer"], r["words"]) for r in rows}
  for name, n, keep in runs:
    if (name, n) in have:
      continue
    path = os.path.join(output, f"sel_{name}_{n}.tsv")
    files.write_text_atomic(path, "".join(f"{src[i]}\t{tgt[i]}\n"
                                          for i in keep))
    bleu = train_fn(config, [*overrides, f"--config.data.train=tsv:{path}"],
                    os.path.join(output, f"nmt_{name}_{n}"))
    row = {"scorer": name, "words": n, "pairs": len(keep),
           "target_words": int(target_words[keep].sum()), "bleu": bleu}
    if labels is not None:
      kept = [labels[i] for i in keep]
      row["kept"] = {k: kept.count(k) for k in (noise.CLEAN,) + noise.KINDS}
    rows.append(row)
    print(json.dumps(row), flush=True)
    files.write_text_atomic(done, json.dumps(
        {"config": config, "overrides": list(overrides), "seed": seed,
         "rows": rows}, indent=2) + "\n")
  return rows


def eval_filtering(workdir: str, noisy: str, output: str,
                   words: Sequence[int], similarity: Sequence[str] = (),
                   nmt_config: str = "configs/nmt.py:de",
                   nmt_override: Sequence[str] = (), seed: int = 0,
                   k: int = 4, overwrite: bool = False) -> list[dict]:
  """`paraflax eval-filtering`: `evaluate` with the scores of each
  similarity of the bilingual `workdir` (default: cosine, csls, margin and
  mlp once trained) and of the file's score columns; rerunning with the
  same inputs and settings resumes (`OUTPUT.meta.json`), other ones are
  refused unless `overwrite`."""
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  from paraflax.inference import scoring  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import config_check  # pylint: disable=g-import-not-at-top
  check_words(words)
  # The NMTs' config, once, before any work (each selection sets its
  # data.train).
  config_check.check(config_lib.load(nmt_config, nmt_override), files=False)
  src, tgt, scores, labels = read_noisy(noisy)
  lang, _ = scoring.workdir_languages(workdir)
  labels_path = noisy + ".labels"
  # More --words or --similarity add rows; anything else would mix the
  # rows of two evaluations in one table.
  files.claim_output(output, {
      "noisy": files.fingerprint(noisy),
      "labels": (files.fingerprint(labels_path)
                 if os.path.exists(labels_path) else None),
      "workdir": os.path.abspath(workdir), "nmt_config": nmt_config,
      "nmt_override": list(nmt_override), "seed": seed, "k": k},
                     overwrite=overwrite)
  os.makedirs(output, exist_ok=True)
  enc = scoring.open_workdir(workdir, lang, "en")
  x, y = enc.embed(src, lang), enc.embed(tgt, "en")
  names = similarity or [s for s in SIMILARITIES if s != "mlp"
                         or os.path.isdir(scoring.mlp_workdir(workdir))]
  for name in dict.fromkeys(names):
    if name == "margin":
      scores[name] = margin_scores(x, y, k, src, tgt)
    else:
      scores[name] = similarity_lib.score(
          name, x, y, **scoring.context(name, workdir, k=10))
  rows = evaluate(src, tgt, scores, words, output, config=nmt_config,
                  overrides=nmt_override, labels=labels, seed=seed)
  print(format_table(rows))
  return rows


def format_table(rows: Sequence[dict]) -> str:
  kinds = noise.KINDS if rows and "kept" in rows[0] else ()
  head = f"{'scorer':<12}{'N words':>9}{'pairs':>8}{'BLEU':>7}" + "".join(
      f"{k[:10]:>11}" for k in kinds)
  lines = [head]
  for r in rows:
    lines.append(f"{r['scorer']:<12}{r['words']:>9}{r['pairs']:>8}"
                 f"{r['bleu']:>7.2f}" + "".join(
                     f"{r['kept'][k]:>11}" for k in kinds))
  return "\n".join(lines)
