r"""Artetxe & Schwenk 2019 (margin-based mining): k = 4 neighbours a side,
the ratio margin cos(x, y) / (sum_{z in NN_k(x)} cos(x, z) / 2k +
sum_{z in NN_k(y)} cos(y, z) / 2k), max-score retrieval (candidates both
ways, kept greedily by score), exact k-NN. The threshold is the paper's:
the F1-optimal one on dev pairs (`paraflax mining-eval` finds it on the dev
set of `paraflax mining-set` and applies it to test); here None keeps
every pair for a threshold chosen afterwards (--threshold X).

Command:
  paraflax mine --config configs/papers/artetxe2019.py --src-emb X.f32 \
      --tgt-emb Y.f32 --dim 512 --src-text X.txt --tgt-text Y.txt --output OUT.tsv
  paraflax mining-eval --dev D --test T --dev-src-emb D.src.emb \
      --dev-tgt-emb D.tgt.emb --test-src-emb T.src.emb \
      --test-tgt-emb T.tgt.emb --dim 512
  (D and T: the dev and test folders of `paraflax mining-set`, their
  sides embedded by `paraflax embed`; docs/mining.md)
Time and result: configs/mine.py's (the default already is the paper's
setting): test F1 {h100.bi_de.mining_f1=22.1} with the de-en model
trained {h100.train_time=4 min} on one NVIDIA H100.
Still differs from the paper, because of data or compute: the encoder (a
BiLSTM trained on a few hundred thousand de-en pairs, not LASER's 93
languages) and the benchmark (1,000 gold newstest pairs among 4,000 others
a side, not BUCC 2018, which is not bundled).
Docs: lab/fidelity.md.
"""
import ml_collections

from configs import base


def get_config() -> ml_collections.ConfigDict:
  c = base.load("mine.py")
  c.k = 4
  c.margin = "ratio"
  c.retrieval = "max"
  c.backend = "jax"  # exact
  c.lock()
  return c
