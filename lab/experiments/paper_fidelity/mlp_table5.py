"""Kim et al. 2019's Table 5 shape on our data: the MLP similarity of one
bilingual workdir trained with each choice of negatives (the paper's
random and x%-worst bands, and the selections configs/mlp_similarity.py
offers besides; 3 epochs each), each scored by ParaCrawl v3 / v6 ROC-AUC
and by alignment recovery error on a Multi30k test set; beside them the
similarities without an MLP (cosine, CSLS) and the paper's baselines
without embeddings (Levenshtein; the NMT posterior with --nmt-workdir).
The sentences are embedded once. OUT.json is written by
children.write_result, with the run's command, commit, hardware, load and
seconds.

  python lab/experiments/paper_fidelity/mlp_table5.py WORKDIR OUT.json \
      [--n N] [--positives SPEC] [--noisy SPEC [--noisy-labels FILE]] \
      [--nmt-workdir NMT [--baseline-pairs M]] [--seed S] [--split-at K]

--n: negatives per band (default 400, a fifth of the 2,000-line ParaCrawl
v3 sample, the default noisy corpus, so that the five bands do not
overlap). --positives / --noisy: data specs (default: the newstest pool
and the v3 sample); --noisy-labels, the labels file `paraflax
noise-bitext` wrote beside its output, counts the noise kinds in each
selection of negatives. --baseline-pairs: the NMT posterior's rows, and
cosine, CSLS and Levenshtein again beside it, on the set's first M pairs
(default 300). --seed: the MLPs' (negatives, split, parameters).
--split-at K: the positives are the first K pairs of --positives and the
noisy corpus its lines from K on (with their labels), for a noisy corpus
made from the positives' own corpus: no clean line is then both a
positive and a candidate negative.
"""
import argparse
import collections
import json
import os
import pathlib
import re
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
from benchmarks import children  # pylint: disable=g-import-not-at-top,wrong-import-position
from paraflax.data import specs  # pylint: disable=wrong-import-position
from paraflax.evaluation import alignment  # pylint: disable=wrong-import-position
from paraflax.evaluation import bilingual as bilingual_eval  # pylint: disable=wrong-import-position
from paraflax.evaluation import paracrawl  # pylint: disable=wrong-import-position
from paraflax.mining import similarity  # pylint: disable=wrong-import-position
from paraflax.recipes import mlp_similarity as mlp  # pylint: disable=wrong-import-position
from paraflax.inference import scoring  # pylint: disable=wrong-import-position

SET = "multi30k_test_2016_flickr"


def grid(n: int):
  yield "worst 60 % (default)", {"negatives": "worst", "worst_fraction": 0.6}
  yield "shuffled positives", {"negatives": "shuffled"}
  yield "random (paper)", {"negatives": "random", "negatives_count": n}
  for cut in (0.2, 0.4, 0.6, 0.8, 1.0):
    yield f"{round(cut * 100)}%-worst band (paper)", {
        "negatives": "band", "band_cut": cut, "negatives_count": n}


def chosen_lines(values: dict, noisy_xy, n_positives: int) -> np.ndarray:
  """Indices of the noisy lines a scored selection takes (as the recipe
  chooses them); none for random and shuffled."""
  if values["negatives"] == "worst":
    return mlp.worst_pairs(noisy_xy, values["worst_fraction"])
  if values["negatives"] == "band":
    return mlp.band(similarity.score("cosine", *noisy_xy), values["band_cut"],
                    values["negatives_count"] or n_positives)
  return np.zeros(0, int)


def reference_rows(embed, nmt_workdir: str | None, pairs: int
                   ) -> list[dict]:
  """The similarities without an MLP and the baselines without embeddings,
  on the whole set; with an NMT workdir, all of them again on its first
  `pairs` pairs (the NMT posterior costs pairs^2 forced decodings)."""
  sims = {"cosine": {}, "csls": {"k": 10}}
  auc = {(r["scorer"], r["release"]): 100 * r["auc"]
         for r in paracrawl.evaluate_all(embed, sims, langs=("de",))}
  src, tgt = alignment.load(SET, "de")
  sizes = list(dict.fromkeys([len(src)] + ([min(pairs, len(src))]
                                           if nmt_workdir else [])))
  rows = []
  for n in sizes:
    x, y = embed(src[:n], "de"), embed(tgt[:n], "en")
    rows += [{"selection": name, "n": n, "v3_auc": auc[name, "v3"],
              "v6_auc": auc[name, "v6"], "align_error":
                  alignment.recovery_errors(x, y, name, **ctx)["mean"]}
             for name, ctx in sims.items()]
    baselines = ["levenshtein"] + (["nmt_posterior"] if n == sizes[-1]
                                   and nmt_workdir else [])
    for name in baselines:
      start = time.time()
      r, = scoring.baseline_rows(src[:n], tgt[:n], "de", [name], name=SET,
                                 nmt_workdir=nmt_workdir)
      rows.append({"selection": name, "n": n, "align_error": r["mean"],
                   "seconds": round(time.time() - start)})
  return rows


def mlp_row(name: str, values: dict, embed, positives, noisy_xy,
            labels, seed: int) -> dict:
  start = time.time()
  with tempfile.TemporaryDirectory() as tmp:
    config = mlp.default_config(epochs=3, seed=seed, **values)
    mlp.train(positives, config, os.path.join(tmp, "mlp"), noisy=noisy_xy)
    model, _ = mlp.load_for_inference(os.path.join(tmp, "mlp"))
  sims = {"mlp": {"model": model}}
  auc = {r["release"]: r["auc"] for r in paracrawl.evaluate_all(
      embed, sims, langs=("de",)) if r["scorer"] == "mlp"}
  err = alignment.evaluate(embed, "de", sims, sets=[SET])[0]
  row = {"selection": name, "n": err["n"], **values,
         "v3_auc": 100 * auc["v3"], "v6_auc": 100 * auc["v6"],
         "align_error": err["mean"], "seconds": round(time.time() - start)}
  picked = chosen_lines(values, noisy_xy, len(positives[0]))
  if labels and len(picked):
    row["kinds"] = dict(collections.Counter(labels[i] for i in picked))
  return row


def shown(path: str) -> str:
  """A spec or folder without its directories (tsv:/a/b.tsv -> tsv:b.tsv),
  as the result file names it."""
  return re.sub(r"[^:,]*/", "", path.rstrip("/"))


def main(args: argparse.Namespace) -> None:
  enc = scoring.open_workdir(args.workdir, "de", "en")
  embed = bilingual_eval.cached(enc.embed)
  pool = specs.pairs(args.positives)
  if args.noisy:
    noisy = specs.pairs(args.noisy)
  else:
    sample = paracrawl.load("v3", "de")
    noisy = list(zip(sample.source, sample.target))
  labels = None
  if args.noisy_labels:
    with open(args.noisy_labels, encoding="utf-8") as f:
      labels = f.read().split()
  if args.split_at:
    if not 0 < args.split_at < min(len(pool), len(noisy)):
      raise SystemExit(f"--split-at {args.split_at}: between 0 and "
                       f"{min(len(pool), len(noisy))} (the positives' and "
                       "the noisy corpus' lines).")
    pool, noisy = pool[:args.split_at], noisy[args.split_at:]
    labels = labels and labels[args.split_at:]
  positives = (embed([x for x, _ in pool], "de"),
               embed([e for _, e in pool], "en"))
  noisy_xy = (embed([x for x, _ in noisy], "de"),
              embed([e for _, e in noisy], "en"))
  rows = reference_rows(embed, args.nmt_workdir, args.baseline_pairs)
  for row in rows:
    print(json.dumps(row), flush=True)
  for name, values in grid(args.n):
    rows.append(mlp_row(name, values, embed, positives, noisy_xy, labels,
                        args.seed))
    print(json.dumps(rows[-1]), flush=True)
  children.write_result(args.out, {
      **children.run_facts(__file__, None), "workdir": shown(args.workdir),
      "checkpoint_step": enc.step, "seed": args.seed,
      "set": SET, "n": args.n, "split_at": args.split_at,
      "positives": {"spec": shown(args.positives), "lines": len(pool)},
      "noisy": {"spec": shown(args.noisy) or "paracrawl v3 sample",
                "lines": len(noisy)},
      "nmt_workdir": args.nmt_workdir and shown(args.nmt_workdir),
      "rows": rows})


def parse(argv=None) -> argparse.Namespace:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("workdir")
  p.add_argument("out")
  p.add_argument("--n", type=int, default=400)
  p.add_argument("--positives", default="bitext_newstest_pool_de_en")
  p.add_argument("--noisy", default="")
  p.add_argument("--noisy-labels", default="")
  p.add_argument("--nmt-workdir", default=None)
  p.add_argument("--baseline-pairs", type=int, default=300)
  p.add_argument("--seed", type=int, default=0)
  p.add_argument("--split-at", type=int, default=0)
  return p.parse_args(argv)


if __name__ == "__main__":
  main(parse())
