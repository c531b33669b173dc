"""Margin scores, candidate strategies and BUCC metrics against brute force
and hand-checked examples."""
import numpy as np
import pytest

from paraflax import errors
from paraflax.mining import margin

K = 3


def _cos_matrix(x, y):
  x = x / np.linalg.norm(x, axis=1, keepdims=True)
  y = y / np.linalg.norm(y, axis=1, keepdims=True)
  return x.astype(np.float64) @ y.T.astype(np.float64)


def _neighbours(sims, k):
  return np.argsort(-sims, axis=1, kind="stable")[:, :k]


def _brute_force_margins(x, y, k, name):
  """[Nx, Ny] margin of every pair, written from the formula."""
  sims = _cos_matrix(x, y)
  fwd_nn, bwd_nn = _neighbours(sims, k), _neighbours(sims.T, k)
  mean_x = np.array([sims[i, fwd_nn[i]].sum() / k for i in range(len(x))])
  mean_y = np.array([sims[bwd_nn[j], j].sum() / k for j in range(len(y))])
  b = mean_x[:, None] / 2 + mean_y[None, :] / 2
  scores = {"absolute": sims, "distance": sims - b, "ratio": sims / b}[name]
  return scores, fwd_nn, bwd_nn, mean_x, mean_y


def _brute_force_strategy(x, y, k, name, strategy):
  scores, fwd_nn, bwd_nn, _, _ = _brute_force_margins(x, y, k, name)
  fwd = [(i, int(nn[np.argmax(scores[i, nn])])) for i, nn in
         enumerate(fwd_nn)]
  bwd = [(int(nn[np.argmax(scores[nn, j])]), j) for j, nn in
         enumerate(bwd_nn)]
  pairs = {"fwd": fwd, "bwd": bwd,
           "intersect": [p for p in fwd if p in set(bwd)]}.get(strategy)
  if strategy == "max":
    pairs, used_src, used_tgt = [], set(), set()
    for s, t in sorted(fwd + bwd, key=lambda p: (-scores[p], p)):
      if s not in used_src and t not in used_tgt:
        pairs.append((s, t))
        used_src.add(s)
        used_tgt.add(t)
  pairs = sorted(pairs, key=lambda p: (-scores[p], p))
  return pairs, np.array([scores[p] for p in pairs])


def _noisy_bitext(seed=0, nx=40, ny=50, d=8):
  """Half of x has a noisy translation somewhere in y; the rest is noise."""
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(nx, d))
  y = rng.normal(size=(ny, d))
  perm = rng.permutation(ny)[:nx // 2]
  y[perm] = x[:nx // 2] + 0.6 * rng.normal(size=(nx // 2, d))
  return x.astype(np.float32), y.astype(np.float32)


@pytest.mark.parametrize("name", sorted(margin.MARGINS))
def test_margin_scores_equal_the_formula(name):
  x, y = _noisy_bitext()
  c = margin.score_candidates(x, y, K, margin=name, block=16)
  scores, fwd_nn, bwd_nn, mean_x, mean_y = _brute_force_margins(x, y, K, name)
  np.testing.assert_array_equal(c.fwd_index, fwd_nn)
  np.testing.assert_array_equal(c.bwd_index, bwd_nn)
  np.testing.assert_allclose(c.mean_x, mean_x, atol=1e-6)
  np.testing.assert_allclose(c.mean_y, mean_y, atol=1e-6)
  np.testing.assert_allclose(
      c.fwd_score, np.take_along_axis(scores, fwd_nn, axis=1), atol=1e-5)
  np.testing.assert_allclose(
      c.bwd_score, np.take_along_axis(scores.T, bwd_nn, axis=1), atol=1e-5)


@pytest.mark.parametrize("name", ["ratio", "distance"])
@pytest.mark.parametrize("strategy", sorted(margin.STRATEGIES))
def test_strategies_equal_brute_force(strategy, name):
  x, y = _noisy_bitext(seed=1)
  got = margin.mine(x, y, K, margin=name, strategy=strategy, block=16)
  pairs, scores = _brute_force_strategy(x, y, K, name, strategy)
  assert list(zip(got.src.tolist(), got.tgt.tolist())) == pairs
  np.testing.assert_allclose(got.score, scores, atol=1e-5)


def test_strategies_differ_and_nest_on_random_data():
  x, y = _noisy_bitext(seed=2)
  c = margin.score_candidates(x, y, K, block=16)
  got = {name: set(zip(p.src.tolist(), p.tgt.tolist())) for name, p in
         ((s, margin.select(c, s)) for s in margin.STRATEGIES)}
  assert got["intersect"] == got["fwd"] & got["bwd"]
  # The data is hard enough for the strategies to disagree.
  assert got["intersect"] < got["max"] < got["fwd"] | got["bwd"]
  src, tgt = zip(*got["max"])
  assert len(set(src)) == len(src) and len(set(tgt)) == len(tgt)


def _angles(*degrees):
  rad = np.deg2rad(degrees)
  return np.stack([np.cos(rad), np.sin(rad)], axis=1).astype(np.float32)


def _cos(degrees):
  return np.cos(np.deg2rad(degrees))


# Unit vectors at angles, k = 1, margin absolute (score = cosine):
#   x: 0, 90, 10 degrees;  y: 4, 80, 170, 30 degrees.
#   fwd: x0->y0 (4), x1->y1 (10), x2->y0 (6)
#   bwd: y0->x0 (4), y1->x1 (10), y2->x1 (80), y3->x2 (20)
HAND_X, HAND_Y = _angles(0, 90, 10), _angles(4, 80, 170, 30)
HAND = {
    "fwd": [(0, 0, 4), (2, 0, 6), (1, 1, 10)],
    "bwd": [(0, 0, 4), (1, 1, 10), (2, 3, 20), (1, 2, 80)],
    "intersect": [(0, 0, 4), (1, 1, 10)],
    # (2, 0) loses y0 to (0, 0); (1, 2) loses x1 to (1, 1).
    "max": [(0, 0, 4), (1, 1, 10), (2, 3, 20)],
}


@pytest.mark.parametrize("strategy", sorted(HAND))
def test_strategies_on_a_hand_checked_example(strategy):
  got = margin.mine(HAND_X, HAND_Y, 1, margin="absolute", strategy=strategy)
  src, tgt, degrees = zip(*HAND[strategy])
  np.testing.assert_array_equal(got.src, src)
  np.testing.assert_array_equal(got.tgt, tgt)
  np.testing.assert_allclose(got.score, _cos(degrees), atol=1e-6)


def test_ratio_margin_on_the_hand_example():
  c = margin.score_candidates(HAND_X, HAND_Y, 1, margin="ratio")
  # Mutual nearest neighbours have b = a: ratio 1. x2 -> y0: a = cos 6,
  # b = cos 6 / 2 + cos 4 / 2 (y0's own nearest neighbour is x0).
  np.testing.assert_allclose(
      c.fwd_score[:, 0], [1, 1, _cos(6) / (_cos(6) / 2 + _cos(4) / 2)],
      atol=1e-6)


def test_threshold_keeps_scores_at_or_above_it():
  c = margin.score_candidates(HAND_X, HAND_Y, 1, margin="absolute")
  at_10 = margin.select(c, "max", threshold=float(c.fwd_score[1, 0]))
  np.testing.assert_array_equal(at_10.src, [0, 1])
  assert len(margin.select(c, "bwd", threshold=_cos(15)).src) == 2
  assert len(margin.select(c, "bwd", threshold=-1.0).src) == 4
  assert len(margin.select(c, "fwd", threshold=1.1).src) == 0


def test_unknown_names_and_undefined_ratio():
  with pytest.raises(errors.ConfigError, match="'cosine'.*'absolute'"):
    margin.mine(HAND_X, HAND_Y, 1, margin="cosine")
  with pytest.raises(errors.ConfigError, match="'union'"):
    margin.mine(HAND_X, HAND_Y, 1, strategy="union")
  x, y = HAND_X.copy(), HAND_Y.copy()
  x[0] = y[0] = 0  # both neighbourhood means 0: ratio 0 / 0
  with pytest.raises(errors.DataError, match=r"x row\(s\) \[0\]"):
    margin.score_candidates(x, y, 1, margin="ratio")
  assert len(margin.mine(x, y, 1, margin="distance").src)


def test_deduplicate_round_trip_and_expand():
  texts = ["a", "b", "a", "c", "b", "a"]
  unique, inverse = margin.deduplicate(texts)
  assert unique == ["a", "b", "c"]
  assert [unique[i] for i in inverse] == texts
  _, src_inverse = margin.deduplicate(["s", "t", "s"])
  _, tgt_inverse = margin.deduplicate(["S", "S", "T"])
  lines = margin.expand_pairs(
      margin.Mined(np.array([0, 1]), np.array([0, 1]), np.array([0.9, 0.8])),
      src_inverse, tgt_inverse)
  assert list(zip(lines.src.tolist(), lines.tgt.tolist())) == [
      (0, 0), (0, 1), (2, 0), (2, 1), (1, 2)]
  np.testing.assert_array_equal(lines.score, [0.9] * 4 + [0.8])


def test_precision_recall_f1():
  p, r, f1 = margin.precision_recall_f1(
      [(0, 0), (1, 2), (3, 3), (3, 3)], {(0, 0), (3, 3), (4, 4), (5, 5)})
  assert (p, r) == (2 / 3, 1 / 2)
  assert f1 == pytest.approx(2 * p * r / (p + r))
  assert margin.precision_recall_f1([], {(0, 0)}) == (0.0, 0.0, 0.0)
  with pytest.raises(errors.DataError, match="gold"):
    margin.precision_recall_f1([(0, 0)], set())


def _check_reproduces(threshold, p, r, f1, scores, src, tgt, gold):
  keep = np.asarray(scores) >= threshold
  got = margin.precision_recall_f1(
      zip(np.asarray(src)[keep], np.asarray(tgt)[keep]), gold)
  assert got == pytest.approx((p, r, f1))


def test_best_threshold_scans_every_cut():
  scores = [0.5, 0.9, 0.8, 0.8, 0.7, 0.6]  # not sorted on purpose
  src = [5, 0, 1, 2, 3, 4]
  tgt = [6, 0, 1, 5, 3, 9]
  gold = {(0, 0), (1, 1), (3, 3), (5, 5), (7, 7)}
  # Keeping >= 0.7: 3 of 4 right, 3 of 5 gold: F1 6/9, the best cut.
  threshold, p, r, f1 = margin.best_threshold(scores, src, tgt, gold)
  assert threshold == pytest.approx(0.65)
  assert (p, r, f1) == pytest.approx((3 / 4, 3 / 5, 6 / 9))
  _check_reproduces(threshold, p, r, f1, scores, src, tgt, gold)


def test_best_threshold_never_cuts_between_equal_scores():
  # Cutting inside the 0.8 tie after the gold (1, 1) would give F1 1.
  scores, src, tgt = [0.9, 0.8, 0.8], [0, 1, 2], [0, 1, 2]
  gold = {(0, 0), (1, 1)}
  threshold, p, r, f1 = margin.best_threshold(scores, src, tgt, gold)
  assert threshold == 0.8
  assert (p, r, f1) == pytest.approx((2 / 3, 1, 0.8))
  _check_reproduces(threshold, p, r, f1, scores, src, tgt, gold)


def test_best_threshold_edge_cases():
  assert margin.best_threshold([0.9], [0], [1], {(0, 0)}) == (
      float("inf"), 0.0, 0.0, 0.0)
  with pytest.raises(errors.DataError, match="repeat"):
    margin.best_threshold([0.9, 0.8], [0, 0], [1, 1], {(0, 1)})
  with pytest.raises(errors.DataError, match="gold"):
    margin.best_threshold([0.9], [0], [1], set())
