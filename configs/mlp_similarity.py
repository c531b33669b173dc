r"""The MLP similarity of a bilingual workdir (Kim et al. 2019): a classifier
on [source; target] embeddings; positives the newstest_train_pool pairs,
negatives the 60 % lowest-cosine pairs of the ParaCrawl v3 sample (labels
unused) or random pairs. The keys are the fields of
`paraflax.recipes.mlp_similarity.MLPConfig`.

Command (--negatives, --worst-fraction, --epochs and --seed set these keys
too, and win over this file):
  paraflax train-mlp --workdir runs/bi_de_en
  (= --config configs/mlp_similarity.py, the default; override with
  --config.hidden=256)
Writes runs/bi_de_en/mlp_similarity.msgpack and mlp_similarity.json;
`paraflax eval-bilingual` trains it first if the workdir has none.
Time: part of eval-bilingual; not measured on its own.
Results (README "Bilingual embeddings", de/fr/cs models of 2,000 steps):
alignment recovery error 99.7-100 %, chance: the news positives against web
negatives teach it which pairs look like news. ParaCrawl v6 ROC-AUC .592
(de), .591 (fr), .716 (cs).
"""
import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.hidden = 512
  c.layers = 2
  c.negatives = "worst"  # worst | random
  c.worst_fraction = 0.6  # the paper found 60 % best, random pairs as good
  c.batch_size = 128
  c.learning_rate = 1e-3  # Adam
  c.epochs = 10
  # Held out share; the held-out loss picks the best epoch and `patience`
  # epochs without improvement stop training. 0: exactly `epochs` epochs.
  c.heldout_fraction = 0.1
  c.patience = 2
  c.seed = 0
  return c
