"""Similarities against numpy brute force, nearest-neighbour retrieval in
both directions, and the MLP similarity on the train loop: a plain MLP on
[x; y], learning, determinism, held-out selection and its workdir."""
import itertools
import json

import jax
import numpy as np
import pytest

from paraflax import errors
from paraflax.mining import knn
from paraflax.mining import similarity as sim
from paraflax.recipes import mlp_similarity as mlp
from paraflax.recipes import workdir as workdir_lib

K = 3


def _config(**values):
  """configs/mlp_similarity.py, small: the positives re-paired as
  negatives, quick steps."""
  return mlp.default_config(**{
      "hidden": 8, "batch_size": 16, "epochs": 2, "negatives": "shuffled",
      "heldout_fraction": 0.2, "eval_every": 4, "log_every": 4, **values})


def _train(workdir, positives, config, **kwargs):
  """(model, step it was saved at, evaluations) of one run."""
  evals = mlp.train(positives, config, str(workdir), **kwargs)
  model, step = mlp.load_for_inference(str(workdir))
  return model, step, evals


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
def toy(tmp_path_factory):
  """Target = a fixed rotation of the source plus noise: learnable, and
  cosine alone cannot see it."""
  rng = np.random.default_rng(0)
  d = 8
  rotation, _ = np.linalg.qr(rng.normal(size=(d, d)))
  x = rng.normal(size=(600, d)).astype(np.float32)
  y = (x @ rotation + 0.1 * rng.normal(size=x.shape)).astype(np.float32)
  config = _config(hidden=32, batch_size=32, learning_rate=3e-3, epochs=30,
                   eval_every=65)
  model, _, evals = _train(tmp_path_factory.mktemp("toy"),
                           (x[:500], y[:500]), config)
  return x[500:], y[500:], model, evals


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
  x, y, model, evals = toy
  # 1,000 examples, 800 to train on: 25 steps per epoch.
  assert [e["step"] for e in evals] == [65, 130, 195, 260, 325, 390, 455,
                                        520, 585, 650, 715, 750]
  # From ln 2 = 0.69 (a logit of 0) down.
  assert min(e["heldout/loss"] for e in evals) < 0.2
  positive = sim.score("mlp", x, y, model=model)
  negative = sim.score("mlp", x, np.roll(y, 1, axis=0), model=model)
  # Unseen pairs: nearly every parallel pair beats every shuffled one.
  assert np.mean(positive[:, None] > negative[None, :]) > 0.95
  assert np.mean(sim.nearest("mlp", x, y, model=model)[0]
                 == np.arange(len(x))) > 0.8


def test_mlp_training_is_deterministic_for_a_seed(tmp_path):
  x, y = _pairs(seed=2, n=80, m=80)
  a, _, evals_a = _train(tmp_path / "a", (x, y), _config(seed=5))
  b, _, evals_b = _train(tmp_path / "b", (x, y), _config(seed=5))
  c, _, _ = _train(tmp_path / "c", (x, y), _config(seed=6))
  assert evals_a == evals_b
  same = jax.tree.map(np.array_equal, a.params, b.params)
  assert all(jax.tree.leaves(same))
  assert not np.array_equal(sim.score("mlp", x, y, model=a),
                            sim.score("mlp", x, y, model=c))


def test_the_lowest_heldout_loss_is_kept(tmp_path):
  x, y = _pairs(seed=3, n=64, m=64)
  # A learning rate far too high: the held-out loss jumps around.
  config = _config(learning_rate=1.0, epochs=8)
  model, step, evals = _train(tmp_path / "w", (x, y), config)
  losses = [e["heldout/loss"] for e in evals]
  assert step == evals[int(np.argmin(losses))]["step"] < evals[-1]["step"]
  # The restored parameters are those of that evaluation.
  resolved = workdir_lib.load_config(str(tmp_path / "w"), mlp.RECIPE)
  train, held = mlp.split((x, y), resolved)
  recipe = mlp.MLPSimilarityRecipe(resolved, train, held)
  assert recipe.evaluate(model.params)["heldout/loss"] == pytest.approx(
      min(losses), rel=1e-6)
  # 128 examples, 102 to train on: 7 batches of 16 per epoch.
  assert resolved.train_steps == 8 * 7 and resolved.dim == 8
  rows = [json.loads(line) for line in
          (tmp_path / "w" / "metrics.jsonl").read_text().splitlines()]
  assert {r["step"] for r in rows if "heldout/loss" in r} == {
      e["step"] for e in evals}


def test_nothing_held_out_keeps_the_last_state(tmp_path):
  x, y = _pairs(seed=3, n=64, m=64)
  _, step, evals = _train(tmp_path / "w", (x, y),
                          _config(epochs=3, heldout_fraction=0.0))
  assert evals == [{"step": s} for s in (4, 8, 12, 16, 20, 24)]
  assert step == 3 * 8 and not (tmp_path / "w" / "best").exists()


def test_batches_resume_where_they_stopped():
  x, y = _pairs(seed=3, n=64, m=64)
  train, held = mlp.split((x, y), _config())
  recipe = mlp.MLPSimilarityRecipe(mlp.resolve(_config(), train), train,
                                   held)
  whole = list(itertools.islice(recipe.batches(0), 20))
  resumed = list(itertools.islice(recipe.batches(9), 11))
  for a, b in zip(whole[9:], resumed):
    assert all(np.array_equal(a[k], b[k]) for k in a)
  # An epoch (7 batches) is every training example once, the last batch
  # padded with rows of weight 0.
  epoch = whole[:7]
  assert sum(int((b["weight"] > 0).sum()) for b in epoch) == 102
  assert not np.array_equal(whole[0]["src"], whole[7]["src"])


def test_worst_negatives_are_the_lowest_cosine_pairs(tmp_path):
  rng = np.random.default_rng(4)
  x = rng.normal(size=(40, 8)).astype(np.float32)
  y = x.copy()
  y[::2] = rng.normal(size=(20, 8))  # even rows: noise
  chosen = mlp.worst_pairs((x, y), 0.5)
  assert sorted(chosen) == list(range(0, 40, 2))
  assert len(mlp.worst_pairs((x, y), 0.6)) == 24
  config = _config(negatives="worst", worst_fraction=0.5)
  train, held = mlp.split((x[1::2], y[1::2]), config, noisy=(x, y))
  assert len(train.label) + len(held.label) == 40
  assert sum(train.label) + sum(held.label) == 20
  negatives = np.concatenate([train.src[train.label == 0],
                              held.src[held.label == 0]])
  assert sorted(map(tuple, negatives)) == sorted(map(tuple, x[::2]))
  model, _, _ = _train(tmp_path / "w", (x[1::2], y[1::2]), config,
                       noisy=(x, y))
  assert model.dim == 8


def test_bands_are_the_last_lines_of_each_top_cut():
  """Kim et al.'s x%-worst: sorted best first, cut after the top x %, the
  last N lines of the cut; 100 % is the N worst of all."""
  scores = np.arange(100, 0, -1, dtype=np.float32)  # line i ranks i-th
  rng = np.random.default_rng(0)
  order = rng.permutation(100)
  shuffled = scores[order]  # line order[i] of the sorted corpus is row i
  for cut, want in ((0.2, range(10, 20)), (0.6, range(50, 60)),
                    (1.0, range(90, 100))):
    rows = mlp.band(shuffled, cut, 10)
    assert list(scores[order][rows]) == list(scores[list(want)])
  assert len(mlp.band(shuffled, 0.05, 10)) == 5  # the whole cut
  with pytest.raises(errors.ConfigError, match="band_cut"):
    mlp.band(shuffled, 0.0, 10)


def test_band_and_random_negatives_come_from_the_noisy_corpus():
  rng = np.random.default_rng(5)
  x = rng.normal(size=(50, 8)).astype(np.float32)
  y = x + np.linspace(0, 3, 50, dtype=np.float32)[:, None] * rng.normal(
      size=(50, 8)).astype(np.float32)  # row i noisier with i
  positives = (x[:6], y[:6])
  cos = sim.score("cosine", x, y)
  for name, cut in (("band", 0.6), ("band", 1.0), ("random", 0.6)):
    config = _config(negatives=name, band_cut=cut, heldout_fraction=0.0)
    train, _ = mlp.split(positives, config, noisy=(x, y))
    neg = train.src[train.label == 0]
    assert len(neg) == 6  # as many as the positives
    rows = sorted(int(np.flatnonzero((x == r).all(1))[0]) for r in neg)
    if name == "band":
      assert rows == sorted(mlp.band(cos, cut, 6))
    else:
      assert len(set(rows)) == 6
  config = _config(negatives="band", negatives_count=4, heldout_fraction=0.0)
  train, _ = mlp.split(positives, config, noisy=(x, y))
  assert int((train.label == 0).sum()) == 4
  with pytest.raises(errors.ConfigError, match="noisy"):
    mlp.split(positives, _config(negatives="random"))


def test_loading_an_mlp_builds_no_optimizer(tmp_path, forbid):
  """Scoring needs the head and its parameters, restored alone: no
  training recipe, no optimizer is built."""
  x, y = _pairs(m=30)
  mlp.train((x, y), _config(), str(tmp_path / "w"))
  forbid("an optimizer was built to score", (mlp.optax, "adam"),
         (mlp, "MLPSimilarityRecipe"))
  model, step = mlp.load_for_inference(str(tmp_path / "w"))
  scores = sim.score("mlp", x, y, model=model)
  assert step > 0 and np.all(np.isfinite(scores))


def test_mlp_workdir_is_checked(tmp_path):
  other = tmp_path / "other"
  workdir_lib.save_config(str(other), mlp.default_config(
      recipe="bilingual"))
  with pytest.raises(errors.ConfigError, match="holds a 'bilingual' model"):
    mlp.load_for_inference(str(other))
  with pytest.raises(errors.NoCheckpointError):
    mlp.load_for_inference(str(tmp_path / "missing"))


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
    mlp.split((x, x), _config(negatives="worst"))
  with pytest.raises(errors.ConfigError, match="unknown negatives"):
    mlp.check(_config(negatives="hard"))
  nan = x.copy()
  nan[3, 0] = np.nan
  with pytest.raises(errors.DataError, match="row"):
    sim.score("cosine", nan, x)


def test_a_workdir_of_random_pairs_of_positives_reads_as_shuffled():
  saved = {"recipe": "mlp_similarity", "negatives": "random",
           "worst_fraction": 0.6, workdir_lib.VERSION_KEY: 10}
  now = workdir_lib.upgrade(saved)
  assert (now["negatives"], now["band_cut"], now["negatives_count"]) == (
      "shuffled", 0.6, 0)
