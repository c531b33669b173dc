r"""PARAGRAM-style word vectors (Wieting et al. 2015): an Avg encoder trained
with the margin loss and hardest in-megabatch negatives on the 210,372 PPDB
1.0 XXXL lexical pairs of `paraphrase_en_ppdb_lexical`, i.e. one-word
"sentences"; `paraflax export-words` writes its word table for
configs/gran.py's `model.word_vectors`. Every other setting is
configs/paraphrase.py's "avg".

Command:
  paraflax train --config configs/ppdb_words.py --workdir runs/ppdb_words
  paraflax export-words --workdir runs/ppdb_words
Time: part of the configs/gran.py run kept in
lab/results/runs/sts_encoders/ (all four commands of its header, this
stage included): {sts_encoders/gran-seed0.time=60 min 17 s (22 min 37 s of CPU), the PPDB words included}
on {sts_encoders/gran-seed0.hardware=AMD EPYC, 2 cores shared with other jobs}.
Result: STSb dev 59.1 as an Avg encoder (2,000 updates at Adam 1e-2).
Docs: docs/paraphrase-embeddings.md.
"""
from configs import paraphrase


def get_config():
  c = paraphrase.get_config("avg")
  c.data.task = "paraphrase_en_ppdb_lexical"
  # Avg's 2,000 updates of 100 pairs: about one pass over the pairs, each
  # word seen a few times, hence 10x GRAN's rate: STSb dev of this Avg 59.1
  # at 1e-2, 46.8 at 1e-3 (there with sentences cut to 8 words).
  c.optimizer.learning_rate = 1e-2
  return c
