"""Kim et al. 2019's Table 5 shape on our data: the MLP similarity of one
bilingual workdir trained with each choice of negatives (the paper's
random and x%-worst bands, and the selections configs/mlp_similarity.py
offers besides; 3 epochs each), each scored by ParaCrawl v3 / v6 ROC-AUC and by Multi30k
2016 alignment recovery error. The sentences are embedded once.

  python experiments/paper_fidelity/mlp_table5.py WORKDIR OUT.json [N]

N: negatives per band (default 400, a fifth of the 2,000-line v3 sample,
so that the five bands do not overlap).
"""
import json
import os
import sys
import tempfile
import time

from paraflax.data import corpora
from paraflax.evaluation import alignment
from paraflax.evaluation import bilingual as bilingual_eval
from paraflax.evaluation import paracrawl
from paraflax.recipes import mlp_similarity as mlp
from paraflax.recipes import scoring

SET = "multi30k_test_2016_flickr"


def grid(n: int):
  yield "worst 60 % (default)", {"negatives": "worst", "worst_fraction": 0.6}
  yield "shuffled positives", {"negatives": "shuffled"}
  yield "random (paper)", {"negatives": "random", "negatives_count": n}
  for cut in (0.2, 0.4, 0.6, 0.8, 1.0):
    yield f"{round(cut * 100)}%-worst band (paper)", {
        "negatives": "band", "band_cut": cut, "negatives_count": n}


def main(workdir: str, out: str, n: int = 400) -> None:
  enc = scoring.open_workdir(workdir, "de", "en")
  embed = bilingual_eval.cached(enc.embed)
  pool = corpora.read(corpora.get("bitext_newstest_pool_de_en"), "train")
  noisy = paracrawl.load("v3", "de")
  positives = (embed(pool["source"], "de"), embed(pool["target"], "en"))
  noisy_xy = (embed(noisy.source, "de"), embed(noisy.target, "en"))
  rows = []
  for name, values in grid(n):
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
      config = mlp.default_config(epochs=3, **values)
      mlp.train(positives, config, os.path.join(tmp, "mlp"), noisy=noisy_xy)
      model, _ = mlp.load_for_inference(os.path.join(tmp, "mlp"))
    sims = {"mlp": {"model": model}}
    auc = {r["release"]: r["auc"] for r in paracrawl.evaluate_all(
        embed, sims, langs=("de",)) if r["scorer"] == "mlp"}
    err = alignment.evaluate(embed, "de", sims, sets=[SET])[0]
    row = {"selection": name, **values,
           "v3_auc": 100 * auc["v3"], "v6_auc": 100 * auc["v6"],
           "align_error": err["mean"], "seconds": round(time.time() - start)}
    rows.append(row)
    print(json.dumps(row), flush=True)
  with open(out, "w") as f:
    json.dump({"workdir": os.path.basename(workdir), "n": n,
               "positives": len(pool["source"]), "rows": rows}, f, indent=1)


if __name__ == "__main__":
  main(sys.argv[1], sys.argv[2], *map(int, sys.argv[3:]))
