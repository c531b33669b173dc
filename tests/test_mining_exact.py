"""k-NN and margins on real embeddings against numpy written from their
definitions (docs/mining.md).

test_mining_knn and test_mining_margin check the same code on Gaussian
vectors. Real sentence embeddings are different data: a max-pooled BiLSTM
puts every cosine in a narrow band (about 0.6-0.9 for the tiny model), so
neighbours lie a few float32 steps apart, and sentences that share their
first max_len subwords get identical embeddings (exact ties). Here a tiny
de-en model trained on real multi30k embeds a real mining benchmark
(newstest2012 pairs among other years' news) and every backend must agree
with a float64 brute force.
"""
import numpy as np
import pytest

from paraflax.evaluation import mining_set
from paraflax.inference import embedders
from paraflax.mining import faiss_knn
from paraflax.mining import knn
from paraflax.mining import margin
from paraflax.training import partitioning

K = 4
# Cosines closer than this may come in either order: the device computes
# them in float32 (rounding error about 4e-7 here), the brute force in
# float64. Exactly equal float64 cosines (identical embeddings) are ties and
# must go to the lower index.
_NEAR = 2e-6
_ATOL = 1e-6  # float32 cosine vs float64


@pytest.fixture(scope="module")
def embedded(bilingual_workdir) -> tuple[np.ndarray, np.ndarray]:
  bench = mining_set.build("de", "dev", gold=200, distractors=200, seed=0)
  embed, _ = embedders.load(str(bilingual_workdir), ["de", "en"])
  return embed(bench.src, "de"), embed(bench.tgt, "en")


def _unit(x: np.ndarray) -> np.ndarray:
  x = x.astype(np.float64)
  return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-8)


@pytest.fixture(scope="module")
def cos(embedded) -> np.ndarray:
  """[Nx, Ny] cosines in float64."""
  x, y = embedded
  return _unit(x) @ _unit(y).T


def _searches(embedded, cos) -> list[tuple[np.ndarray, np.ndarray,
                                           np.ndarray]]:
  """(queries, corpus, their float64 cosines): both mining directions, and
  English against itself, where identical embeddings make exact ties."""
  x, y = embedded
  return [(x, y, cos), (y, x, cos.T), (y, y, _unit(y) @ _unit(y).T)]


def _brute_force(cos_QxC: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
  """Top-k by descending cosine; a stable sort puts ties at the lower index."""
  idx = np.argsort(-cos_QxC, axis=1, kind="stable")[:, :k]
  return np.take_along_axis(cos_QxC, idx, axis=1), idx


def _check_neighbours(sims: np.ndarray, idx: np.ndarray, cos_QxC: np.ndarray,
                      *, ties_to_lower: bool) -> None:
  """`sims`, `idx` are the brute-force top-k of `cos_QxC`, up to the order
  of cosines closer than _NEAR; with `ties_to_lower` exact ties too."""
  want_sims, want_idx = _brute_force(cos_QxC, idx.shape[1])
  assert idx.shape == want_idx.shape
  # Each row's neighbours are distinct and carry their own cosine ...
  assert all(len(set(row)) == len(row) for row in idx.tolist())
  got = np.take_along_axis(cos_QxC, idx, axis=1)
  np.testing.assert_allclose(sims, got, atol=_ATOL)
  # ... and are as close as the best k: together, the brute-force set up to
  # a swap with an equally close row.
  np.testing.assert_allclose(sims, want_sims, atol=_ATOL)
  differ = idx != want_idx
  gap = np.abs(got - want_sims)[differ]
  assert (gap <= _NEAR).all(), f"swapped neighbours {gap.max()} apart"
  if ties_to_lower:
    assert (gap > 0).all(), "an exact tie did not go to the lower index"


@pytest.mark.parametrize("num_devices, block", [(1, 8192), (8, 16)])
def test_knn_equals_brute_force_both_ways(embedded, cos, num_devices, block):
  mesh = partitioning.make_mesh(num_devices)
  for queries, corpus, cos_QxC in _searches(embedded, cos):
    sims, idx = knn.knn(queries, corpus, K, block=block, mesh=mesh)
    assert sims.dtype == np.float32 and idx.dtype == np.int32
    _check_neighbours(sims, idx, cos_QxC, ties_to_lower=True)


def test_the_data_has_exact_ties(embedded):
  # Else the tie check above checks nothing. English lines that share their
  # first max_len subwords (the rest is cut) embed identically.
  _, y = embedded
  top, _ = _brute_force(_unit(y) @ _unit(y).T, K)
  assert (np.diff(top, axis=1) == 0).any()


def test_faiss_flat_finds_the_same_neighbours(embedded, cos):
  for queries, corpus, cos_QxC in _searches(embedded, cos):
    (_, sims, idx), = faiss_knn.knn_blocks(queries, corpus, K, index="flat")
    # faiss may order exact ties either way (its docstring says so).
    _check_neighbours(sims, idx, cos_QxC, ties_to_lower=False)
    # Hence the neighbours of our k-NN, but for swaps of equally close rows.
    _, ours = knn.knn(queries, corpus, K)
    differ = idx != ours
    gap = np.abs(np.take_along_axis(cos_QxC, idx, axis=1)
                 - np.take_along_axis(cos_QxC, ours, axis=1))
    assert (gap[differ] <= _NEAR).all()


def _margin_matrix(cos_XxY: np.ndarray, k: int, name: str) -> np.ndarray:
  """The margin score of every pair: margin(cos(x, y),
  sum_{z in NN_k(x)} cos(x, z) / 2k + sum_{z in NN_k(y)} cos(y, z) / 2k)."""
  fwd, _ = _brute_force(cos_XxY, k)
  bwd, _ = _brute_force(cos_XxY.T, k)
  b = fwd.sum(axis=1)[:, None] / (2 * k) + bwd.sum(axis=1)[None, :] / (2 * k)
  return {"absolute": cos_XxY, "distance": cos_XxY - b,
          "ratio": cos_XxY / b}[name]


@pytest.mark.parametrize("name", sorted(margin.MARGINS))
def test_margin_scores_equal_the_formula(embedded, cos, name):
  x, y = embedded
  scores = _margin_matrix(cos, K, name)
  c = margin.score_candidates(x, y, K, margin=name)
  np.testing.assert_allclose(c.mean_x, _brute_force(cos, K)[0].mean(axis=1),
                             atol=_ATOL)
  np.testing.assert_allclose(c.mean_y, _brute_force(cos.T, K)[0].mean(axis=1),
                             atol=_ATOL)
  rows_x, rows_y = np.arange(len(x))[:, None], np.arange(len(y))[:, None]
  np.testing.assert_allclose(c.fwd_score, scores[rows_x, c.fwd_index],
                             rtol=1e-5, atol=_ATOL)
  np.testing.assert_allclose(c.bwd_score, scores[c.bwd_index, rows_y],
                             rtol=1e-5, atol=_ATOL)
  # The mined pairs carry their own score, highest first.
  pairs = margin.mine(x, y, K, margin=name)
  assert len(pairs.src) > 0 and (np.diff(pairs.score) <= 0).all()
  np.testing.assert_allclose(pairs.score, scores[pairs.src, pairs.tgt],
                             rtol=1e-5, atol=_ATOL)
