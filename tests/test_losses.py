"""The on-device negative choice and the margin loss against brute force."""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from paraflax import losses


def _cos(u, v):
  return float(u @ v / max(np.linalg.norm(u) * np.linalg.norm(v), 1e-8))


def _brute_force_hardest(emb_a, emb_b, uid_a, uid_b, valid):
  cands = np.concatenate([emb_a, emb_b])
  cand_uid = np.concatenate([uid_a, uid_b])
  cand_valid = np.concatenate([valid, valid])
  n = len(emb_a)
  out_a, out_b = [], []
  def shares(i, p):
    return bool({uid_a[i], uid_b[i]} & {uid_a[p], uid_b[p]})
  for i in range(n):
    allowed = [j for j in range(2 * n)
               if cand_valid[j] and j % n != i and not shares(i, j % n)]
    out_a.append(max(allowed, key=lambda j: _cos(emb_a[i], cands[j])))
    out_b.append(max(allowed, key=lambda j: _cos(emb_b[i], cands[j])))
  return np.asarray(out_a), np.asarray(out_b)


def _case(n=12, d=5, seed=0):
  rng = np.random.default_rng(seed)
  emb_a = rng.normal(size=(n, d)).astype(np.float32)
  emb_b = (emb_a + 0.3 * rng.normal(size=(n, d))).astype(np.float32)
  uid_a, uid_b = np.arange(n), np.arange(n, 2 * n)
  # Pair 3's b-side is pair 7's a-side text, pair 5 repeats pair 1 entirely.
  uid_b[3] = uid_a[7]
  emb_b[3] = emb_a[7]
  uid_a[5], uid_b[5] = uid_a[1], uid_b[1]
  emb_a[5], emb_b[5] = emb_a[1], emb_b[1]
  valid = np.ones(n, bool)
  valid[-1] = False  # a padding row
  return emb_a, emb_b, uid_a.astype(np.int32), uid_b.astype(np.int32), valid


def test_hardest_negative_equals_brute_force():
  emb_a, emb_b, uid_a, uid_b, valid = _case()
  neg_a, neg_b, has = losses.choose_negatives(
      emb_a, emb_b, uid_a, uid_b, valid, jax.random.key(0), "max")
  want_a, want_b = _brute_force_hardest(emb_a, emb_b, uid_a, uid_b, valid)
  np.testing.assert_array_equal(neg_a, want_a)
  np.testing.assert_array_equal(neg_b, want_b)
  assert bool(has.all())


@pytest.mark.parametrize("sampling", losses.SAMPLING)
def test_partners_duplicates_and_padding_never_chosen(sampling):
  emb_a, emb_b, uid_a, uid_b, valid = _case(n=16, seed=1)
  n = len(emb_a)
  cand_uid = np.concatenate([uid_a, uid_b])
  for seed in range(20):
    neg_a, neg_b, _ = losses.choose_negatives(
        emb_a, emb_b, uid_a, uid_b, valid, jax.random.key(seed), sampling)
    for i, j in itertools.chain(enumerate(np.asarray(neg_a)),
                                enumerate(np.asarray(neg_b))):
      assert j % n != i, "self or partner chosen"
      pair_j = {cand_uid[j % n], cand_uid[j % n + n]}
      assert not pair_j & {uid_a[i], uid_b[i]}, (
          "a duplicate or a duplicate's partner chosen")
      assert valid[j % n], "a padding row chosen"


def test_duplicate_would_be_hardest_without_mask():
  """The duplicate case is live: unmasked, the duplicate is the argmax."""
  emb_a, emb_b, uid_a, uid_b, valid = _case()
  distinct_a = np.arange(len(uid_a), dtype=np.int32)
  distinct_b = distinct_a + len(uid_a)
  neg_a, _, _ = losses.choose_negatives(
      emb_a, emb_b, distinct_a, distinct_b, valid, jax.random.key(0), "max")
  assert int(neg_a[5]) == 1  # pair 1's a-side: the same text as pair 5's
  masked, _, _ = losses.choose_negatives(
      emb_a, emb_b, uid_a, uid_b, valid, jax.random.key(0), "max")
  assert int(masked[5]) != 1


def test_partner_of_a_duplicate_is_never_the_hardest():
  """Pairs (R, T1) and (R, T2): T2 is a paraphrase of R, not a negative."""
  emb_a, emb_b, uid_a, uid_b, valid = _case()
  n = len(emb_a)
  # Pair 2 is (R, T2) with R pair 0's a-side; T2 lies nearest to both sides
  # of pair 0, so only the mask keeps it out.
  uid_a[2], emb_a[2] = uid_a[0], emb_a[0]
  emb_b[2] = (emb_a[0] + emb_b[0]) / 2
  t2 = n + 2
  cands = np.concatenate([emb_a, emb_b])
  cand_uid = np.concatenate([uid_a, uid_b])
  # Masking only self, partner and exact duplicates leaves T2 the hardest.
  for s in (emb_a[0], emb_b[0]):
    old_rule = [j for j in range(2 * n) if valid[j % n] and j % n != 0
                and cand_uid[j] not in (uid_a[0], uid_b[0])]
    assert max(old_rule, key=lambda j: _cos(s, cands[j])) == t2
  forbidden = np.asarray(losses.forbidden_negatives(
      jnp.asarray(uid_a), jnp.asarray(uid_b), jnp.asarray(valid)))
  assert forbidden[0, t2] and forbidden[2, n]  # T2 for pair 0, T1 for pair 2
  for sampling in losses.SAMPLING:
    neg_a, neg_b, _ = losses.choose_negatives(
        emb_a, emb_b, uid_a, uid_b, valid, jax.random.key(0), sampling)
    assert t2 not in (int(neg_a[0]), int(neg_b[0]))
    assert n not in (int(neg_a[2]), int(neg_b[2]))


def test_random_sampling_covers_allowed_candidates():
  emb_a, emb_b, uid_a, uid_b, valid = _case(seed=2)
  seen = set()
  for seed in range(400):
    neg_a, _, _ = losses.choose_negatives(
        emb_a, emb_b, uid_a, uid_b, valid, jax.random.key(seed), "rand")
    seen.add(int(neg_a[0]))
  allowed = {j for j in range(24) if j % 12 not in (0, 11)}
  assert seen == allowed


def test_margin_loss_matches_formula():
  rng = np.random.default_rng(3)
  s1, s2, t1, t2 = (rng.normal(size=(4, 6)).astype(np.float32)
                    for _ in range(4))
  weight = np.asarray([1, 1, 1, 0], np.float32)
  got = float(losses.margin_loss(s1, s2, t1, t2, weight, margin=0.4))
  per_pair = [max(0, 0.4 - _cos(s1[i], s2[i]) + _cos(s1[i], t1[i]))
              + max(0, 0.4 - _cos(s1[i], s2[i]) + _cos(s2[i], t2[i]))
              for i in range(3)]
  assert got == pytest.approx(np.mean(per_pair), rel=1e-5)


def test_zero_vectors_give_finite_loss_and_gradient():
  """Padding rows embed to zero; their gradient must not poison the batch."""
  z = jnp.zeros((2, 3)).at[0].set(1.0)
  loss, grad = jax.value_and_grad(
      lambda s: losses.margin_loss(s, z, z, z, jnp.asarray([1.0, 0.0])))(z)
  assert np.isfinite(float(loss)) and np.isfinite(np.asarray(grad)).all()


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_token_cross_entropy_is_the_smoothed_log_softmax(smoothing):
  rng = np.random.default_rng(5)
  logits = rng.normal(size=(3, 4, 11)).astype(np.float32) * 3
  targets = rng.integers(0, 11, (3, 4))
  mask = rng.random((3, 4)) < 0.7
  logprobs = np.asarray(jax.nn.log_softmax(jnp.asarray(logits)))
  picked = np.take_along_axis(logprobs, targets[..., None], -1)[..., 0]
  nll = -(1 - smoothing) * picked - smoothing * logprobs.mean(-1)
  total, count = losses.token_cross_entropy(jnp.asarray(logits),
                                            jnp.asarray(targets),
                                            jnp.asarray(mask), smoothing)
  assert float(count) == mask.sum()
  np.testing.assert_allclose(float(total), (nll * mask).sum(), rtol=1e-5)
