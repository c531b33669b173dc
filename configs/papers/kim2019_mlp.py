r"""Kim et al. 2019's MLP similarity as the paper's main runs train it:
negatives "a comparable size of negative examples from the worst-scored
sentence pairs" of the noisy corpus by cosine: the last lines of the
whole corpus sorted by cosine (negatives="band", band_cut=1.0), as many
as the positives (negatives_count=0). Every other key is
configs/mlp_similarity.py's (paraflax's choice: 2 hidden ReLU layers of
512, Adam at 1e-3, 10 epochs). Table 5's bands and random lines:
configs/papers/kim2019_table5.py.

Command:
  paraflax train-mlp --workdir runs/k19_de --config configs/papers/kim2019_mlp.py
Still differs from the paper, because of data or compute: the positives
and the noisy corpus are the bundled newstest pool and ParaCrawl v3
sample (--positives / --noisy name others), not WMT 2018's.
Docs: lab/fidelity.md.
"""
import ml_collections

from configs import base


def get_config() -> ml_collections.ConfigDict:
  c = base.load("mlp_similarity.py")
  c.negatives = "band"
  c.band_cut = 1.0  # the worst-scored lines of the whole corpus
  c.negatives_count = 0  # as many as the positives
  c.lock()
  return c
