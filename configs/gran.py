r"""GRAN (Wieting & Gimpel 2017): a_t = x_t * sigmoid(W_x x_t + W_h h_t + b),
embedding = mean of a_t; margin loss with hardest in-megabatch negatives, on
the 19,432 human English pairs of `paraphrase_en_human` (generaltest2022
de-en / cs-en reference pairs + wikiauto), words started from PPDB vectors
(issue 14): configs/ppdb_words.py trains them, `paraflax export-words`
writes them to runs/ppdb_words/word_vectors.txt (a path from the checkout,
where the README's main command runs), and the vocabulary keeps all of
their 88,860 words, so that STS words the pairs lack are no longer <unk>.

Every other setting (steps, batch, megabatch, margin, sizes, data,
optimizer, eval) is configs/paraphrase.py's "gran", the family's file. That
experiment, random words and the pairs' vocabulary (the README's figures
before issue 14), is `--config configs/paraphrase.py:gran`, or this file
with `--config.model.word_vectors= --config.data.vocab_from_vectors=False`.

Command:
  paraflax train --config configs/ppdb_words.py --workdir runs/ppdb_words
  paraflax export-words --workdir runs/ppdb_words
  paraflax train --config configs/gran.py --workdir runs/gran
  paraflax eval-sts --workdir runs/gran
"""
from configs import paraphrase

PPDB_VECTORS = "runs/ppdb_words/word_vectors.txt"


def get_config():
  c = paraphrase.get_config("gran")
  c.model.word_vectors = PPDB_VECTORS
  c.data.vocab_from_vectors = True
  # Each sentence's words shuffled with this probability (the paper's
  # scrambling): STSb dev 69.67 against 68.85 unscrambled (README).
  c.loss.scramble = 0.3
  return c
