"""Training the MLP similarity of a bilingual workdir (Kim et al. 2019):
a classifier on [source; target] embeddings, parallel pairs against the
x%-worst cosine-scored pairs of a noisy corpus or random pairs."""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import serialization

from paraflax import errors
from paraflax import files
from paraflax.data import corpora
from paraflax.evaluation import paracrawl
from paraflax.mining import knn
from paraflax.mining import similarity
from paraflax.models import heads

Embed = Callable[[Sequence[str], str], np.ndarray]  # (texts, lang) -> [N, d]


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
  cos_N = similarity.score("cosine", *noisy)
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
              ) -> tuple[similarity.MLPSimilarity, list[dict[str, float]]]:
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
  head = heads.MLPHead(config.hidden, config.layers)
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
  return similarity.MLPSimilarity(head, best, dim), history


def _mean(sums: list[tuple[jax.Array, jax.Array]]) -> float:
  """The weighted mean loss from per-batch (loss sum, weight sum)."""
  total, weight = np.sum(jax.device_get(sums), axis=0)
  return float(total / weight)


# --- Files --------------------------------------------------------------

_FORMAT = "paraflax-mlp-similarity-v1"


def save_mlp(model: similarity.MLPSimilarity, path) -> None:
  """msgpack of the sizes and parameters, written atomically."""
  state = {"format": _FORMAT, "dim": model.dim, "hidden": model.head.hidden,
           "layers": model.head.layers,
           "params": serialization.to_state_dict(
               jax.device_get(model.params))}
  with files.atomic_output(path) as f:
    f.write(serialization.msgpack_serialize(state))


def load_mlp(path) -> similarity.MLPSimilarity:
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
    head = heads.MLPHead(int(state["hidden"]), int(state["layers"]))
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
  return similarity.MLPSimilarity(head, jax.tree.map(jnp.asarray, params), dim)


def train_for_language(embed: Embed, lang: str,
                       config: MLPConfig = MLPConfig()
                       ) -> tuple[similarity.MLPSimilarity, list[dict]]:
  """The MLP similarity of `lang`-English as the issue sets it up.

  Positives: `newstest_train_pool` (corpus bitext_newstest_pool_{lang}_en).
  Noisy corpus for negatives="worst": the v3 sample's text, labels unused.
  """
  pool = corpora.read(corpora.get(f"bitext_newstest_pool_{lang}_en"), "train")
  noisy = paracrawl.load("v3", lang)
  return train_mlp(
      (embed(pool["source"], lang), embed(pool["target"], "en")), config,
      noisy=(embed(noisy.source, lang), embed(noisy.target, "en")))
