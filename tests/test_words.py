"""Word vocabulary, vector files and the L2 regularisers."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from paraflax import errors
from paraflax.data import words
from paraflax.models import encoders
from paraflax.recipes import paraphrase


def test_vocab_round_trip_and_order(tmp_path):
  vocab = words.WordVocab.build(["the cat", "the dog", "a dog"])
  assert vocab.words[:4] == ("<pad>", "<unk>", "dog", "the")
  vocab.save(tmp_path / "v.txt")
  again = words.WordVocab.load(tmp_path / "v.txt")
  assert again.words == vocab.words and again.counts == vocab.counts
  assert vocab.encode("The zebra") == [vocab.id_of("the"), words.UNK]


def test_word_vectors_file(tmp_path):
  vocab = words.WordVocab.build(["the cat sat"])
  path = tmp_path / "vec.txt"
  path.write_text("3 2\nThe 1 2\ncat 3 4\nthe 9 9\nzebra 5 6\n")
  table, found = words.load_word_vectors(path, vocab, dim=2)
  np.testing.assert_array_equal(table[vocab.id_of("the")], [1, 2])
  np.testing.assert_array_equal(table[vocab.id_of("cat")], [3, 4])
  assert not found[vocab.id_of("sat")] and found.sum() == 2
  with pytest.raises(errors.DataError, match="vec.txt:2: expected a word"):
    words.load_word_vectors(path, vocab, dim=3)


def test_regularizer_terms():
  model = encoders.GRAN(vocab_size=5, word_dim=3, hidden=2)
  params = model.init(jax.random.key(0), jnp.ones((1, 2), jnp.int32),
                      jnp.ones((1,), jnp.int32))["params"]
  anchor = params[encoders.WORD_EMBED]["embedding"] + 1.0
  words_only = paraphrase.regularizer(params, anchor, lambda_w=0.5,
                                      lambda_c=0.0)
  assert float(words_only) == pytest.approx(0.5 * 5 * 3)
  composition = sum(float(jnp.sum(x ** 2)) for k, v in params.items()
                    if k != encoders.WORD_EMBED
                    for x in jax.tree.leaves(v))
  only_c = paraphrase.regularizer(params, anchor, lambda_w=0.0, lambda_c=2.0)
  assert float(only_c) == pytest.approx(2.0 * composition, rel=1e-5)
