"""Megabatch stream: deterministic by index, epoch-complete, padded right."""
import numpy as np

from paraflax import config as config_lib
from paraflax.data import pairs as pairs_lib
from paraflax.data import tasks
from paraflax.data import words
from paraflax.recipes import paraphrase
from paraflax.training import partitioning
from tests.conftest import ROOT
from tests.conftest import TINY


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


class _Counted(np.ndarray):
  """Word ids that record which rows were read."""

  def __getitem__(self, idx):
    self.read.update(np.asarray(idx).reshape(-1).tolist())
    return np.asarray(self)[idx]


def test_each_process_reads_only_its_columns_of_a_megabatch():
  """Blocks of 2 processes, in process order, are the one-process
  megabatch (its width, duplicate ids, scrambles and padding), and a
  process reads the word ids of no pair of the other's block."""
  one = _stream(shards=8, scramble=0.5, seed=2)
  for k in (0, 3, 7):
    blocks, reads = [], []
    for index in range(2):
      read, encoded = set(), dict(vars(one.pairs))
      for side in ("a", "b"):
        encoded[side] = encoded[side].view(_Counted)
        encoded[side].read = read
      blocks.append(pairs_lib.MegabatchStream(
          pairs_lib.EncodedPairs(**encoded), batch=10, megabatch=4, shards=8,
          scramble=0.5, seed=2, process=(index, 2)).get(k))
      reads.append(read)
    for key, value in one.get(k).items():
      np.testing.assert_array_equal(
          np.concatenate([b[key] for b in blocks], axis=1), value)
    columns = one.indices(k).reshape(4, 10)
    # 16 padded columns: process 0 holds pairs 0-7, process 1 pairs 8-9.
    assert reads == [set(columns[:, :8].ravel().tolist()),
                     set(columns[:, 8:].ravel().tolist())]


def _mixed(sizes=(300, 40), rates=(0.9, 0.1), **kwargs):
  """Two members of one-word pairs: member m's words are m0, m1, ..."""
  pairs = [(f"w{m}x{i}", f"w{m}y{i}") for m, n in enumerate(sizes)
           for i in range(n)]
  vocab = words.WordVocab.build(s for p in pairs for s in p)
  return pairs_lib.MegabatchStream(
      pairs_lib.encode_pairs(pairs, vocab, max_len=4),
      **{"batch": 10, "megabatch": 4, "seed": 0, "sizes": sizes,
         "rates": rates, **kwargs})


def test_rates_are_respected():
  stream = _mixed()
  seen = np.concatenate([stream.indices(k) for k in range(100)])  # 4,000
  share = np.mean(seen >= 300)  # from the 40 pairs of member 1
  assert abs(share - 0.1) < 0.015, share
  # Every megabatch mixes both members, not one after the other.
  assert all(0 < np.sum(stream.indices(k) >= 300) < 40 for k in range(10))
  # Each member is read in passes: the small one repeats (~10 times), every
  # pair as often as any other, give or take the pass under way.
  for member in (seen[seen < 300], seen[seen >= 300] - 300):
    counts = np.bincount(member)
    assert counts.max() - counts.min() <= 1, counts


def test_rates_are_relative_weights():
  a = np.concatenate([_mixed(rates=(9, 1)).indices(k) for k in range(5)])
  b = np.concatenate([_mixed().indices(k) for k in range(5)])
  np.testing.assert_array_equal(a, b)


def test_mixed_stream_is_a_function_of_seed_and_resumes_exactly():
  fresh = [_mixed(seed=5).get(k) for k in range(8)]
  again = _mixed(seed=5)
  for k in (7, 2, 5):  # any order: each megabatch from the seed alone
    np.testing.assert_array_equal(again.get(k)["a"], fresh[k]["a"])
  resumed = _mixed(seed=5).from_step(6 * 4)  # a new process, at step 24
  for k in (6, 7):
    got = next(resumed)
    for key in fresh[k]:
      np.testing.assert_array_equal(got[key], fresh[k][key])
  other = _mixed(seed=6).get(0)["a"]
  assert not np.array_equal(other, fresh[0]["a"])


def test_without_rates_the_passes_are_the_ones_of_before():
  """No mixture: the order every earlier run trained on, (seed, pass)."""
  stream = _stream(seed=3)
  order = np.random.default_rng([3, 0]).permutation(230)
  np.testing.assert_array_equal(stream.indices(0), order[:40])


def test_a_config_mixture_samples_its_tasks_by_rate(tmp_path):
  members = ("paraphrase_en_generaltest2022_cs", "paraphrase_en_wikiauto")
  config = config_lib.load(str(ROOT / "configs" / "gran.py"), list(TINY) + [
      "--config.data.task=",
      f"--config.data.mixture=(('{members[0]}', 3), ('{members[1]}', 1))"])
  stream = paraphrase.build(config, str(tmp_path / "w"),
                            partitioning.make_mesh(1)).stream
  assert stream.sizes == (1448, 16000) and stream.rates == (3.0, 1.0)
  seen = np.concatenate([stream.indices(k) for k in range(15)])  # 3,000
  assert abs(np.mean(seen < 1448) - 0.75) < 0.03
