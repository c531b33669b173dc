"""Kim et al.'s alignment-recovery baselines without embeddings: the
Levenshtein matrix against a plain dynamic programme, and the protocol."""
import numpy as np

from paraflax.evaluation import text_baselines


def _edit(a: str, b: str) -> int:
  row = list(range(len(b) + 1))
  for i, ca in enumerate(a, 1):
    prev, row[0] = row[0], i
    for j, cb in enumerate(b, 1):
      prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1,
                                 prev + (ca != cb))
  return row[-1]


def test_levenshtein_matrix_is_the_edit_distance():
  src = ["kitten", "", "Straße 12", "sitting", "a", "über 2019 hinaus"]
  tgt = ["sitting", "street 12", "", "over 2019", "kitten", "b"]
  got = text_baselines.levenshtein_matrix(src, tgt)
  want = [[_edit(s, t) for t in tgt] for s in src]
  np.testing.assert_array_equal(got, want)
  assert got[0, 0] == 3  # kitten -> sitting


def test_recovery_errors_count_misses_both_ways():
  scores = np.eye(5)
  assert text_baselines.recovery_errors(scores, seed=3)["mean"] == 0.0
  scores[0] = [0, 1, 0, 0, 0]  # source 0 prefers target 1
  out = text_baselines.recovery_errors(scores, seed=3)
  assert out["src2tgt"] == 20.0 and out["tgt2src"] == 20.0


def test_nmt_posterior_is_each_pairs_forced_decoding():
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  from paraflax.data import bitext  # pylint: disable=g-import-not-at-top
  from paraflax.models import nmt  # pylint: disable=g-import-not-at-top
  from paraflax.inference import nmt_posterior  # pylint: disable=g-import-not-at-top
  model = nmt.AttentionNMT(src_vocab=20, tgt_vocab=30, emb_dim=8, hidden=8,
                           attention_dim=8)
  ids = jnp.ones((1, 4), jnp.int32)
  params = model.init(jax.random.key(0), ids, jnp.ones((1,), jnp.int32),
                      ids)["params"]
  src = [[5, 6, 7, bitext.EOS], [9, bitext.EOS]]
  tgt = [[11, 12, bitext.EOS], [13, 14, 15, 16, bitext.EOS]]
  got = nmt_posterior.score_matrix(model, params, src, tgt, batch_size=3)
  # The four pairs in one call, each padded to the longest.
  pairs = [(s, t) for s in src for t in tgt]
  s_ids = np.zeros((4, 4), np.int32)
  t_in = np.zeros((4, 5), np.int32)
  for k, (s, t) in enumerate(pairs):
    s_ids[k, :len(s)] = s
    t_in[k, :len(t)] = [bitext.BOS] + t[:-1]
  logp = jax.nn.log_softmax(model.apply(
      {"params": params}, s_ids, np.asarray([len(s) for s, _ in pairs]),
      t_in))
  want = [float(np.mean([logp[k, n, tok] for n, tok in enumerate(t)]))
          for k, (_, t) in enumerate(pairs)]
  np.testing.assert_allclose(got.reshape(-1), want, rtol=1e-4, atol=1e-5)
