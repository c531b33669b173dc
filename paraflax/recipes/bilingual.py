"""Bilingual sentence embeddings by autoencoding (Kim et al. 2019) on the one
train loop.

Every batch holds B bitext pairs, decoded from the source encoder
(translation), and B target-language sentences, decoded from the target
encoder (autoencoding); the loss is the mean of the two per-token
cross-entropies. Without `data.mono_tasks` a batch autoencodes its own
targets; with them the autoencoded sentences are drawn from the bitext
targets and the monolingual text together. Subwords come from sentencepiece
models trained on the bitext and kept in the workdir, as for NMT
(`sentencepiece_vocab.pair`), and the training text is streamed into the
workdir's encoded cache as for NMT (`data/streamed_bitext.py`).
"""
from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from jax.sharding import Mesh

from paraflax import errors
from paraflax import losses
from paraflax.data import batching
from paraflax.data import bitext
from paraflax.data import sentencepiece_vocab
from paraflax.data import words
from paraflax.evaluation import evaluators
from paraflax.models import bilingual as model_lib
from paraflax.recipes import workdir as workdir_lib
from paraflax.recipes.bilingual_encoder import Embedder
from paraflax.training import checkpointing
from paraflax.training import loop
from paraflax.training import optimizers
from paraflax.training import partitioning

# direction -> the bitext features (source: non-English, target: English)
# that become the model's source and target; the target is autoencoded.
DIRECTIONS = {"xx_en": ("source", "target"), "en_xx": ("target", "source")}
# objective -> the batch keys (`<key>_out`, `<key>_len`) of its targets.
OBJECTIVES = {"nmt": "tgt", "ae": "ae"}
_WORD_START = "\u2581"  # sentencepiece's word-boundary mark


def languages(config: ml_collections.ConfigDict) -> tuple[str, str]:
  """(source, target) languages of the model."""
  if config.direction not in DIRECTIONS:
    raise errors.ConfigError(f"direction={config.direction!r}; use one of "
                             f"{sorted(DIRECTIONS)}.")
  lang = {"source": config.lang, "target": "en"}
  return tuple(lang[f] for f in DIRECTIONS[config.direction])


def make_model(config: ml_collections.ConfigDict, src_vocab: int,
               tgt_vocab: int) -> model_lib.BilingualAutoencoder:
  return model_lib.BilingualAutoencoder(src_vocab=src_vocab,
                                        tgt_vocab=tgt_vocab,
                                        **config.model.to_dict())


def _widen(x: np.ndarray, width: int) -> np.ndarray:
  if x.ndim == 1:
    return x
  return np.pad(x, ((0, 0), (0, width - x.shape[1])),
                constant_values=bitext.PAD)


@dataclasses.dataclass(frozen=True)
class MixedStream:
  """Batches of both objectives at one width: `pairs` for translation,
  `sentences` (the target language) for autoencoding, step by step."""
  pairs: bitext.BucketStream
  sentences: bitext.BucketStream

  def get(self, step: int) -> dict[str, np.ndarray]:
    batch, ae = self.pairs.get(step), self.sentences.get(step)
    width = max(batch["src"].shape[1], ae["tgt_out"].shape[1])
    batch.update(ae_in=ae["tgt_in"], ae_out=ae["tgt_out"],
                 ae_len=ae["tgt_len"])
    return {k: _widen(v, width) for k, v in batch.items()}

  def from_step(self, step: int) -> Iterator[dict[str, np.ndarray]]:
    while True:
      yield self.get(step)
      step += 1


def mixed_stream(data: bitext.EncodedBitext,
                 sentences: Sequence[np.ndarray], batch: int, shards: int,
                 seed: int, width_multiple: int = batching.QUANTUM,
                 process: tuple[int, int] = (0, 1)) -> MixedStream:
  """When `sentences` is `data.tgt`, the shared seed puts them in the same
  order, so each batch autoencodes its own targets."""
  return MixedStream(
      bitext.BucketStream(data, batch, shards, seed, sort_by="target",
                          width_multiple=width_multiple, process=process),
      bitext.BucketStream(bitext.EncodedBitext(sentences, sentences),
                          batch, shards, seed, sort_by="target",
                          width_multiple=width_multiple, process=process))


def _dev_batches(data: bitext.EncodedBitext, size: int,
                 width_multiple: int = batching.QUANTUM
                 ) -> list[dict[str, np.ndarray]]:
  """Every dev pair once, in length-sorted batches of `size` rows."""
  chunks = [bitext.EncodedBitext(tuple(data.src[i] for i in rows),
                                 tuple(data.tgt[i] for i in rows))
            for rows in batching.sorted_chunks([len(t) for t in data.tgt],
                                               size)]
  # A chunk of at most `size` pairs is one epoch of one batch.
  return [mixed_stream(c, c.tgt, size, 1, 0, width_multiple).get(0)
          for c in chunks]


def init_params(model: model_lib.BilingualAutoencoder, key: jax.Array) -> Any:
  ids, lengths = jnp.zeros((1, 8), jnp.int32), jnp.ones((1,), jnp.int32)
  return model.init(key, ids, lengths, ids, ids, lengths, ids)["params"]


def _mask(lengths_B: jax.Array, width: int) -> jax.Array:
  return jnp.arange(width)[None] < lengths_B[:, None]


class BilingualRecipe:
  """Model, loss, batches and dev evaluation for `paraflax train`; embeds
  over `mesh` (default: the config's)."""

  batch_axis = 0
  local_batches = True  # the stream reads this process's rows only
  updates_per_call = 1

  def __init__(self, config: ml_collections.ConfigDict, src_sp, tgt_sp,
               stream: MixedStream | None = None,
               dev: Sequence[tuple[str, str]] = (),
               word_vectors: dict[str, np.ndarray] | None = None,
               mesh: Mesh | None = None):
    self.config = config
    self.model = make_model(config, src_sp.get_piece_size(),
                            tgt_sp.get_piece_size())
    self.tx = optimizers.make(config.optimizer, config.train_steps)
    self.stream = stream
    self.dev = list(dev)
    self.select_metric = config.select
    self.word_vectors = word_vectors or {}  # side -> initial table
    multiple = bitext.width_multiple(config)
    self.embedder = Embedder(
        self.model, languages(config), (src_sp, tgt_sp), config.data.max_len,
        partitioning.config_mesh(config) if mesh is None else mesh, multiple)
    self.dev_batches = _dev_batches(
        bitext.encode(self.dev, src_sp.encode, tgt_sp.encode,
                      config.data.max_len, "truncate", "dev"),
        config.eval.batch_size, multiple)
    self._dev_losses = jax.jit(functools.partial(self._token_losses,
                                                 label_smoothing=0.0))

  def init_state(self, key: jax.Array) -> dict[str, Any]:
    params = init_params(self.model, key)
    for side, table in self.word_vectors.items():
      params[model_lib.word_embedding_key(side)]["embedding"] = jnp.asarray(
          table)
    return {"step": jnp.zeros((), jnp.int32), "params": params,
            "opt": self.tx.init(params)}

  def _token_losses(self, params, batch, label_smoothing: float
                    ) -> dict[str, tuple[jax.Array, jax.Array]]:
    """(summed cross-entropy, target tokens) per objective."""
    logits = self.model.apply({"params": params}, batch["src"],
                              batch["src_len"], batch["tgt_in"],
                              batch["ae_out"], batch["ae_len"],
                              batch["ae_in"])
    return {name: losses.token_cross_entropy(
        out, batch[f"{key}_out"], _mask(batch[f"{key}_len"], out.shape[1]),
        label_smoothing) for (name, key), out in zip(OBJECTIVES.items(),
                                                     logits)}

  def _loss(self, params, batch):
    per_token = {name: total / jnp.maximum(count, 1.0) for name, (
        total, count) in self._token_losses(
            params, batch, self.config.loss.label_smoothing).items()}
    return sum(per_token.values()) / len(per_token), per_token

  def train_step(self, state, batch: dict[str, jax.Array], key: jax.Array):
    del key  # no dropout
    state, loss, per_token, grad_norm = loop.gradient_step(
        self.tx, self._loss, state, batch)
    return state, {"loss": loss, "grad_norm": grad_norm,
                   **{f"loss/{name}": v for name, v in per_token.items()}}

  def batches(self, start_step: int) -> Iterator[dict[str, np.ndarray]]:
    return self.stream.from_step(start_step)

  def evaluate(self, params: Any) -> dict[str, float]:
    if not self.dev:
      return {}
    totals = jax.device_get(functools.reduce(
        lambda a, b: jax.tree.map(operator.add, a, b),
        (self._dev_losses(params, b) for b in self.dev_batches)))
    out = {f"dev/loss/{name}": float(total / max(count, 1.0))
           for name, (total, count) in totals.items()}
    out["dev/loss"] = sum(out.values()) / len(out)
    return {**out, **evaluators.run_in_training(
        self.config.evals, evaluators.Model(
            embed=lambda texts, lang: self.embedder(params, texts, lang)),
        dev=self.config.data.dev)}


class _WholeWords:
  """A sentencepiece model as `words.load_word_vectors` sees a vocabulary:
  a word's id is the piece that spells it whole."""

  def __init__(self, sp):
    self.sp = sp

  def __len__(self) -> int:
    return self.sp.get_piece_size()

  def id_of(self, word: str) -> int | None:
    index = self.sp.piece_to_id(_WORD_START + word)
    return None if self.sp.is_unknown(index) else index


def _word_vectors(path: str, sp, config: ml_collections.ConfigDict
                  ) -> np.ndarray:
  table, found = words.load_word_vectors(path, _WholeWords(sp),
                                         config.model.word_dim)
  return words.fill_missing(table, found, config.seed)


def _check_tasks(config: ml_collections.ConfigDict, tgt_lang: str) -> None:
  """Catalogued bitext must be of the config's language pair (a user's
  spec is the user's word); mono Tasks of the autoencoded language."""
  from paraflax.data import corpora  # pylint: disable=g-import-not-at-top
  from paraflax.data import specs  # pylint: disable=g-import-not-at-top
  pair = (config.lang, "en")
  named = [specs.parse(s) for s in (*specs.train_specs(config.data),
                                    *([config.data.dev] * bool(config.data.dev)))]
  bad = [d.spec for d in named
         if not specs.is_spec(d.spec) and d.corpus.pair != pair]
  if bad:
    raise errors.ConfigError(
        f"data.train / data.dev: {bad} are not {config.lang}-en bitext; "
        "name the bitext of the pair (`paraflax tasks` lists the bundled "
        "ones; your own: --config.data.train=tsv:FILE, docs/your-data.md).")
  prefix = f"mono_{tgt_lang}_"
  bad = [n for n in config.data.mono_tasks
         if n not in corpora.CORPORA or not n.startswith(prefix)]
  if bad:
    raise errors.ConfigError(
        f"data.mono_tasks: {bad} are not monolingual {tgt_lang!r} Tasks (the "
        f"autoencoded target language); use {prefix}* Tasks from `paraflax "
        "tasks`, or ().")


def _pairs(config: ml_collections.ConfigDict, names: Sequence[str],
           split: str) -> list[tuple[str, str]]:
  """(source, target) pairs of bitext Tasks in the model's direction."""
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  src, tgt = DIRECTIONS[config.direction]
  return [(e[src], e[tgt]) for name in names
          for e in tasks.examples(name, split)]


def _sentences(config: ml_collections.ConfigDict, workdir: str,
               data: bitext.EncodedBitext, tgt_sp,
               part: tuple[int, int] | None = None) -> Sequence[np.ndarray]:
  """The autoencoded sentences: the bitext targets, then the text of
  `data.mono_tasks` (streamed into the workdir's `data_cache/mono`), or
  with `part` (p, S) the text of that part alone (`bitext_parts.reader`,
  into `data_cache/mono-part{p}of{S}`)."""
  from paraflax.data import bitext_parts  # pylint: disable=g-import-not-at-top
  from paraflax.data import encoded_cache  # pylint: disable=g-import-not-at-top
  from paraflax.data import streamed_bitext  # pylint: disable=g-import-not-at-top
  names = tuple(config.data.mono_tasks)
  if not names:
    return data.tgt
  features = ("text", "text")
  if part is None:
    name, read, extra = "mono", streamed_bitext.reader(names, features), {}
  else:
    name = f"mono-part{part[0]}of{part[1]}"
    read, extra = bitext_parts.reader(names, features, *part), {
        "part": list(part)}
  mono = bitext.cached(
      encoded_cache.folder(workdir, name),
      streamed_bitext.cache_settings(config, names, (tgt_sp,), **extra),
      read, tgt_sp.encode, tgt_sp.encode, config.data.max_len,
      config.data.too_long, name, sides=("tgt",))
  return bitext.Chained(data.tgt, mono["tgt"])


def check(config: ml_collections.ConfigDict, files: bool) -> None:
  """`config_check`'s part for this family: its languages and evaluators
  and, with `files`, bitext of the pair that names files."""
  langs = languages(config)
  if files:
    _check_tasks(config, langs[1])
  evaluators.settings_of(config.evals, config.data.dev)


def build(config: ml_collections.ConfigDict, workdir: str, mesh: Mesh
          ) -> BilingualRecipe:
  """Streams the bitext (and monolingual text) of `config.data` into the
  workdir's subword models and encoded caches (`streamed_bitext`), and
  returns the recipe, whose batches read their rows from the caches."""
  from paraflax.data import bitext_parts  # pylint: disable=g-import-not-at-top
  from paraflax.data import streamed_bitext  # pylint: disable=g-import-not-at-top
  langs = languages(config)
  multiple = bitext.width_multiple(config)
  dev = _pairs(config, (config.data.dev,) if config.data.dev else (),
               "train")
  parts = bitext_parts.count(config)
  if parts > 1:  # each process reads its own parts
    mine = bitext_parts.owned(parts, partitioning.process())
    data, src_sp, tgt_sp = bitext_parts.train_parts(
        config, workdir, DIRECTIONS[config.direction], dev, mine)
    # Each part's autoencoded sentences (without data.mono_tasks its
    # targets, in its pairs' order: a batch autoencodes its own).
    sentences = [_sentences(config, workdir, d, tgt_sp, (part, parts))
                 for d, part in zip(data, mine)]
    stream = MixedStream(*(bitext_parts.parted_stream(
        config, d, mine, mesh.size, partitioning.process(), "target")
                           for d in (data, [bitext.EncodedBitext(s, s)
                                            for s in sentences])))
  else:
    data, src_sp, tgt_sp = streamed_bitext.train_bitext(
        config, workdir, DIRECTIONS[config.direction], dev)
    stream = mixed_stream(data, _sentences(config, workdir, data, tgt_sp),
                          config.batch_size, mesh.size, config.seed, multiple,
                          partitioning.process())
  dev = dev[:config.eval.sentences]
  vectors = {side: _word_vectors(config.word_vectors[lang], sp, config)
             for side, lang, sp in zip(model_lib.SIDES, langs,
                                       (src_sp, tgt_sp))
             if config.word_vectors[lang]}
  workdir_lib.save_config(workdir, config)
  return BilingualRecipe(config, src_sp, tgt_sp, stream, dev, vectors, mesh)


def load_for_inference(workdir: str, mesh: Mesh | None = None
                       ) -> tuple[Embedder, Any, int]:
  """The embedder (over `mesh`, default: the config's) and the best (else
  newest) parameters of a workdir, restored alone (no training recipe, no
  optimizer), and their step."""
  config = workdir_lib.load_config(workdir, "bilingual")
  src_sp, tgt_sp = sentencepiece_vocab.load_pair(workdir)
  model = make_model(config, src_sp.get_piece_size(), tgt_sp.get_piece_size())
  embedder = Embedder(
      model, languages(config), (src_sp, tgt_sp), config.data.max_len,
      partitioning.config_mesh(config) if mesh is None else mesh,
      bitext.width_multiple(config))
  params, step = checkpointing.restore_params_only(
      workdir, functools.partial(init_params, model))
  return embedder, params, step


def updates_per_call(config: ml_collections.ConfigDict) -> int:
  del config  # one update per step, whatever the settings
  return BilingualRecipe.updates_per_call
