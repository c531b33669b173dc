r"""PARAGRAM-style word vectors (Wieting et al. 2015): an Avg encoder trained
with the margin loss and hardest in-megabatch negatives on the 210,372 PPDB
1.0 XXXL lexical pairs of `paraphrase_en_ppdb_lexical`, i.e. one-word
"sentences"; `paraflax export-words` writes its word table for
configs/gran.py's `model.word_vectors`. Every other setting is
configs/paraphrase.py's "avg".

Command:
  paraflax train --config configs/ppdb_words.py --workdir runs/ppdb_words
  paraflax export-words --workdir runs/ppdb_words
  paraflax eval-sts --workdir runs/ppdb_words   # optional: its own STS
Time and result of the run kept as lab/results/runs/sts_encoders/ppdb-words
(Pearson x 100 of its last checkpoint, as an Avg encoder), on
{sts_encoders/ppdb-words.hardware=AMD EPYC, 2 cores}:
{sts_encoders/ppdb-words.time=2 min 20 s (3 min 45 s of CPU): 2 min 14 s to train and export the words, 7 s eval-sts};
STSb dev {sts_encoders/ppdb-words.stsb_dev=59.58}, STSb test {sts_encoders/ppdb-words.stsb_test=48.59}.
Docs: docs/paraphrase-embeddings.md.
"""
from configs import paraphrase


def get_config():
  c = paraphrase.get_config("avg")
  c.data.task = "paraphrase_en_ppdb_lexical"
  # Avg's 2,000 updates of 100 pairs: about one pass over the pairs, each
  # word seen a few times. As an Avg of its own it scores STSb dev
  # {sts_encoders/ppdb-words.stsb_dev=59.58} at this rate, 1e-2, and {sts_encoders/ppdb-words-lr1e-3.stsb_dev=61.23} at GRAN's 1e-3
  # (lab/results/runs/sts_encoders/ppdb-words*). configs/gran.py from them
  # ties on its selection set: best STSb dev, two-seed mean,
  # {gran_ablations/words.dev_mean.1e-2=72.47} from these words and {gran_ablations/words.dev_mean.1e-3=72.84} from the 1e-3
  # ones (docs/paraphrase-embeddings.md).
  c.optimizer.learning_rate = 1e-2
  return c
