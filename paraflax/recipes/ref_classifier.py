"""The reference-vs-translation classifier of the back-translation paper
(Wieting et al. 2017) on the one train loop: a sentence encoder (Avg or
LSTM-avg over the lowercased word tokens) and a softmax layer tell a human
reference (class 1) from a machine translation (class 0).

Data: a back-translation JSONL with n-best lists (`paraflax backtranslate
--nbest N`), split by id (`data.nbest`). Every train step takes
`batch_size` ids: each reference is a positive, and one translation of its
n-best list the negative, drawn at random or, with `data.negative =
"hardest"`, the one the current parameters find most reference-like (chosen
on device, as the paraphrase recipe chooses its negatives). A translation
that is the reference itself (the same word ids) is never a negative.
Dev and test sentences are every reference and its best-ranked translation
(no copy), so both classes weigh alike in the accuracy.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from jax.sharding import Mesh

from paraflax import errors
from paraflax.data import batching
from paraflax.data import nbest
from paraflax.data import words
from paraflax.evaluation import evaluators
from paraflax.filtering import scores
from paraflax.models import encoders
from paraflax.models import heads
from paraflax.recipes import paraphrase
from paraflax.recipes import workdir as workdir_lib
from paraflax.training import checkpointing
from paraflax.training import loop

RECIPE = "ref_classifier"
NEGATIVES = ("random", "hardest")
_INFER_BATCH = 512


def make_model(config: ml_collections.ConfigDict, vocab_size: int
               ) -> nn.Module:
  kwargs = {k: v for k, v in config.model.items() if k != "name"}
  return heads.RefClassifier(encoders.make(config.model.name, vocab_size,
                                           **kwargs))


class Encoded(NamedTuple):
  """Groups as padded word ids, K = the longest n-best list."""
  ref: np.ndarray  # [N, L]
  ref_len: np.ndarray  # [N]
  cand: np.ndarray  # [N, K, L] the translations
  cand_len: np.ndarray  # [N, K]
  cand_ok: np.ndarray  # [N, K] a translation, and not the reference itself


def encode(groups: Sequence[nbest.Group], vocab: words.WordVocab,
           max_len: int, k: int) -> Encoded:
  ref, ref_len = vocab.encode_batch([g.reference for g in groups], max_len)
  padded = [list(g.translations[:k]) + [""] * (k - len(g.translations[:k]))
            for g in groups]
  cand, cand_len = vocab.encode_batch([t for ts in padded for t in ts],
                                      max_len)
  cand = cand.reshape(len(groups), k, max_len)
  cand_len = cand_len.reshape(len(groups), k)
  real = np.asarray([[j < len(g.translations) for j in range(k)]
                     for g in groups], bool).reshape(len(groups), k)
  copy = (cand_len == ref_len[:, None]) & np.all(cand == ref[:, None], -1)
  return Encoded(ref, ref_len, cand, cand_len, real & ~copy)


def with_negative(groups: Sequence[nbest.Group], what: str
                   ) -> list[nbest.Group]:
  """The groups that have a translation to be a negative; says how many
  have none (every translation a copy of the reference)."""
  kept = [g for g in groups
          if any(words.tokenize(t) != words.tokenize(g.reference)
                 for t in g.translations)]
  if len(kept) < len(groups):
    print(f"{what}: {len(groups) - len(kept)} of {len(groups)} ids have no "
          "translation other than the reference itself; they are left out",
          flush=True)
  return kept


def labelled(groups: Sequence[nbest.Group]) -> tuple[list[str], np.ndarray]:
  """Each reference (1) and its best-ranked translation that is not the
  reference (0), in that order, group after group."""
  texts, labels = [], []
  for g in groups:
    ref = words.tokenize(g.reference)
    texts += [g.reference, next(t for t in g.translations
                                if words.tokenize(t) != ref)]
    labels += [1, 0]
  return texts, np.asarray(labels, np.int32)


class RefProb:
  """p(reference | sentence) of a classifier's parameters, in input order;
  sentences go through in length-sorted batches."""

  def __init__(self, model: nn.Module, vocab: words.WordVocab, max_len: int):
    self.vocab, self.max_len = vocab, max_len
    self._apply = jax.jit(lambda p, i, n: jax.nn.softmax(
        model.apply({"params": p}, i, n))[:, 1])

  def of_ids(self, params: Any, seqs: Sequence[Sequence[int]]) -> np.ndarray:
    seqs = [s[:self.max_len] for s in seqs]
    out = np.zeros((len(seqs),), np.float32)
    for rows, ids, lengths in batching.sorted_batches(seqs, _INFER_BATCH):
      out[rows] = np.asarray(self._apply(params, ids, lengths))[:len(rows)]
    return out

  def of_tokens(self, params: Any, tokens: Sequence[Sequence[str]]
                ) -> np.ndarray:
    """For sentences already tokenised (`words.tokenize`)."""
    ids = [[words.UNK if i is None else i
            for i in map(self.vocab.id_of, sentence)] for sentence in tokens]
    return self.of_ids(params, ids)

  def __call__(self, params: Any, texts: Sequence[str]) -> np.ndarray:
    return self.of_ids(params, [self.vocab.encode(t) for t in texts])


def updates_per_call(config: ml_collections.ConfigDict) -> int:
  del config  # one update per batch of ids
  return 1


def check(config: ml_collections.ConfigDict, files: bool = True) -> None:
  """`config_check`'s part for this family: a known kind of negative and,
  with `files`, data.input given and a file."""
  if config.data.negative not in NEGATIVES:
    raise errors.ConfigError(
        f"data.negative={config.data.negative!r}; use one of "
        f"{', '.join(NEGATIVES)}.")
  if files and not config.data.input:
    raise errors.ConfigError(
        "data.input is not set: give the back-translation JSONL with n-best "
        "lists, --config.data.input=BT.jsonl (from paraflax backtranslate "
        "--nbest 5).")
  if files and not os.path.isfile(config.data.input):
    raise errors.ConfigError(
        f"data.input={config.data.input}: no such file. Give the "
        "back-translation JSONL with n-best lists (paraflax backtranslate "
        "--nbest 5 --output BT.jsonl).")


def init_params(model: nn.Module, key: jax.Array) -> Any:
  return model.init(key, jnp.zeros((1, 8), jnp.int32),
                    jnp.ones((1,), jnp.int32))["params"]


class RefClassifierRecipe:
  """Model, loss, batches and dev accuracy for `paraflax train`; without
  data (`train=None`) for inference."""

  updates_per_call = 1
  batch_axis = 0
  local_batches = False

  def __init__(self, config: ml_collections.ConfigDict,
               vocab: words.WordVocab, train: Encoded | None = None,
               splits: dict[str, list[nbest.Group]] | None = None):
    self.config, self.vocab = config, vocab
    self.model = make_model(config, len(vocab))
    self.tx = optax.adam(config.optimizer.learning_rate)
    self.train_set, self.splits = train, splits or {}
    self.select_metric = config.select
    self.prob = RefProb(self.model, vocab, config.data.max_len)

  def init_state(self, key: jax.Array) -> dict[str, Any]:
    params = init_params(self.model, key)
    return {"step": jnp.zeros((), jnp.int32), "params": params,
            "opt": self.tx.init(params)}

  def _logits(self, params, ids, lengths) -> jax.Array:
    return self.model.apply({"params": params}, ids, lengths)

  def pick_negatives(self, params, batch: dict[str, jax.Array],
                     key: jax.Array) -> jax.Array:
    """[B] index of each id's negative among its candidates."""
    ok_BxK = batch["cand_ok"]
    if self.config.data.negative == "hardest":
      b, k, length = batch["cand"].shape
      logits = self._logits(jax.lax.stop_gradient(params),
                            batch["cand"].reshape(b * k, length),
                            batch["cand_len"].reshape(b * k))
      score_BxK = jax.nn.log_softmax(logits)[:, 1].reshape(b, k)
    else:  # the argmax of i.i.d. Gumbel noise: uniform over the candidates
      score_BxK = jax.random.gumbel(key, ok_BxK.shape)
    return jnp.argmax(jnp.where(ok_BxK, score_BxK, -jnp.inf), axis=1)

  def _loss(self, params, batch: dict[str, jax.Array]):
    # Stacked on a new axis 1 (reference, negative), not concatenated on
    # the batch axis, so that each device keeps its own rows.
    ids_Bx2xL = jnp.stack([batch["ref"], batch["neg"]], 1)
    len_Bx2 = jnp.stack([batch["ref_len"], batch["neg_len"]], 1)
    b, _, length = ids_Bx2xL.shape
    logits_Bx2x2 = self._logits(params, ids_Bx2xL.reshape(2 * b, length),
                                len_Bx2.reshape(2 * b)).reshape(b, 2, 2)
    labels_Bx2 = jnp.broadcast_to(jnp.asarray([1, 0]), (b, 2))
    ce_Bx2 = optax.softmax_cross_entropy_with_integer_labels(logits_Bx2x2,
                                                             labels_Bx2)
    w_B = batch["weight"]
    total = jnp.maximum(2 * jnp.sum(w_B), 1.0)
    right = jnp.sum((jnp.argmax(logits_Bx2x2, -1) == labels_Bx2)
                    * w_B[:, None]) / total
    # The paraphrase regularizer with a zero anchor: lambda ||W_words||^2.
    l2 = paraphrase.regularizer(params, jnp.zeros(()),
                                self.config.loss.lambda_w, 0.0)
    return jnp.sum(ce_Bx2 * w_B[:, None]) / total + l2, right

  def train_step(self, state, batch: dict[str, jax.Array], key: jax.Array):
    pick_B = self.pick_negatives(state["params"], batch, key)
    rows = jnp.arange(pick_B.shape[0])
    # An id whose translations all map to its reference's word ids (unknown
    # words) has no negative: it sits this step out.
    batch = dict(batch, neg=batch["cand"][rows, pick_B],
                 neg_len=batch["cand_len"][rows, pick_B],
                 weight=batch["weight"] * jnp.any(batch["cand_ok"], 1))
    state, loss, right, grad_norm = loop.gradient_step(self.tx, self._loss,
                                                       state, batch)
    return state, {"loss": loss, "train_accuracy": 100.0 * right,
                   "grad_norm": grad_norm}

  def batch(self, index: np.ndarray) -> dict[str, np.ndarray]:
    """Groups `index` as one batch of `batch_size` rows (one compiled
    shape); the missing rows are empty, of weight 0."""
    size, out = self.config.batch_size, {}
    for name, a in self.train_set._asdict().items():
      out[name] = np.zeros((size,) + a.shape[1:], a.dtype)
      out[name][:len(index)] = a[index]
    out["weight"] = (np.arange(size) < len(index)).astype(np.float32)
    return out

  def batches(self, start_step: int) -> Iterator[dict[str, np.ndarray]]:
    """Epoch after epoch, each in its own order from (seed, epoch), so a
    resumed run sees the batches an uninterrupted one would."""
    for index in batching.epoch_indices(len(self.train_set.ref),
                                        self.config.batch_size,
                                        self.config.seed, start_step):
      yield self.batch(index)

  def eval_model(self, params: Any) -> evaluators.Model:
    return classifier_model(self.prob, params, self.splits)

  def evaluate(self, params: Any) -> dict[str, float]:
    return evaluators.run_in_training(self.config.evals,
                                      self.eval_model(params))


def classifier_model(prob: RefProb, params: Any,
                     splits: dict[str, list[nbest.Group]]
                     ) -> evaluators.Model:
  """What evaluators read of a classifier: p(reference) of texts, and the
  labelled texts of each split of its data."""
  def labelled_split(split: str) -> tuple[list[str], np.ndarray]:
    if split not in splits:
      raise errors.ConfigError(f"evaluator split {split!r}: use one of "
                               f"{', '.join(nbest.SPLITS)}.")
    return labelled(splits[split])
  return evaluators.Model(classify=lambda texts: prob(params, texts),
                          labelled=labelled_split)


def read_splits(config: ml_collections.ConfigDict
                ) -> dict[str, list[nbest.Group]]:
  """The groups of `data.input` split by id, each without the ids that have
  no negative."""
  parts = nbest.split_by_id(nbest.read_groups(config.data.input),
                            config.data.dev_fraction,
                            config.data.test_fraction, config.seed)
  return {name: with_negative(groups, f"{config.data.input} ({name})")
          for name, groups in parts.items()}


def build(config: ml_collections.ConfigDict, workdir: str, mesh: Mesh
          ) -> RefClassifierRecipe:
  """Reads and splits the n-best lists, builds (or, resuming, reloads) the
  vocabulary of the train split and returns the recipe for the loop."""
  del mesh  # one batch axis; the loop splits it
  splits = read_splits(config)
  train = splits["train"]
  if not train:
    raise errors.DataError(f"{config.data.input}: no train id has a "
                           "translation to be a negative.")
  vocab_path = os.path.join(workdir, paraphrase.VOCAB_FILE)
  if os.path.exists(vocab_path):  # resuming: the ids must not move
    vocab = words.WordVocab.load(vocab_path)
  else:
    vocab = words.WordVocab.build(
        (s for g in train for s in (g.reference, *g.translations)),
        min_count=config.data.vocab_min_count,
        max_size=config.data.vocab_max_size or None)
  k = max(len(g.translations) for g in train)
  encoded = encode(train, vocab, config.data.max_len, k)
  batching.report_longer([len(words.tokenize(s)) for g in train
                          for s in (g.reference, *g.translations)],
                         config.data.max_len, "words")
  paraphrase.save_workdir_files(workdir, config, vocab)
  print(f"{config.data.input}: " + ", ".join(
      f"{len(groups)} {name} ids" for name, groups in splits.items())
        + f", up to {k} translations each", flush=True)
  return RefClassifierRecipe(config, vocab, encoded, splits)


def load_for_inference(workdir: str) -> tuple[RefProb, Any, int]:
  """The p(reference) function, the best (else newest) parameters of a
  ref_classifier workdir and their step."""
  if not os.path.isdir(workdir):
    raise errors.NoCheckpointError(
        f"{workdir}: no such directory. Train a classifier there first: "
        "paraflax train --config configs/ref_classifier.py:avg --workdir "
        f"{workdir} --config.data.input=BT.jsonl")
  config = workdir_lib.load_config(workdir, RECIPE)
  vocab_path = os.path.join(workdir, paraphrase.VOCAB_FILE)
  if not os.path.exists(vocab_path):  # training stopped before its data
    raise errors.NoCheckpointError(
        f"{workdir}: no {paraphrase.VOCAB_FILE} and no checkpoint; train "
        f"the classifier first: paraflax train --config "
        f"configs/ref_classifier.py:avg --workdir {workdir} "
        "--config.data.input=BT.jsonl")
  vocab = words.WordVocab.load(vocab_path)
  model = make_model(config, len(vocab))  # alone: no recipe, no optimizer
  params, step = checkpointing.restore_params_only(
      workdir, lambda key: init_params(model, key))
  return RefProb(model, vocab, config.data.max_len), params, step


def eval_model(workdir: str) -> tuple[evaluators.Model, int]:
  """`paraflax eval`: the classifier of a workdir on its own data splits
  (its model and parameters alone: no recipe, no optimizer)."""
  prob, params, step = load_for_inference(workdir)
  config = workdir_lib.load_config(workdir, RECIPE)
  check(config)  # its data.input may have moved since it trained
  splits = read_splits(config)
  return classifier_model(prob, params, splits), step


def ref_prob_scorer(workdir: str) -> scores.BlockScorer:
  """`ref_prob` for score-paraphrases: the probability that a pair's
  translation is a reference, by the classifier of `workdir`."""
  prob, params, step = load_for_inference(workdir)
  identity = {"checkpoint_step": step,
              "params_sha256": checkpointing.params_digest(params)}
  return scores.BlockScorer(
      "ref_prob", identity,
      lambda pairs: prob.of_tokens(params, [p.translation for p in pairs]))
