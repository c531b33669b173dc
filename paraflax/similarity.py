"""Similarities between bilingual sentence embeddings (Kim et al. 2019).

  cosine     cos(x, y).
  euclidean  -||x - y|| on the raw (unnormalised) vectors. On normalised
             vectors it would be -sqrt(2 - 2 cos(x, y)), a monotone function
             of cosine that ranks every pair alike, so it would add nothing;
             the raw vectors let the norms count, as in the paper, where
             Euclidean and cosine results differ.
  csls       2 cos(x, y) - r_y(x) - r_x(y) (Conneau et al. 2018): r_y(x) is
             the mean cosine of x to its k nearest rows of y, r_x(y) that of
             y to its k nearest rows of x, both over the whole sets passed in
             (exact k-NN by `paraflax.mining.knn`).
  mlp        a classifier on [x; y] (2 hidden ReLU layers of 512, sigmoid
             output) trained on parallel positives against negatives: the
             x%-worst cosine-scored pairs of a noisy corpus, or random pairs.
             The score is the logit: sigmoid(score) is the probability of
             "parallel", which ranks alike but saturates to exactly 1.0 in
             float32 and would turn confident pairs into ties. The input
             order [source; target] matters: mlp(x, y) != mlp(y, x).

x is always the source side (the non-English sentences) and y the target
side (English). `score` scores aligned rows (pair i = x_i, y_i), split over
the devices of a `data` mesh; `nearest` retrieves for every row its best
match on the other side, computing the [Nx, Ny] score matrix one block of
source rows at a time.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import serialization
from jax import lax
from jax.sharding import Mesh

from paraflax import errors
from paraflax import files
from paraflax import losses
from paraflax.mining import knn
from paraflax.training import partitioning

Features = tuple[jax.Array, ...]  # per-row arrays, rows on the first axis


class Prepared(NamedTuple):
  """Per-row features of both sides and how to score them. Prepared over a
  mesh, each side has zero rows appended up to a multiple of its size."""
  src: Features
  tgt: Features
  pairs: Callable[[Features, Features], jax.Array]  # row i with row i: [N]
  grid: Callable[[Features, Features], jax.Array]  # all with all: [Bx, Ny]


def _rows(a: np.ndarray, mesh: Mesh | None) -> jax.Array:
  """Host rows on the devices: whole on the default device (mesh None), or
  split over `data`, padded with zero rows to divide evenly."""
  if mesh is None:
    return jnp.asarray(a)
  missing = -len(a) % mesh.size
  if missing:
    a = np.concatenate([a, np.zeros((missing,) + a.shape[1:], a.dtype)])
  return jax.device_put(a, partitioning.batch_sharding(mesh, 0))


def _dot_grid(a_BxD: jax.Array, b_NxD: jax.Array) -> jax.Array:
  # HIGHEST: no TF32 / bf16 passes on accelerators, so that near ties are
  # ordered as in float32 arithmetic.
  return jnp.einsum("bd,nd->bn", a_BxD, b_NxD,
                    precision=lax.Precision.HIGHEST)


# --- cosine -----------------------------------------------------------------


def _cosine_pairs(src: Features, tgt: Features) -> jax.Array:
  return jnp.sum(src[0] * tgt[0], axis=-1)


def _cosine_grid(src: Features, tgt: Features) -> jax.Array:
  return _dot_grid(src[0], tgt[0])


def _cosine(x: np.ndarray, y: np.ndarray, mesh: Mesh | None) -> Prepared:
  return Prepared((losses.normalize(_rows(x, mesh)),),
                  (losses.normalize(_rows(y, mesh)),),
                  _cosine_pairs, _cosine_grid)


# --- euclidean --------------------------------------------------------------


def _euclidean_pairs(src: Features, tgt: Features) -> jax.Array:
  return -jnp.sqrt(jnp.sum(jnp.square(src[0] - tgt[0]), axis=-1))


def _euclidean_grid(src: Features, tgt: Features) -> jax.Array:
  # ||x - y||^2 = |x|^2 + |y|^2 - 2 x.y; rounding can make it slightly
  # negative for near-identical rows.
  sq_BxN = src[1][:, None] + tgt[1][None, :] - 2 * _dot_grid(src[0], tgt[0])
  return -jnp.sqrt(jnp.maximum(sq_BxN, 0.0))


def _euclidean(x: np.ndarray, y: np.ndarray, mesh: Mesh | None
               ) -> Prepared:
  x, y = _rows(x, mesh), _rows(y, mesh)
  return Prepared((x, jnp.sum(jnp.square(x), axis=-1)),
                  (y, jnp.sum(jnp.square(y), axis=-1)),
                  _euclidean_pairs, _euclidean_grid)


# --- CSLS -------------------------------------------------------------------


def neighbourhood_means(x: np.ndarray, y: np.ndarray, k: int,
                        mesh: Mesh | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
  """r_y(x) [Nx]: mean cosine of each x to its k nearest y; r_x(y) [Ny].
  The search runs over `mesh` (default: every device)."""
  sims_x, _ = knn.knn(x, y, k, mesh=mesh, names=("source embeddings",
                                                 "target embeddings"))
  sims_y, _ = knn.knn(y, x, k, mesh=mesh, names=("target embeddings",
                                                 "source embeddings"))
  return sims_x.mean(axis=1), sims_y.mean(axis=1)


def _csls_pairs(src: Features, tgt: Features) -> jax.Array:
  return 2 * jnp.sum(src[0] * tgt[0], axis=-1) - src[1] - tgt[1]


def _csls_grid(src: Features, tgt: Features) -> jax.Array:
  return (2 * _dot_grid(src[0], tgt[0]) - src[1][:, None]
          - tgt[1][None, :])


def _csls(x: np.ndarray, y: np.ndarray, mesh: Mesh | None, *, k: int = 10
          ) -> Prepared:
  # The neighbourhoods come from the real rows only: padding rows are added
  # after the search.
  r_x, r_y = neighbourhood_means(x, y, k, mesh)
  return Prepared((losses.normalize(_rows(x, mesh)), _rows(r_x, mesh)),
                  (losses.normalize(_rows(y, mesh)), _rows(r_y, mesh)),
                  _csls_pairs, _csls_grid)


# --- MLP --------------------------------------------------------------------


class MLPHead(nn.Module):
  """Logit of "x and y are translations" from [x; y].

  The first layer W [x; y] + b is held as W_src x + b and W_tgt y (the same
  function), so that a grid of pairs projects each row once and only the
  later layers run per pair.
  """
  hidden: int = 512
  layers: int = 2

  def setup(self):
    self.src_in = nn.Dense(self.hidden)
    self.tgt_in = nn.Dense(self.hidden, use_bias=False)
    self.deeper = [nn.Dense(self.hidden) for _ in range(self.layers - 1)]
    self.out = nn.Dense(1)

  def project_src(self, x_NxD: jax.Array) -> jax.Array:
    return self.src_in(x_NxD)

  def project_tgt(self, y_NxD: jax.Array) -> jax.Array:
    return self.tgt_in(y_NxD)

  def tail(self, h_NxH: jax.Array) -> jax.Array:
    """Logits from first-layer pre-activations (any leading shape)."""
    h_NxH = nn.relu(h_NxH)
    for dense in self.deeper:
      h_NxH = nn.relu(dense(h_NxH))
    return self.out(h_NxH)[..., 0]

  def __call__(self, x_NxD: jax.Array, y_NxD: jax.Array) -> jax.Array:
    return self.tail(self.project_src(x_NxD) + self.project_tgt(y_NxD))


@dataclasses.dataclass(frozen=True)
class MLPSimilarity:
  """A trained MLP head and the embedding dimension it takes per side."""
  head: MLPHead
  params: Any
  dim: int


@functools.partial(jax.jit, static_argnums=(0, 1))
def _mlp_project(head: MLPHead, method: str, params, x_NxD) -> jax.Array:
  return head.apply(params, x_NxD, method=method)


@functools.partial(jax.jit, static_argnums=0)
def _mlp_tail(head: MLPHead, params, h) -> jax.Array:
  return head.apply(params, h, method="tail")


def _mlp_pairs(model: MLPSimilarity, src: Features, tgt: Features
               ) -> jax.Array:
  return _mlp_tail(model.head, model.params, src[0] + tgt[0])


def _mlp_grid(model: MLPSimilarity, src: Features, tgt: Features
              ) -> jax.Array:
  return _mlp_tail(model.head, model.params,
                   src[0][:, None, :] + tgt[0][None, :, :])


def _mlp(x: np.ndarray, y: np.ndarray, mesh: Mesh | None, *,
         model: MLPSimilarity) -> Prepared:
  if x.shape[1] != model.dim:
    raise errors.DataError(
        f"the MLP similarity was trained on {model.dim}-dimensional "
        f"embeddings but these have {x.shape[1]}; use the encoder it was "
        "trained with, or retrain it.")
  return Prepared(
      (_mlp_project(model.head, "project_src", model.params,
                    _rows(x, mesh)),),
      (_mlp_project(model.head, "project_tgt", model.params,
                    _rows(y, mesh)),),
      functools.partial(_mlp_pairs, model),
      functools.partial(_mlp_grid, model))


SIMILARITIES: dict[str, Callable[..., Prepared]] = {
    "cosine": _cosine,
    "euclidean": _euclidean,
    "csls": _csls,
    "mlp": _mlp,
}


# --- Scoring ----------------------------------------------------------------


def prepare(name: str, x, y, *, mesh: Mesh | None = None, **ctx
            ) -> Prepared:
  """Features of source rows `x` [Nx, d] and target rows `y` [Ny, d].

  `ctx` holds what the similarity needs: `k` for csls (default 10), `model`
  (an `MLPSimilarity`) for mlp. With a `mesh`, the rows are split over its
  devices and padded (see `Prepared`); without, they stay whole on the
  default device, as `grid_blocks` needs.
  """
  if name not in SIMILARITIES:
    raise errors.ConfigError(f"unknown similarity {name!r}; use one of "
                             f"{sorted(SIMILARITIES)}.")
  x = knn.as_embeddings(x, "source embeddings")
  y = knn.as_embeddings(y, "target embeddings")
  if x.shape[1] != y.shape[1]:
    raise errors.DataError(
        f"source embeddings have dimension {x.shape[1]} but target "
        f"embeddings {y.shape[1]}; embed both with the same encoder.")
  return SIMILARITIES[name](np.asarray(x, np.float32),
                            np.asarray(y, np.float32), mesh, **ctx)


def score(name: str, x, y, *, mesh: Mesh | None = None, **ctx
          ) -> np.ndarray:
  """[N] float32 similarity of each aligned pair (x_i, y_i); the pairs are
  split over the devices of `mesh` (default: every device)."""
  if len(x) != len(y):
    raise errors.DataError(
        f"{len(x)} source but {len(y)} target embeddings; pairs need one "
        "of each per row.")
  mesh = partitioning.make_mesh(-1) if mesh is None else mesh
  p = prepare(name, x, y, mesh=mesh, **ctx)
  return np.asarray(p.pairs(p.src, p.tgt), np.float32)[:len(x)]


def grid_blocks(p: Prepared, *, block_pairs: int = 1 << 18
                ) -> Iterator[tuple[int, np.ndarray]]:
  """(start, [B, Ny] scores of source rows start..start+B with every target
  row); a block holds at most max(block_pairs, Ny) scores."""
  n_src, n_tgt = len(p.src[0]), len(p.tgt[0])
  rows = max(1, block_pairs // max(n_tgt, 1))
  for start in range(0, n_src, rows):
    block = jax.tree.map(lambda a: a[start:start + rows], p.src)
    yield start, np.asarray(p.grid(block, p.tgt), np.float32)


def nearest(name: str, x, y, *, block_pairs: int = 1 << 18, **ctx
            ) -> tuple[np.ndarray, np.ndarray]:
  """For each x_i the index of its best y, and for each y_j its best x.

  Both directions come from one pass over the score matrix, one block of
  source rows at a time; the scores are always sim(x, y), so an asymmetric
  similarity (mlp) keeps its [source; target] order. Equal scores go to the
  lower index. A block holds about `block_pairs` scores (the MLP also two
  [block_pairs, hidden] float32 activations, 1 GiB at the defaults).
  """
  p = prepare(name, x, y, **ctx)
  src2tgt = np.zeros(len(p.src[0]), np.int64)
  best_src = np.zeros(len(p.tgt[0]), np.int64)
  best_score = np.full(len(p.tgt[0]), -np.inf, np.float32)
  for start, block_BxN in grid_blocks(p, block_pairs=block_pairs):
    src2tgt[start:start + len(block_BxN)] = np.argmax(block_BxN, axis=1)
    rows_N = np.argmax(block_BxN, axis=0)
    top_N = block_BxN[rows_N, np.arange(block_BxN.shape[1])]
    # Strictly greater: an earlier block (lower index) keeps a tie.
    better = top_N > best_score
    best_src[better] = start + rows_N[better]
    best_score[better] = top_N[better]
  return src2tgt, best_src


# --- MLP training -----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class MLPConfig:
  """How the MLP similarity is trained.

  negatives: "worst" (the `worst_fraction` lowest-cosine pairs of the noisy
  corpus; the paper found 60% best, with random pairs as good) or "random"
  (each positive source with another positive's target).
  heldout_fraction: share of the examples held out; after each epoch the
  held-out loss picks the best epoch and `patience` epochs without
  improvement stop training. 0 trains for exactly `epochs` epochs.
  """
  hidden: int = 512
  layers: int = 2
  negatives: str = "worst"
  worst_fraction: float = 0.6
  batch_size: int = 128
  learning_rate: float = 1e-3
  epochs: int = 10
  heldout_fraction: float = 0.1
  patience: int = 2
  seed: int = 0


Pairs = tuple[np.ndarray, np.ndarray]  # (source [N, d], target [N, d])


def worst_pairs(noisy: Pairs, fraction: float) -> np.ndarray:
  """Indices of the round(fraction * N) lowest-cosine noisy pairs."""
  if not 0 < fraction <= 1:
    raise errors.ConfigError(f"worst_fraction={fraction}; use 0 < x <= 1.")
  cos_N = score("cosine", *noisy)
  count = max(1, round(fraction * len(cos_N)))
  return np.argsort(cos_N, kind="stable")[:count]


def _worst_negatives(positives: Pairs, noisy: Pairs | None,
                     config: MLPConfig, rng: np.random.Generator) -> Pairs:
  del positives, rng  # The noisy corpus alone decides.
  if noisy is None:
    raise errors.ConfigError(
        'negatives="worst" takes them from a noisy corpus; pass its '
        'embeddings (noisy=...) or use negatives="random".')
  chosen = worst_pairs(noisy, config.worst_fraction)
  return noisy[0][chosen], noisy[1][chosen]


def _random_negatives(positives: Pairs, noisy: Pairs | None,
                      config: MLPConfig, rng: np.random.Generator) -> Pairs:
  del noisy, config
  # A random cycle: source order[i] meets the target of order[i + 1], so no
  # source meets its own translation.
  order = rng.permutation(len(positives[0]))
  return positives[0][order], positives[1][np.roll(order, -1)]


NEGATIVES: dict[str, Callable[..., Pairs]] = {
    "worst": _worst_negatives,
    "random": _random_negatives,
}


class _Examples(NamedTuple):
  src: np.ndarray
  tgt: np.ndarray
  label: np.ndarray  # 1.0 parallel, 0.0 negative
  weight: np.ndarray

  def take(self, index: np.ndarray) -> _Examples:
    return _Examples(*(a[index] for a in self))


def _examples(positives: Pairs, negatives: Pairs) -> _Examples:
  n_pos, n_neg = len(positives[0]), len(negatives[0])
  # Both classes weigh alike in the loss: a 2,000-pair noisy corpus gives
  # ~1,200 negatives against ~25,000 positives.
  weight = np.concatenate([np.full(n_pos, 0.5 / n_pos, np.float32),
                           np.full(n_neg, 0.5 / n_neg, np.float32)])
  return _Examples(
      np.concatenate([positives[0], negatives[0]]).astype(np.float32),
      np.concatenate([positives[1], negatives[1]]).astype(np.float32),
      np.concatenate([np.ones(n_pos, np.float32),
                      np.zeros(n_neg, np.float32)]),
      weight * (n_pos + n_neg))


def _batches(data: _Examples, size: int) -> Iterator[_Examples]:
  """Fixed-size batches (one compiled step); the last is padded with rows of
  weight 0."""
  for start in range(0, len(data.label), size):
    batch = data.take(np.arange(start, min(start + size, len(data.label))))
    missing = size - len(batch.label)
    yield _Examples(*(np.concatenate([a, np.zeros((missing,) + a.shape[1:],
                                                  a.dtype)])
                      for a in batch))


def _check_pairs(pairs: Pairs, what: str) -> Pairs:
  src = knn.as_embeddings(pairs[0], f"{what} source embeddings")
  tgt = knn.as_embeddings(pairs[1], f"{what} target embeddings")
  if src.shape != tgt.shape:
    raise errors.DataError(
        f"{what} source embeddings have shape {src.shape} but target "
        f"embeddings {tgt.shape}; pairs need one row of each, same encoder.")
  return src, tgt


def _check_config(config: MLPConfig) -> None:
  if config.negatives not in NEGATIVES:
    raise errors.ConfigError(f"unknown negatives {config.negatives!r}; use "
                             f"one of {sorted(NEGATIVES)}.")
  if not 0 <= config.heldout_fraction < 1:
    raise errors.ConfigError(f"heldout_fraction={config.heldout_fraction}; "
                             "use 0 <= x < 1 (0: fixed epochs).")
  if min(config.hidden, config.layers, config.batch_size, config.epochs) < 1:
    raise errors.ConfigError("hidden, layers, batch_size and epochs must be "
                             "positive.")


def train_mlp(positives: Pairs, config: MLPConfig = MLPConfig(), *,
              noisy: Pairs | None = None
              ) -> tuple[MLPSimilarity, list[dict[str, float]]]:
  """Trains the MLP similarity with Adam; the same inputs and config give
  the same parameters on the same hardware.

  Args:
    positives: (source, target) embeddings of parallel pairs.
    config: see `MLPConfig`.
    noisy: (source, target) embeddings of a noisy corpus, for
      negatives="worst" (its labels, if any, are not used).

  Returns:
    The model (parameters of the best held-out epoch, or of the last epoch
    when nothing is held out) and one {epoch, train_loss[, heldout_loss]}
    per epoch run.
  """
  _check_config(config)
  positives = _check_pairs(positives, "positive")
  if noisy is not None:
    noisy = _check_pairs(noisy, "noisy")
    if noisy[0].shape[1] != positives[0].shape[1]:
      raise errors.DataError("noisy and positive embeddings differ in "
                             "dimension; embed both with the same encoder.")
  rng = np.random.default_rng(config.seed)
  negatives = NEGATIVES[config.negatives](positives, noisy, config, rng)
  data = _examples(positives, negatives)
  order = rng.permutation(len(data.label))
  n_held = math.ceil(config.heldout_fraction * len(order))
  if n_held >= len(order):
    raise errors.ConfigError(f"heldout_fraction={config.heldout_fraction} "
                             f"of {len(order)} examples leaves none to train "
                             "on; lower it.")
  held, train = data.take(order[:n_held]), data.take(order[n_held:])
  dim = positives[0].shape[1]
  head = MLPHead(config.hidden, config.layers)
  params = head.init(jax.random.PRNGKey(config.seed),
                     jnp.zeros((1, dim)), jnp.zeros((1, dim)))
  tx = optax.adam(config.learning_rate)

  def loss_sums(p, batch: _Examples) -> tuple[jax.Array, jax.Array]:
    logits = head.apply(p, batch.src, batch.tgt)
    bce = optax.sigmoid_binary_cross_entropy(logits, batch.label)
    return jnp.sum(bce * batch.weight), jnp.sum(batch.weight)

  @jax.jit
  def step(p, opt_state, batch: _Examples):
    def mean_loss(p):
      total, weight = loss_sums(p, batch)
      return total / weight, (total, weight)
    (_, sums), grads = jax.value_and_grad(mean_loss, has_aux=True)(p)
    updates, opt_state = tx.update(grads, opt_state, p)
    return optax.apply_updates(p, updates), opt_state, sums

  heldout_sums = jax.jit(loss_sums)
  opt_state = tx.init(params)
  best, best_loss, stale, history = params, math.inf, 0, []
  for epoch in range(1, config.epochs + 1):
    sums = []
    for batch in _batches(train.take(rng.permutation(len(train.label))),
                          config.batch_size):
      params, opt_state, batch_sums = step(params, opt_state, batch)
      sums.append(batch_sums)
    history.append({"epoch": epoch, "train_loss": _mean(sums)})
    if not n_held:
      best = params
      continue
    loss = _mean([heldout_sums(params, b)
                  for b in _batches(held, config.batch_size)])
    history[-1]["heldout_loss"] = loss
    if loss < best_loss:
      best, best_loss, stale = params, loss, 0
    else:
      stale += 1
      if stale >= config.patience:
        break
  return MLPSimilarity(head, best, dim), history


def _mean(sums: list[tuple[jax.Array, jax.Array]]) -> float:
  """The weighted mean loss from per-batch (loss sum, weight sum)."""
  total, weight = np.sum(jax.device_get(sums), axis=0)
  return float(total / weight)


# --- MLP files --------------------------------------------------------------

_FORMAT = "paraflax-mlp-similarity-v1"


def save_mlp(model: MLPSimilarity, path) -> None:
  """msgpack of the sizes and parameters, written atomically."""
  state = {"format": _FORMAT, "dim": model.dim, "hidden": model.head.hidden,
           "layers": model.head.layers,
           "params": serialization.to_state_dict(
               jax.device_get(model.params))}
  with files.atomic_output(path) as f:
    f.write(serialization.msgpack_serialize(state))


def load_mlp(path) -> MLPSimilarity:
  """A model written by `save_mlp`; anything else is a DataError."""
  try:
    with open(path, "rb") as f:
      state = serialization.msgpack_restore(f.read())
  except FileNotFoundError as e:
    raise errors.DataError(f"{path}: no such MLP similarity file; train one "
                           "first (train_mlp + save_mlp).") from e
  except ValueError as e:  # msgpack's errors derive from ValueError
    raise errors.DataError(f"{path}: not a msgpack file ({e}).") from e
  if not isinstance(state, dict) or state.get("format") != _FORMAT:
    raise errors.DataError(f"{path}: not an MLP similarity file (expected "
                           f"format {_FORMAT!r}).")
  try:
    head = MLPHead(int(state["hidden"]), int(state["layers"]))
    dim = int(state["dim"])
    template = jax.eval_shape(head.init, jax.random.PRNGKey(0),
                              jnp.zeros((1, dim)), jnp.zeros((1, dim)))
    params = serialization.from_state_dict(template, state["params"])
    same = (jax.tree.structure(params) == jax.tree.structure(template)
            and all(np.shape(a) == b.shape for a, b in zip(
                jax.tree.leaves(params), jax.tree.leaves(template))))
  except (KeyError, TypeError, ValueError) as e:
    raise errors.DataError(f"{path}: damaged MLP similarity file ({e!r}); "
                           "save it again.") from e
  if not same:
    raise errors.DataError(f"{path}: parameter shapes do not match its sizes "
                           f"(dim {dim}, hidden {head.hidden}, layers "
                           f"{head.layers}); save it again.")
  return MLPSimilarity(head, jax.tree.map(jnp.asarray, params), dim)
