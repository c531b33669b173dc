"""Similarities against numpy brute force, nearest-neighbour retrieval in
both directions, and the MLP similarity: a plain MLP on [x; y], learning,
determinism and its file."""
import jax
import numpy as np
import pytest
from flax import serialization

from paraflax import errors
from paraflax.mining import knn
from paraflax.mining import similarity as sim
from paraflax.recipes import mlp_similarity as mlp

K = 3
TINY = mlp.MLPConfig(hidden=32, layers=2, negatives="random", batch_size=32,
                     learning_rate=3e-3, epochs=30, heldout_fraction=0.2,
                     patience=3, seed=0)


def _pairs(seed=0, n=30, m=24, d=8):
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(n, d)).astype(np.float32)
  y = rng.normal(size=(m, d)).astype(np.float32) * 2
  y[:min(n, m)] += x[:min(n, m)]
  return x, y


def _cos(x, y):
  x = x / np.linalg.norm(x, axis=1, keepdims=True)
  y = y / np.linalg.norm(y, axis=1, keepdims=True)
  return x.astype(np.float64) @ y.T.astype(np.float64)


def _brute_force(name, x, y, k=K):
  """[Nx, Ny] scores written from the definitions."""
  cos = _cos(x, y)
  if name == "cosine":
    return cos
  if name == "euclidean":
    diff = x[:, None, :].astype(np.float64) - y[None, :, :]
    return -np.sqrt(np.sum(diff ** 2, axis=-1))
  r_x = np.array([np.sort(row)[::-1][:k].mean() for row in cos])
  r_y = np.array([np.sort(col)[::-1][:k].mean() for col in cos.T])
  return 2 * cos - r_x[:, None] - r_y[None, :]


def _matrix(name, x, y, block_pairs, **ctx):
  p = sim.prepare(name, x, y, **ctx)
  blocks = list(sim.grid_blocks(p, block_pairs=block_pairs))
  assert [s for s, _ in blocks] == sorted(s for s, _ in blocks)
  return np.concatenate([b for _, b in blocks])


@pytest.mark.parametrize("name", ["cosine", "euclidean", "csls"])
def test_scores_match_brute_force(name):
  x, y = _pairs()
  expected = _brute_force(name, x, y)
  # A block of 50 pairs is 2 source rows: 15 blocks.
  ctx = {"k": K} if name == "csls" else {}
  np.testing.assert_allclose(_matrix(name, x, y, 50, **ctx), expected,
                             atol=2e-5)
  square = _brute_force(name, x[:24], y)
  np.testing.assert_allclose(sim.score(name, x[:24], y, **ctx),
                             np.diag(square), atol=2e-5)


def test_euclidean_uses_raw_vectors():
  x = np.array([[1.0, 0.0]], np.float32)
  # Same direction, different norm: cosine 1, distance 2.
  np.testing.assert_allclose(sim.score("euclidean", x, 3 * x), [-2.0])
  np.testing.assert_allclose(sim.score("cosine", x, 3 * x), [1.0])


def test_csls_neighbourhoods_are_the_k_nearest_means():
  x, y = _pairs()
  (sims_x, _), (sims_y, _) = knn.both_ways(x, y, K)
  r_x, r_y = knn.neighbourhood_means(sims_x, sims_y)
  cos = _cos(x, y)
  np.testing.assert_allclose(r_x, np.sort(cos, 1)[:, ::-1][:, :K].mean(1),
                             atol=1e-6)
  np.testing.assert_allclose(r_y, np.sort(cos.T, 1)[:, ::-1][:, :K].mean(1),
                             atol=1e-6)


@pytest.mark.parametrize("name", ["cosine", "euclidean", "csls"])
def test_nearest_is_argmax_both_ways(name):
  x, y = _pairs(seed=1)
  expected = _brute_force(name, x, y)
  ctx = {"k": K} if name == "csls" else {}
  src2tgt, tgt2src = sim.nearest(name, x, y, block_pairs=40, **ctx)
  np.testing.assert_array_equal(src2tgt, expected.argmax(1))
  np.testing.assert_array_equal(tgt2src, expected.argmax(0))


def test_nearest_breaks_ties_to_the_lower_index():
  x = np.eye(4, dtype=np.float32)
  y = np.stack([x[1], x[1], x[0], x[3]])  # x_1 ties y_0 and y_1
  # One source row per block, so the y_1 tie crosses blocks too.
  src2tgt, tgt2src = sim.nearest("cosine", np.stack([x[1], x[1], x[0], x[3]]),
                                 y, block_pairs=4)
  np.testing.assert_array_equal(src2tgt, [0, 0, 2, 3])
  np.testing.assert_array_equal(tgt2src, [0, 0, 2, 3])


def _numpy_mlp(params, x, y):
  """The head as a plain MLP on the concatenation [x; y]."""
  p = params["params"]
  kernel = np.concatenate([p["src_in"]["kernel"], p["tgt_in"]["kernel"]])
  h = np.maximum(np.concatenate([x, y], 1) @ kernel + p["src_in"]["bias"], 0)
  for i in range(len([n for n in p if n.startswith("deeper")])):
    layer = p[f"deeper_{i}"]
    h = np.maximum(h @ layer["kernel"] + layer["bias"], 0)
  return (h @ p["out"]["kernel"] + p["out"]["bias"])[:, 0]


@pytest.fixture(scope="module")
def toy():
  """Target = a fixed rotation of the source plus noise: learnable, and
  cosine alone cannot see it."""
  rng = np.random.default_rng(0)
  d = 8
  rotation, _ = np.linalg.qr(rng.normal(size=(d, d)))
  x = rng.normal(size=(600, d)).astype(np.float32)
  y = (x @ rotation + 0.1 * rng.normal(size=x.shape)).astype(np.float32)
  model, history = mlp.train_mlp((x[:500], y[:500]), TINY)
  return x[500:], y[500:], model, history


def test_mlp_is_an_mlp_on_the_concatenation(toy):
  x, y, model, _ = toy
  params = jax.device_get(model.params)
  np.testing.assert_allclose(sim.score("mlp", x, y, model=model),
                             _numpy_mlp(params, x, y), rtol=1e-4, atol=1e-4)
  grid = _matrix("mlp", x[:20], y[:30], 64, model=model)
  rows, cols = np.meshgrid(np.arange(20), np.arange(30), indexing="ij")
  np.testing.assert_allclose(
      grid, _numpy_mlp(params, x[rows.ravel()], y[cols.ravel()]).reshape(
          20, 30), rtol=1e-4, atol=1e-4)
  # Asymmetric: [src; tgt] order matters, and retrieval keeps it.
  assert not np.allclose(sim.score("mlp", y, x, model=model),
                         sim.score("mlp", x, y, model=model))
  src2tgt, tgt2src = sim.nearest("mlp", x[:20], y[:30], block_pairs=64,
                                 model=model)
  np.testing.assert_array_equal(src2tgt, grid.argmax(1))
  np.testing.assert_array_equal(tgt2src, grid.argmax(0))


def test_mlp_learns_a_rotation(toy):
  x, y, model, history = toy
  assert history[-1]["train_loss"] < 0.5 * history[0]["train_loss"]
  positive = sim.score("mlp", x, y, model=model)
  negative = sim.score("mlp", x, np.roll(y, 1, axis=0), model=model)
  # Held-out pairs: nearly every parallel pair beats every shuffled one.
  assert np.mean(positive[:, None] > negative[None, :]) > 0.95
  assert np.mean(sim.nearest("mlp", x, y, model=model)[0]
                 == np.arange(len(x))) > 0.8


def test_mlp_training_is_deterministic_for_a_seed():
  x, y = _pairs(seed=2, n=80, m=80)
  config = mlp.MLPConfig(hidden=16, batch_size=16, epochs=2,
                         negatives="random", seed=5)
  a, history_a = mlp.train_mlp((x, y), config)
  b, history_b = mlp.train_mlp((x, y), config)
  c, _ = mlp.train_mlp((x, y), mlp.MLPConfig(
      hidden=16, batch_size=16, epochs=2, negatives="random", seed=6))
  assert history_a == history_b
  same = jax.tree.map(np.array_equal, a.params, b.params)
  assert all(jax.tree.leaves(same))
  assert not np.array_equal(sim.score("mlp", x, y, model=a),
                            sim.score("mlp", x, y, model=c))


def test_mlp_epochs_and_early_stopping():
  x, y = _pairs(seed=3, n=64, m=64)
  fixed = mlp.MLPConfig(hidden=8, batch_size=16, epochs=3, negatives="random",
                        heldout_fraction=0.0)
  _, history = mlp.train_mlp((x, y), fixed)
  assert [h["epoch"] for h in history] == [1, 2, 3]
  assert all("heldout_loss" not in h for h in history)
  # A learning rate far too high: the held-out loss stops improving early.
  stopped = mlp.MLPConfig(hidden=8, batch_size=16, epochs=40,
                          negatives="random", learning_rate=1.0, patience=1)
  _, history = mlp.train_mlp((x, y), stopped)
  assert len(history) < 40 and "heldout_loss" in history[0]


def test_worst_negatives_are_the_lowest_cosine_pairs():
  rng = np.random.default_rng(4)
  x = rng.normal(size=(40, 8)).astype(np.float32)
  y = x.copy()
  y[::2] = rng.normal(size=(20, 8))  # even rows: noise
  chosen = mlp.worst_pairs((x, y), 0.5)
  assert sorted(chosen) == list(range(0, 40, 2))
  assert len(mlp.worst_pairs((x, y), 0.6)) == 24
  model, _ = mlp.train_mlp((x[1::2], y[1::2]), mlp.MLPConfig(
      hidden=8, batch_size=8, epochs=1, worst_fraction=0.5), noisy=(x, y))
  assert model.dim == 8


def test_mlp_file_round_trip(tmp_path, toy):
  x, y, model, _ = toy
  path = tmp_path / "mlp.msgpack"
  mlp.save_mlp(model, path)
  loaded = mlp.load_mlp(path)
  assert (loaded.dim, loaded.head) == (model.dim, model.head)
  np.testing.assert_array_equal(sim.score("mlp", x, y, model=loaded),
                                sim.score("mlp", x, y, model=model))
  (tmp_path / "bad").write_bytes(b"\xc1 not msgpack")
  with pytest.raises(errors.DataError, match="bad"):
    mlp.load_mlp(tmp_path / "bad")
  with pytest.raises(errors.DataError, match="no such"):
    mlp.load_mlp(tmp_path / "missing")
  state = serialization.msgpack_restore(path.read_bytes())
  (tmp_path / "resized").write_bytes(serialization.msgpack_serialize(
      {**state, "dim": 5}))
  with pytest.raises(errors.DataError, match="shapes do not match"):
    mlp.load_mlp(tmp_path / "resized")
  (tmp_path / "cut").write_bytes(serialization.msgpack_serialize(
      {k: v for k, v in state.items() if k != "layers"}))
  with pytest.raises(errors.DataError, match="damaged"):
    mlp.load_mlp(tmp_path / "cut")


def test_errors_say_what_to_fix(toy):
  x, y = _pairs()
  with pytest.raises(errors.ConfigError, match="unknown similarity"):
    sim.score("dot", x, x)
  with pytest.raises(errors.DataError, match="dimension"):
    sim.score("cosine", x, x[:, :4])
  with pytest.raises(errors.DataError, match="pairs need one"):
    sim.score("cosine", x, y)
  with pytest.raises(errors.ConfigError, match="k=31"):
    sim.score("csls", x, x, k=31)
  with pytest.raises(errors.DataError, match="trained on 8"):
    sim.score("mlp", x[:, :4], x[:, :4], model=toy[2])
  with pytest.raises(errors.ConfigError, match="noisy"):
    mlp.train_mlp((x, x), mlp.MLPConfig(negatives="worst"))
  with pytest.raises(errors.ConfigError, match="unknown negatives"):
    mlp.train_mlp((x, x), mlp.MLPConfig(negatives="hard"))
  nan = x.copy()
  nan[3, 0] = np.nan
  with pytest.raises(errors.DataError, match="row"):
    sim.score("cosine", nan, x)
