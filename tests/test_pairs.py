"""Megabatch stream: deterministic by index, epoch-complete, padded right."""
import numpy as np

from paraflax.data import pairs as pairs_lib
from paraflax.data import tasks
from paraflax.data import words


def _stream(**kwargs):
  examples = tasks.examples("paraphrase_en_generaltest2022_cs", "train")[:230]
  pairs = [(e["sentence1"], e["sentence2"]) for e in examples]
  vocab = words.WordVocab.build(s for p in pairs for s in p)
  encoded = pairs_lib.encode_pairs(pairs, vocab, max_len=30)
  return pairs_lib.MegabatchStream(encoded, **{"batch": 10, "megabatch": 4,
                                               **kwargs})


def test_same_index_same_megabatch_and_resume_sees_the_same_stream():
  stream = _stream(seed=3)
  fresh = [stream.get(k) for k in range(6)]
  resumed = stream.from_step(3 * 4)
  for k in range(3, 6):
    got = next(resumed)
    for key in fresh[k]:
      np.testing.assert_array_equal(got[key], fresh[k][key])


def test_every_pair_once_per_epoch():
  stream = _stream()
  per_mb = 40
  seen = np.concatenate([stream.indices(k) for k in range(-(-460 // per_mb))])
  np.testing.assert_array_equal(np.sort(seen[:230]), np.arange(230))
  np.testing.assert_array_equal(np.sort(seen[230:460]), np.arange(230))


def test_padding_rows_for_device_split():
  mb = _stream(shards=8).get(0)
  assert mb["a"].shape[:2] == (4, 16)
  assert (mb["weight"][:, 10:] == 0).all() and (mb["weight"][:, :10] == 1).all()
  assert (mb["a_uid"][:, 10:] == -1).all() and (mb["a_len"][:, 10:] == 0).all()
  assert mb["a"].shape[2] % 8 == 0 or mb["a"].shape[2] == 30  # max_len


def test_duplicate_texts_share_an_id():
  vocab = words.WordVocab.build(["a b c", "d e"])
  enc = pairs_lib.encode_pairs([("a b c", "d e"), ("A b c", "d e f")], vocab,
                               max_len=8)
  assert enc.a_uid[0] == enc.a_uid[1]  # same words after lowercasing
  assert enc.b_uid[0] != enc.b_uid[1]
  assert len({*enc.a_uid, *enc.b_uid}) == 3


def test_scrambling_keeps_the_words():
  plain, scrambled = _stream().get(0), _stream(scramble=1.0).get(0)
  assert not np.array_equal(plain["a"], scrambled["a"])
  np.testing.assert_array_equal(np.sort(plain["a"], axis=-1),
                                np.sort(scrambled["a"], axis=-1))
