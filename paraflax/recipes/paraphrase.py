"""Paraphrastic sentence embeddings (Wieting et al. 2017) on the train loop.

One jitted train step is one megabatch: embed every sentence of the M
mini-batches with the current parameters, choose each pair's negatives on
device, then make M optimizer updates (a `lax.scan`), as in Wieting's code
where negatives are refreshed once per megabatch.
"""
from __future__ import annotations

import collections
import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from jax.sharding import Mesh

from paraflax import errors
from paraflax import losses
from paraflax.data import batching
from paraflax.data import encoded_cache
from paraflax.data import pairs as pairs_lib
from paraflax.data import words
from paraflax.evaluation import evaluators
from paraflax.models import encoders
from paraflax.recipes import workdir as workdir_lib
from paraflax.training import checkpointing
from paraflax.training import optimizers
from paraflax.training import partitioning

VOCAB_FILE = "vocab.txt"
WORD_VECTORS_FILE = "word_vectors.txt"
_EMBED_BATCH = 512
_CHUNK = 4096  # pairs encoded and written at a time


def make_model(config: ml_collections.ConfigDict, vocab_size: int
               ) -> nn.Module:
  kwargs = {k: v for k, v in config.model.items()
            if k not in ("name", "word_vectors")}
  return encoders.make(config.model.name, vocab_size, **kwargs)


def _is_word_embedding(path) -> bool:
  return any(getattr(k, "key", None) == encoders.WORD_EMBED for k in path)


def regularizer(params: Any, anchor: jax.Array | None, lambda_w: float,
                lambda_c: float) -> jax.Array:
  """lambda_c ||composition||^2 + lambda_w ||W_words - W_initial||^2."""
  total = jnp.zeros(())
  for path, leaf in jax.tree_util.tree_leaves_with_path(params):
    if _is_word_embedding(path):
      if lambda_w and anchor is not None:
        total += lambda_w * jnp.sum(jnp.square(leaf - anchor))
    elif lambda_c:
      total += lambda_c * jnp.sum(jnp.square(leaf))
  return total


class Embedder:
  """Text in, embeddings out, for a trained (or initialised) encoder."""

  def __init__(self, model: nn.Module, vocab: words.WordVocab, max_len: int):
    self.model, self.vocab, self.max_len = model, vocab, max_len
    self._apply = jax.jit(lambda p, i, n: model.apply({"params": p}, i, n))

  def __call__(self, params: Any, texts: Sequence[str]) -> np.ndarray:
    """[N, D] float32 in input order; batches are sorted by length."""
    seqs = [self.vocab.encode(t) for t in texts]
    batching.report_longer([len(s) for s in seqs], self.max_len, "words")
    seqs = [s[:self.max_len] for s in seqs]
    out = None
    for rows, ids, lengths in batching.sorted_batches(seqs, _EMBED_BATCH):
      emb = np.asarray(self._apply(params, ids, lengths))[:len(rows)]
      if out is None:
        out = np.zeros((len(texts), emb.shape[1]), np.float32)
      out[rows] = emb
    return out


def init_params(model: nn.Module, key: jax.Array) -> Any:
  ids = jnp.zeros((1, 8), jnp.int32)
  return model.init(key, ids, jnp.ones((1,), jnp.int32))["params"]


def updates_per_call(config: ml_collections.ConfigDict) -> int:
  """One optimizer update per mini-batch of a megabatch."""
  return config.megabatch


class ParaphraseRecipe:
  """Model, loss, batches and evaluation for `paraflax train`."""

  batch_axis = 1  # megabatches are [M, B, ...]; B is split over devices
  local_batches = True  # the stream reads this process's columns only

  def __init__(self, config: ml_collections.ConfigDict,
               vocab: words.WordVocab,
               stream: pairs_lib.MegabatchStream | None,
               anchor_init: np.ndarray | None = None):
    self.config = config
    self.vocab = vocab
    self.model = make_model(config, len(vocab))
    self.tx = optimizers.make(config.optimizer, config.train_steps)
    self.stream = stream
    self.updates_per_call = updates_per_call(config)
    self.anchor_init = anchor_init
    self.select_metric = config.select
    self.embedder = Embedder(self.model, vocab, config.data.max_len)
    # Saved configs from before length groups existed pad every row.
    self.length_groups = config.length_groups
    self.shards = stream.shards if stream is not None else 1

  def init_params(self, key: jax.Array) -> Any:
    params = init_params(self.model, key)
    if self.anchor_init is not None:
      params[encoders.WORD_EMBED]["embedding"] = jnp.asarray(
          self.anchor_init)
    return params

  def init_state(self, key: jax.Array) -> dict[str, Any]:
    params = self.init_params(key)
    state = {"step": jnp.zeros((), jnp.int32), "params": params,
             "opt": self.tx.init(params)}
    if self.config.loss.lambda_w:
      state["anchor"] = params[encoders.WORD_EMBED]["embedding"]
    return state

  def _embed(self, params, ids, lengths):
    # Words looked up once, outside the length groups: one gradient of the
    # word table per update, not one per group.
    variables = {"params": params}
    x = self.model.apply(variables, ids, method="words")
    return encoders.embed_by_length(
        lambda x_g, n: self.model.apply(
            variables, x_g, n, method="compose"),
        x, lengths, self.length_groups, self.shards)

  def _loss(self, params, anchor, mb: dict[str, jax.Array]):
    # Stacked on a new axis 1, not concatenated on the batch axis: each
    # device keeps its own rows, where a concatenation would reshuffle them.
    ids_Bx4xL = jnp.stack([mb["a"], mb["b"], mb["neg_a"], mb["neg_b"]], 1)
    len_Bx4 = jnp.stack([mb["a_len"], mb["b_len"], mb["neg_a_len"],
                         mb["neg_b_len"]], 1)
    b, _, length = ids_Bx4xL.shape
    emb_Bx4xD = self._embed(params, ids_Bx4xL.reshape(4 * b, length),
                            len_Bx4.reshape(4 * b)).reshape(b, 4, -1)
    s1, s2, t1, t2 = (emb_Bx4xD[:, i] for i in range(4))
    cfg = self.config.loss
    margin = losses.margin_loss(s1, s2, t1, t2, mb["weight"] * mb["has_neg"],
                                cfg.margin)
    return margin + regularizer(params, anchor, cfg.lambda_w, cfg.lambda_c)

  def train_step(self, state, mb: dict[str, jax.Array], key: jax.Array):
    m, b, _ = mb["a"].shape
    # Flattened pair-major ([B, M] -> [B*M]): the batch axis is split over
    # devices, and this order keeps every device's rows contiguous, so the
    # megabatch embedding is sharded instead of replicated on every device.
    flat = {k: v.swapaxes(0, 1).reshape((b * m,) + v.shape[2:])
            for k, v in mb.items()}
    frozen = jax.lax.stop_gradient(state["params"])
    # Both sides in one call, stacked pair-major like the loss's four sets,
    # so that the length groups draw on all 2*B*M sentences.
    length = flat["a"].shape[1]
    emb_Nx2xD = self._embed(
        frozen, jnp.stack([flat["a"], flat["b"]], 1).reshape(-1, length),
        jnp.stack([flat["a_len"], flat["b_len"]], 1).reshape(-1)
    ).reshape(b * m, 2, -1)
    emb_a, emb_b = emb_Nx2xD[:, 0], emb_Nx2xD[:, 1]
    neg_a, neg_b, has_neg = losses.choose_negatives(
        emb_a, emb_b, flat["a_uid"], flat["b_uid"], flat["weight"] > 0, key,
        self.config.loss.sampling)
    cand_ids = jnp.concatenate([flat["a"], flat["b"]])
    cand_len = jnp.concatenate([flat["a_len"], flat["b_len"]])
    flat.update(neg_a=cand_ids[neg_a], neg_a_len=cand_len[neg_a],
                neg_b=cand_ids[neg_b], neg_b_len=cand_len[neg_b],
                has_neg=has_neg.astype(jnp.float32))
    xs = {k: v.reshape((b, m) + v.shape[1:]).swapaxes(0, 1)
          for k, v in flat.items() if not k.endswith("_uid")}
    anchor = state.get("anchor")

    def update(carry, mini):
      params, opt = carry
      loss, grads = jax.value_and_grad(self._loss)(params, anchor, mini)
      updates, opt = self.tx.update(grads, opt, params)
      return (optax.apply_updates(params, updates), opt), (
          loss, optax.tree.norm(grads))

    (params, opt), (loss, grad_norm) = jax.lax.scan(
        update, (state["params"], state["opt"]), xs)
    new_state = dict(state, step=state["step"] + m, params=params, opt=opt)
    return new_state, {"loss": loss.mean(), "grad_norm": grad_norm.max()}

  def batches(self, start_step: int) -> Iterator[dict[str, np.ndarray]]:
    return self.stream.from_step(start_step)

  def evaluate(self, params: Any) -> dict[str, float]:
    return evaluators.run_in_training(self.config.evals, evaluators.Model(
        embed=lambda texts, lang: self.embedder(params, texts)))


def save_workdir_files(workdir: str, config: ml_collections.ConfigDict,
                       vocab: words.WordVocab) -> None:
  workdir_lib.save_config(workdir, config)
  vocab.save(os.path.join(workdir, VOCAB_FILE))


def load_for_inference(workdir: str) -> tuple[Embedder, Any, int]:
  """The embedder and the best (else newest) parameters of a workdir,
  restored alone: no training recipe, no optimizer."""
  config = workdir_lib.load_config(workdir, "paraphrase")
  vocab = words.WordVocab.load(os.path.join(workdir, VOCAB_FILE))
  model = make_model(config, len(vocab))
  params, step = checkpointing.restore_params_only(
      workdir, lambda key: init_params(model, key))
  return Embedder(model, vocab, config.data.max_len), params, step


def _task(config: ml_collections.ConfigDict) -> str:
  """The Task `config.data` names: a back-translation JSONL gets its own,
  through `data.filter` and `data.max_pairs`; a catalogued Task has none."""
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  data_filter = config.data.get("filter")
  if isinstance(data_filter, ml_collections.ConfigDict):
    data_filter = data_filter.to_dict()
  max_pairs = config.data.get("max_pairs", 0)
  if config.data.task.startswith(tasks.BACKTRANSLATED):
    return tasks.register_backtranslated(
        config.data.task[len(tasks.BACKTRANSLATED):], data_filter, max_pairs,
        config.seed)
  if data_filter is not None or max_pairs:
    raise errors.ConfigError(
        "data.filter and data.max_pairs select back-translated pairs; "
        f"data.task={config.data.task!r} is not one. Use "
        "data.task=backtranslated:SCORED.jsonl, or unset them.")
  return config.data.task


def _check_task(name: str, key: str) -> None:
  from paraflax.data import corpora  # pylint: disable=g-import-not-at-top
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  if not (name in corpora.catalogue() or name.startswith(tasks.BACKTRANSLATED)):
    raise errors.ConfigError(
        f"{key}: {name!r} is not a registered Task or Mixture; `paraflax "
        "tasks` lists them (e.g. paraphrase_en_human), or use "
        "backtranslated:OUT.jsonl for `paraflax backtranslate` output.")


def _members(config: ml_collections.ConfigDict
             ) -> tuple[tuple[str, float], ...]:
  """The (Task, rate) members `config.data` names: those of data.mixture,
  or data.task alone (rate () below: read in passes over all its pairs)."""
  mixture = tuple(tuple(m) for m in config.data.mixture)
  if not mixture:
    _check_task(config.data.task, "data.task")
    return ((_task(config), 1.0),)
  if config.data.task or config.data.filter is not None \
      or config.data.max_pairs:
    raise errors.ConfigError(
        f"data.mixture={mixture!r} names the pairs, and data.task, "
        "data.filter or data.max_pairs is set too: put data.task in "
        "data.mixture with its rate and set --config.data.task= (filter "
        "back-translated pairs by a config of their own).")
  for i, member in enumerate(mixture):
    if (len(member) != 2 or not isinstance(member[0], str)
        or not isinstance(member[1], (int, float)) or member[1] <= 0):
      raise errors.ConfigError(
          f"data.mixture[{i}]={member!r}: each member is (Task, rate) with "
          "a rate > 0, e.g. ((\"paraphrase_en_human\", 0.95), "
          "(\"paraphrase_en_ppdb_lexical\", 0.05)).")
    _check_task(member[0], f"data.mixture[{i}]")
  return tuple((name, float(rate)) for name, rate in mixture)


def _check_not_empty(config: ml_collections.ConfigDict,
                     sizes: Sequence[int]) -> None:
  """DataError naming the Task (and its file) that gave no pairs, before
  the workdir gets any file."""
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  mixture = tuple(tuple(m) for m in config.data.mixture)
  named = [(f"data.mixture[{i}]", m[0]) for i, m in enumerate(mixture)] \
      if mixture else [("data.task", config.data.task)]
  for (key, name), size in zip(named, sizes):
    if size:
      continue
    if name.startswith(tasks.BACKTRANSLATED):
      path = name[len(tasks.BACKTRANSLATED):]
      filtered = config.data.filter is not None or config.data.max_pairs
      raise errors.DataError(
          f"{path}: no pairs to train on ({key}={name!r}"
          + (", through data.filter and data.max_pairs): no record passes "
             "them. Loosen data.filter." if filtered else
             "): the file holds no record of rank 0. Train on a `paraflax "
             "backtranslate` (or `paraflax score-paraphrases`) output that "
             "holds pairs."))
    raise errors.DataError(
        f"{key}={name!r}: the Task has no {config.data.split!r} pairs; "
        "check its files under PARAFLAX_DATA_DIR (`paraflax tasks` lists "
        "the Tasks), or choose another.")


def _pair_chunks(config: ml_collections.ConfigDict,
                 members: Sequence[tuple[str, float]], part: int | None = None
                 ) -> Iterator[tuple[str, list[tuple[str, str]]]]:
  """(member index, pairs) of every member in order, a chunk at a time:
  streamed from the files, or from seqio's cache (`data.cache_dir`, read
  whole: its shards hold the examples out of order); with `part`, only
  that part of data.parts of each member's pairs (`bitext_parts.reader`)."""
  from paraflax.data import bitext_parts  # pylint: disable=g-import-not-at-top
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  for i, (name, _) in enumerate(members):
    if part is not None:
      chunks = bitext_parts.reader([name], ("sentence1", "sentence2"), part,
                                   bitext_parts.count(config),
                                   config.data.split)()
      yield from ((str(i), chunk) for chunk in chunks)
      continue
    if config.data.cache_dir:
      examples = tasks.examples(name, config.data.split,
                                cache_dir=config.data.cache_dir)
      chunks = (examples[j:j + _CHUNK]
                for j in range(0, len(examples), _CHUNK))
    else:
      chunks = tasks.iter_examples(name, config.data.split, chunk=_CHUNK)
    for chunk in chunks:
      yield str(i), [(e["sentence1"], e["sentence2"]) for e in chunk]


def _cache_settings(config: ml_collections.ConfigDict,
                    members: Sequence[tuple[str, float]],
                    vocab: words.WordVocab) -> dict[str, Any]:
  """What the encoded pairs are made from: the cache is rebuilt when any
  of it changes (a file's size or time, the vocabulary, max_len...)."""
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  return {"members": [name for name, _ in members],
          "split": config.data.split,
          "cache_dir": config.data.cache_dir,
          "files": [encoded_cache.stamp_of(tasks.source_files(
              name, config.data.split)) for name, _ in members],
          "vocab": encoded_cache.digest(vocab.words),
          "max_len": config.data.max_len}


def build(config: ml_collections.ConfigDict, workdir: str, mesh: Mesh
          ) -> ParaphraseRecipe:
  """Streams the pairs of `config.data` (a seqio Task or Mixture, or Tasks
  mixed by rate) into a counted vocabulary (or reloads it) and the
  workdir's encoded cache, and returns a recipe ready for the train loop
  that reads its megabatches from the cache."""
  from paraflax import files  # pylint: disable=g-import-not-at-top
  from paraflax.data import bitext_parts  # pylint: disable=g-import-not-at-top
  members = _members(config)
  parts = bitext_parts.count(config)  # before any work
  bitext_parts.unsplit(config, "cache_dir", "seqio's cache of a Task is "
                       "read whole")
  vectors = config.model.word_vectors
  if vectors and not os.path.isfile(vectors):
    raise errors.ConfigError(
        f"model.word_vectors={vectors!r}: no such file. Write PPDB vectors "
        "there with `paraflax train --config configs/ppdb_words.py "
        "--workdir runs/ppdb_words && paraflax export-words --workdir "
        "runs/ppdb_words`, or start from random words with "
        "--config.model.word_vectors=''.")
  vocab_path = os.path.join(workdir, VOCAB_FILE)
  # With parts, the vocabulary is counted on part 0, once for the
  # processes that share the workdir (the others wait, then load it).
  lock = encoded_cache.folder(workdir, "vocab") + ".lock"
  if parts > 1:
    os.makedirs(os.path.dirname(lock), exist_ok=True)
  with files.waiting_lock(lock) if parts > 1 else contextlib.nullcontext():
    vocab = _vocab(config, members, vocab_path, 0 if parts > 1 else None)
  if parts > 1:
    stream = _parted_stream(config, workdir, members, vocab, mesh)
    return _recipe(config, workdir, vocab, stream, vectors)
  encoded, info = pairs_lib.cached_pairs(
      encoded_cache.folder(workdir, "pairs"),
      _cache_settings(config, members, vocab),
      lambda: _pair_chunks(config, members), vocab, config.data.max_len)
  sizes = [info["sizes"].get(str(i), 0) for i in range(len(members))]
  _check_not_empty(config, sizes)
  mixed = bool(config.data.mixture)
  stream = pairs_lib.MegabatchStream(
      encoded, batch=config.batch_size, megabatch=config.megabatch,
      shards=mesh.size, seed=config.seed, scramble=config.loss.scramble,
      sizes=tuple(sizes) if mixed else (),
      rates=tuple(rate for _, rate in members) if mixed else (),
      process=partitioning.process())
  return _recipe(config, workdir, vocab, stream, vectors)


def _vocab(config: ml_collections.ConfigDict,
           members: Sequence[tuple[str, float]], vocab_path: str,
           part: int | None) -> words.WordVocab:
  """The workdir's vocabulary, else one counted on the pairs (of `part`
  alone, then saved)."""
  if os.path.exists(vocab_path):  # resuming: the ids must not move
    return words.WordVocab.load(vocab_path)
  counted = collections.Counter()

  def texts() -> Iterator[str]:
    for member, chunk in _pair_chunks(config, members, part):
      counted[member] += len(chunk)
      yield from (s for p in chunk for s in p)

  vectors = config.model.word_vectors
  vocab = words.WordVocab.build(
      texts(), min_count=config.data.vocab_min_count,
      max_size=config.data.vocab_max_size or None,
      extra=words.vector_words(vectors)
      if vectors and config.data.get("vocab_from_vectors") else ())
  if part is None:
    _check_not_empty(config, [counted[str(i)] for i in range(len(members))])
  else:
    vocab.save(vocab_path)
  return vocab


def _parted_stream(config: ml_collections.ConfigDict, workdir: str,
                   members: Sequence[tuple[str, float]],
                   vocab: words.WordVocab, mesh: Mesh
                   ) -> pairs_lib.PartedMegabatches:
  """With data.parts > 1: this process's parts of the pairs, each encoded
  into its own cache folder (`pairs-part{p}of{S}`), as its block of each
  global megabatch (`pairs.PartedMegabatches`)."""
  from paraflax.data import bitext_parts  # pylint: disable=g-import-not-at-top
  parts = bitext_parts.count(config)
  mine = bitext_parts.owned(parts, partitioning.process())
  mixed, streams = bool(config.data.mixture), []
  for part in mine:
    encoded, info = pairs_lib.cached_pairs(
        encoded_cache.folder(workdir, f"pairs-part{part}of{parts}"),
        {**_cache_settings(config, members, vocab), "part": [part, parts]},
        lambda part=part: _pair_chunks(config, members, part), vocab,
        config.data.max_len, f"train part {part} of {parts}")
    sizes = [info["sizes"].get(str(i), 0) for i in range(len(members))]
    empty = [name for (name, _), n in zip(members, sizes) if not n]
    if empty:
      raise errors.DataError(
          f"data.parts={parts}: part {part} holds no pairs of {empty} (a "
          "Task of fewer pairs than parts, or of none). Set --config.data."
          "parts lower, or check the Task (`paraflax tasks`).")
    streams.append(pairs_lib.MegabatchStream(
        encoded, batch=config.batch_size // parts,
        megabatch=config.megabatch, seed=config.seed,
        scramble=config.loss.scramble, sizes=tuple(sizes) if mixed else (),
        rates=tuple(rate for _, rate in members) if mixed else (),
        part=part))
  return pairs_lib.PartedMegabatches(streams, config.batch_size,
                                     config.megabatch, mesh.size,
                                     partitioning.process())


def _recipe(config: ml_collections.ConfigDict, workdir: str,
            vocab: words.WordVocab, stream: Any, vectors: str
            ) -> ParaphraseRecipe:
  anchor_init = None
  if vectors:
    table, found = words.load_word_vectors(vectors, vocab,
                                           config.model.word_dim)
    anchor_init = words.fill_missing(table, found, config.seed)
  save_workdir_files(workdir, config, vocab)
  return ParaphraseRecipe(config, vocab, stream, anchor_init)
