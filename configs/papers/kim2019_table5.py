r"""Kim et al. 2019's Table 5, one MLP similarity per row: the argument
is x, the negatives the last lines of the top x % of the noisy corpus by
cosine (the paper's "x%-worst": 20, 40, 60, 80 or 100; 60 its best row),
or `random` (random lines of the noisy corpus); as many lines as the
positives. The paper's main runs take 100: configs/papers/kim2019_mlp.py.
Every other key is configs/mlp_similarity.py's.

Command:
  paraflax train-mlp --workdir runs/k19_de --config configs/papers/kim2019_table5.py:60
Docs: lab/fidelity.md (the table of these negatives on Multi30k).
"""
import ml_collections

from configs import base

ROWS = ("20", "40", "60", "80", "100", "random")


def get_config(row: str) -> ml_collections.ConfigDict:
  if row not in ROWS:
    raise ValueError(f"row {row!r}: use one of {', '.join(ROWS)} "
                     "(kim2019_table5.py:60).")
  c = base.load("mlp_similarity.py")
  if row == "random":
    c.negatives = "random"
  else:
    c.negatives = "band"
    c.band_cut = int(row) / 100
  c.negatives_count = 0  # as many as the positives
  c.lock()
  return c
