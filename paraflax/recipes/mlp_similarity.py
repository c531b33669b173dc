"""The MLP similarity of a bilingual workdir (Kim et al. 2019) on the one
train loop: a classifier on [source; target] embeddings, parallel pairs
against negatives from a noisy corpus (`NEGATIVES`):

  band      the paper's "x%-worst": the noisy corpus sorted by cosine, cut
            after its top-scored x % (`band_cut`), the last N lines of that
            cut (N = `negatives_count`, 0: as many as the positives, at most
            the cut); x = 100 % is the N worst lines of all.
  random    the paper's "random": N lines of the noisy corpus, unscored.
  worst     the whole bottom x % by cosine (`worst_fraction`; the default).
  shuffled  the positives re-paired at random (no noisy corpus).

The examples are embedded once, up front; the loop then trains on batches
of them, evaluates the held-out loss, and keeps the latest and the best
(lowest held-out loss) state as orbax checkpoints. Config:
configs/mlp_similarity.py; `train` adds the keys the examples decide.
"""
from __future__ import annotations

import math
import pathlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from paraflax import config as config_lib
from paraflax import errors
from paraflax.data import batching
from paraflax.evaluation import paracrawl
from paraflax.mining import knn
from paraflax.mining import similarity
from paraflax.models import heads
from paraflax.recipes import workdir as workdir_lib
from paraflax.training import checkpointing
from paraflax.training import loop

RECIPE = "mlp_similarity"
CONFIG = pathlib.Path(__file__).resolve().parents[2] / "configs" / \
    "mlp_similarity.py"
# The loop keeps the checkpoint with the highest value of its select
# metric; the negated loss (as scikit-learn's "neg_log_loss") puts the
# lowest loss there.
SELECT = "heldout/neg_loss"

Embed = Callable[[Sequence[str], str], np.ndarray]  # (texts, lang) -> [N, d]
Pairs = tuple[np.ndarray, np.ndarray]  # (source [N, d], target [N, d])


def default_config(**values) -> ml_collections.ConfigDict:
  """configs/mlp_similarity.py with `values` for some of its keys."""
  config = config_lib.load_file(str(CONFIG))
  config.update(values)
  return config


def worst_pairs(noisy: Pairs, fraction: float) -> np.ndarray:
  """Indices of the round(fraction * N) lowest-cosine noisy pairs."""
  if not 0 < fraction <= 1:
    raise errors.ConfigError(f"worst_fraction={fraction}; use 0 < x <= 1.")
  cos_N = similarity.score("cosine", *noisy)
  count = max(1, round(fraction * len(cos_N)))
  return np.argsort(cos_N, kind="stable")[:count]


def band(scores_N: np.ndarray, cut: float, count: int) -> np.ndarray:
  """Kim et al.'s "x%-worst" lines: sorted best first, the corpus is cut
  after its top round(cut * N) lines and the last `count` lines of that cut
  are taken (all of the cut when it is shorter), best first."""
  if not 0 < cut <= 1:
    raise errors.ConfigError(f"band_cut={cut}; use 0 < x <= 1.")
  if count < 1:
    raise errors.ConfigError(f"a band of {count} lines; use >= 1.")
  best_first = np.argsort(-np.asarray(scores_N), kind="stable")
  end = max(1, round(cut * len(best_first)))
  return best_first[max(0, end - count):end]


def _count(positives: Pairs, config: ml_collections.ConfigDict) -> int:
  return int(config.negatives_count) or len(positives[0])


def _need_noisy(noisy: Pairs | None, name: str) -> Pairs:
  if noisy is None:
    raise errors.ConfigError(
        f'negatives="{name}" takes them from a noisy corpus; pass its '
        'embeddings (noisy=...) or use negatives="shuffled".')
  return noisy


def _worst_negatives(positives: Pairs, noisy: Pairs | None,
                     config: ml_collections.ConfigDict,
                     rng: np.random.Generator) -> Pairs:
  del positives, rng  # The noisy corpus alone decides.
  noisy = _need_noisy(noisy, "worst")
  chosen = worst_pairs(noisy, config.worst_fraction)
  return noisy[0][chosen], noisy[1][chosen]


def _band_negatives(positives: Pairs, noisy: Pairs | None,
                    config: ml_collections.ConfigDict,
                    rng: np.random.Generator) -> Pairs:
  del rng
  noisy = _need_noisy(noisy, "band")
  chosen = band(similarity.score("cosine", *noisy), config.band_cut,
                _count(positives, config))
  return noisy[0][chosen], noisy[1][chosen]


def _random_negatives(positives: Pairs, noisy: Pairs | None,
                      config: ml_collections.ConfigDict,
                      rng: np.random.Generator) -> Pairs:
  noisy = _need_noisy(noisy, "random")
  count = min(_count(positives, config), len(noisy[0]))
  chosen = np.sort(rng.choice(len(noisy[0]), count, replace=False))
  return noisy[0][chosen], noisy[1][chosen]


def _shuffled_negatives(positives: Pairs, noisy: Pairs | None,
                        config: ml_collections.ConfigDict,
                        rng: np.random.Generator) -> Pairs:
  del noisy, config
  # A random cycle: source order[i] meets the target of order[i + 1], so no
  # source meets its own translation.
  order = rng.permutation(len(positives[0]))
  return positives[0][order], positives[1][np.roll(order, -1)]


NEGATIVES: dict[str, Callable[..., Pairs]] = {
    "worst": _worst_negatives,
    "band": _band_negatives,
    "random": _random_negatives,
    "shuffled": _shuffled_negatives,
}


class Examples(NamedTuple):
  src: np.ndarray
  tgt: np.ndarray
  label: np.ndarray  # 1.0 parallel, 0.0 negative
  weight: np.ndarray

  def take(self, index: np.ndarray) -> Examples:
    return Examples(*(a[index] for a in self))

  def batch(self, index: np.ndarray, size: int) -> dict[str, np.ndarray]:
    """Rows `index` as one batch of `size` rows (one compiled step); the
    missing rows are zeros of weight 0."""
    missing = size - len(index)
    return {name: np.concatenate([a[index], np.zeros(
        (missing,) + a.shape[1:], a.dtype)])
            for name, a in self._asdict().items()}


def _examples(positives: Pairs, negatives: Pairs) -> Examples:
  n_pos, n_neg = len(positives[0]), len(negatives[0])
  # Both classes weigh alike in the loss: a 2,000-pair noisy corpus gives
  # ~1,200 negatives against ~25,000 positives.
  weight = np.concatenate([np.full(n_pos, 0.5 / n_pos, np.float32),
                           np.full(n_neg, 0.5 / n_neg, np.float32)])
  return Examples(
      np.concatenate([positives[0], negatives[0]]).astype(np.float32),
      np.concatenate([positives[1], negatives[1]]).astype(np.float32),
      np.concatenate([np.ones(n_pos, np.float32),
                      np.zeros(n_neg, np.float32)]),
      weight * (n_pos + n_neg))


def _check_pairs(pairs: Pairs, what: str) -> Pairs:
  src = knn.as_embeddings(pairs[0], f"{what} source embeddings")
  tgt = knn.as_embeddings(pairs[1], f"{what} target embeddings")
  if src.shape != tgt.shape:
    raise errors.DataError(
        f"{what} source embeddings have shape {src.shape} but target "
        f"embeddings {tgt.shape}; pairs need one row of each, same encoder.")
  return src, tgt


def check(config: ml_collections.ConfigDict, files: bool = True) -> None:
  """`config_check`'s part for this family: known negatives, a held-out
  share in range and positive sizes (`files`: the embeddings are given to
  `train`, not named)."""
  del files
  if config.negatives not in NEGATIVES:
    raise errors.ConfigError(f"unknown negatives {config.negatives!r}; use "
                             f"one of {sorted(NEGATIVES)}.")
  if not 0 <= config.heldout_fraction < 1:
    raise errors.ConfigError(f"heldout_fraction={config.heldout_fraction}; "
                             "use 0 <= x < 1 (0: keep the last state).")
  if min(config.hidden, config.layers, config.batch_size, config.epochs) < 1:
    raise errors.ConfigError("hidden, layers, batch_size and epochs must be "
                             "positive.")


def split(positives: Pairs, config: ml_collections.ConfigDict,
          noisy: Pairs | None = None) -> tuple[Examples, Examples]:
  """(train, held-out) examples: the positives, negatives as the config
  says, shuffled by the seed; `heldout_fraction` of them held out."""
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
  return data.take(order[n_held:]), data.take(order[:n_held])


def resolve(config: ml_collections.ConfigDict, train: Examples
            ) -> ml_collections.ConfigDict:
  """The config with what the examples decide: `dim` (embedding size per
  side) and `train_steps` (epochs x batches per epoch)."""
  resolved = ml_collections.ConfigDict(config.to_dict())
  resolved.dim = int(train.src.shape[1])
  resolved.train_steps = config.epochs * math.ceil(
      len(train.label) / config.batch_size)
  resolved.lock()
  return resolved


def init_params(head: heads.MLPHead, dim: int, key: jax.Array) -> Any:
  return head.init(key, jnp.zeros((1, dim)), jnp.zeros((1, dim)))


def updates_per_call(config: ml_collections.ConfigDict) -> int:
  del config  # one update per batch of examples
  return MLPSimilarityRecipe.updates_per_call


class MLPSimilarityRecipe:
  """Head, loss, batches and held-out loss for the train loop; built from a
  resolved config (`resolve`), with examples to train, without to load."""

  updates_per_call = 1
  batch_axis = 0
  local_batches = False

  def __init__(self, config: ml_collections.ConfigDict,
               train: Examples | None = None, held: Examples | None = None):
    self.config = config
    self.head = heads.MLPHead(config.hidden, config.layers)
    self.tx = optax.adam(config.learning_rate)
    self.train_set, self.held = train, held
    self.select_metric = SELECT if held is not None and len(held.label) \
        else None
    self._loss_sums = jax.jit(self._sums)

  def init_state(self, key: jax.Array) -> dict[str, Any]:
    params = init_params(self.head, self.config.dim, key)
    return {"step": jnp.zeros((), jnp.int32), "params": params,
            "opt": self.tx.init(params)}

  def _sums(self, params, batch: dict[str, jax.Array]
            ) -> tuple[jax.Array, jax.Array]:
    """(sum of weighted losses, sum of weights): padding rows add 0."""
    logits = self.head.apply(params, batch["src"], batch["tgt"])
    bce = optax.sigmoid_binary_cross_entropy(logits, batch["label"])
    return jnp.sum(bce * batch["weight"]), jnp.sum(batch["weight"])

  def _loss(self, params, batch: dict[str, jax.Array]
            ) -> tuple[jax.Array, None]:
    total, weight = self._sums(params, batch)
    return total / weight, None

  def train_step(self, state, batch: dict[str, jax.Array], key: jax.Array):
    del key  # nothing random in a step
    state, loss, _, grad_norm = loop.gradient_step(self.tx, self._loss, state,
                                                   batch)
    return state, {"loss": loss, "grad_norm": grad_norm}

  def batches(self, start_step: int) -> Iterator[dict[str, np.ndarray]]:
    """Epoch after epoch, each in its own order from (seed, epoch), so a
    resumed run sees the batches an uninterrupted one would."""
    size = self.config.batch_size
    for index in batching.epoch_indices(len(self.train_set.label), size,
                                        self.config.seed, start_step):
      yield self.train_set.batch(index, size)

  def evaluate(self, params: Any) -> dict[str, float]:
    if self.select_metric is None:
      return {}
    size, n = self.config.batch_size, len(self.held.label)
    sums = [self._loss_sums(params, self.held.batch(np.arange(
        start, min(start + size, n)), size)) for start in range(0, n, size)]
    total, weight = np.sum(jax.device_get(sums), axis=0)
    loss = float(total / weight)
    return {"heldout/loss": loss, SELECT: -loss}


def train(positives: Pairs, config: ml_collections.ConfigDict, workdir: str,
          *, noisy: Pairs | None = None) -> list[dict[str, float]]:
  """Trains (or resumes) the MLP similarity in `workdir` with the one train
  loop; the same inputs and config give the same parameters on the same
  hardware.

  Args:
    positives: (source, target) embeddings of parallel pairs.
    config: configs/mlp_similarity.py's keys, as `config_check.check`
      passed them.
    workdir: gets config.json (resolved), checkpoints/ (latest), best/
      (lowest held-out loss; none when nothing is held out) and metrics.
    noisy: (source, target) embeddings of a noisy corpus, for negatives
      "worst", "band" and "random" (its labels, if any, are not used).

  Returns:
    {step, heldout/loss, ...} per evaluation.
  """
  train_set, held = split(positives, config, noisy)
  config = resolve(config, train_set)
  workdir_lib.check_same_experiment(workdir, config)
  workdir_lib.save_config(workdir, config)
  evals = []
  loop.train(MLPSimilarityRecipe(config, train_set, held), config, workdir,
             on_eval=lambda step, values: evals.append(
                 {"step": step, **values}))
  return evals


def train_for_language(embed: Embed, lang: str,
                       config: ml_collections.ConfigDict, workdir: str
                       ) -> list[dict[str, float]]:
  """`train` on the MLP similarity of `lang`-English.

  Positives: `config.positives`, a data spec; by default, for de, fr and
  cs, `newstest_train_pool` (corpus bitext_newstest_pool_{lang}_en).
  Noisy corpus (negatives worst, band, random): `config.noisy`; by default
  the ParaCrawl v3 sample's text, labels unused.
  """
  from paraflax.data import specs  # pylint: disable=g-import-not-at-top
  if not (config.positives and config.noisy) and lang not in paracrawl.LANGS:
    raise errors.ConfigError(
        f"no bundled bitext to train the MLP similarity of {lang}-en on: "
        "name the positives and the noisy corpus, --config.positives=SPEC "
        "--config.noisy=SPEC (docs/your-data.md).")
  positives = specs.pairs(config.positives or
                          f"bitext_newstest_pool_{lang}_en")
  if config.noisy:
    noisy = specs.pairs(config.noisy)
  else:
    sample = paracrawl.load("v3", lang)
    noisy = list(zip(sample.source, sample.target))
  return train(
      (embed([x for x, _ in positives], lang),
       embed([e for _, e in positives], "en")), config, workdir,
      noisy=(embed([x for x, _ in noisy], lang),
             embed([e for _, e in noisy], "en")))


def load_for_inference(workdir: str
                       ) -> tuple[similarity.MLPSimilarity, int]:
  """The best (else newest) MLP of a workdir `train` wrote, and its step:
  the head and its parameters alone, no recipe, no optimizer."""
  config = workdir_lib.load_config(workdir, RECIPE)
  head = heads.MLPHead(config.hidden, config.layers)
  params, step = checkpointing.restore_params_only(
      workdir, lambda key: init_params(head, config.dim, key))
  # Restored onto one device; uncommitted copies go wherever scoring puts
  # the embeddings (split over a mesh).
  params = jax.tree.map(jnp.asarray, jax.device_get(params))
  return similarity.MLPSimilarity(head, params, config.dim), step
