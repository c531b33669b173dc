"""Attention NMT (X -> English) on the one train loop, with dev BLEU.

Subwords come from sentencepiece models trained on the training bitext
(joint or one per side, from the config) and kept in the workdir
(`sentencepiece_vocab.pair`); the training pairs are streamed into the
workdir's encoded cache and batches read their rows from there
(`data/streamed_bitext.py`).
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from paraflax import errors
from paraflax import losses
from paraflax.data import batching
from paraflax.data import bitext
from paraflax.data import sentencepiece_vocab
from paraflax.decoding import backtranslation
from paraflax.decoding import beam_search as bs
from paraflax.evaluation import evaluators
from paraflax.models import nmt
from paraflax.recipes import workdir as workdir_lib
from paraflax.training import checkpointing
from paraflax.training import loop
from paraflax.training import optimizers
from paraflax.training import partitioning


@dataclasses.dataclass(frozen=True)
class Hypothesis:
  text: str
  score: float  # length-normalised log-prob (what the beam ranks by)
  logprob: float  # total log-prob, EOS included
  tokens: int  # subwords, EOS included
  ended: bool  # in EOS; False: cut at its output limit


# How the summed token loss of a batch is divided: by its target tokens, or
# by its sentences (OpenNMT-py's default `normalization: sents`), which weighs
# long sentences more and makes gradients ~(tokens per sentence) times larger
# before clipping.
NORMALIZE = ("tokens", "sentences")


def make_model(config: ml_collections.ConfigDict, src_vocab: int,
               tgt_vocab: int) -> nmt.AttentionNMT:
  settings = config.model.to_dict()
  return nmt.AttentionNMT(src_vocab=src_vocab, tgt_vocab=tgt_vocab,
                          bridge_type=settings.pop("bridge"), **settings)


def search(model: nmt.AttentionNMT, params: Any, src: jax.Array,
           src_len: jax.Array, beam: int, **options: Any) -> bs.Hypotheses:
  """Beam search of `model` from src [B, S]; `options` are beam_search's.

  Beams of one input share its encoder states: they stay one row per input
  (the search's context), out of the cache that the search gathers every
  step, and the attention broadcasts them over the beams."""
  encoded = model.apply({"params": params}, src, src_len,
                        method=nmt.AttentionNMT.encode)
  carry = model.apply({"params": params}, encoded,
                      method=nmt.AttentionNMT.init_carry)

  def step(carry, tokens, encoded):
    return model.apply({"params": params}, encoded, carry, tokens,
                       method=nmt.AttentionNMT.decode_step)

  return bs.beam_search(bs.beamwise(step, beam),
                        bs.repeat_for_beams(carry, beam), context=encoded,
                        batch=src.shape[0], beam=beam, **options)


def output_limits(src_len: jax.Array, max_output: int, ratio: float,
                  plus: int) -> jax.Array:
  """[B] longest output of each input (subwords, EOS included):
  ceil(ratio * source subwords, EOS included) + plus, at most max_output
  (fairseq's max_len_a / max_len_b); ratio 0 is max_output for all."""
  if ratio <= 0:
    return jnp.full(src_len.shape, max_output, jnp.int32)
  limit = jnp.ceil(ratio * src_len).astype(jnp.int32) + plus
  return jnp.minimum(limit, max_output)


class Translator:
  """Batched, jitted beam search from text to text; each batch is split
  over the devices of `mesh` (its `data` axis). An input's output stops at
  `output_limits` (the config's decode block)."""

  def __init__(self, model: nmt.AttentionNMT, src_sp, tgt_sp,
               max_len: int, max_output: int, alpha: float, mesh: Mesh,
               max_output_ratio: float, max_output_plus: int,
               width_multiple: int = batching.QUANTUM):
    self.model, self.src_sp, self.tgt_sp = model, src_sp, tgt_sp
    # Source widths are multiples of this: one compiled search a width.
    self.width_multiple = width_multiple
    self.max_len, self.max_output, self.alpha = max_len, max_output, alpha
    self.max_output_ratio, self.max_output_plus = (max_output_ratio,
                                                   max_output_plus)
    self.mesh = mesh

  def limit_settings(self) -> dict[str, Any]:
    """The settings that cap outputs, for records of what made them (the
    ratio only where it is on, so records of before it still match)."""
    if self.max_output_ratio <= 0:
      return {"max_output": self.max_output}
    return {"max_output": self.max_output,
            "max_output_ratio": self.max_output_ratio,
            "max_output_plus": self.max_output_plus}

  @functools.lru_cache(maxsize=8)
  def search_fn(self, beam: int, alpha: float, stop: str = "exact",
                nbest: int = 1):
    """Jitted `(params, src [B, S], src_len [B]) -> Hypotheses`."""
    def run(params, src, src_len):
      hyps = search(self.model, params, src, src_len, beam=beam,
                    bos=bitext.BOS, eos=bitext.EOS, max_len=self.max_output,
                    alpha=alpha, active=src_len > 0, stop=stop, nbest=nbest,
                    max_lens=output_limits(
                        src_len, self.max_output, self.max_output_ratio,
                        self.max_output_plus))
      return hyps.replace(steps=hyps.steps[None])

    # Each device searches its own rows: an input's hypotheses do not depend
    # on the others in its batch, and a search over the whole sharded batch
    # gathers rows across the devices at every step (its shrinking phases
    # reorder the batch), 247 all-gathers a 32-row batch on a v5e:2x2.
    rows = P(partitioning.DATA)
    per_device = jax.shard_map(run, mesh=self.mesh, in_specs=(P(), rows, rows),
                               out_specs=rows, check_vma=False)

    def search_all(params, src, src_len):
      hyps = per_device(params, src, src_len)
      return hyps.replace(steps=jnp.max(hyps.steps))

    data = partitioning.batch_sharding(self.mesh, 0)
    return jax.jit(search_all, in_shardings=(
        partitioning.replicated(self.mesh), data, data))

  def encode(self, text: str, where: str, too_long: bitext.TooLong
             ) -> np.ndarray:
    ids = bitext.fit_length(self.src_sp.encode(text) + [bitext.EOS],
                            self.max_len, too_long, where)
    return np.asarray(ids, np.int32)

  def translate(self, params: Any, sources: Sequence[np.ndarray], *,
                beam: int, nbest: int = 1, alpha: float = 0.0,
                batch_size: int = 32, stop: str = "exact"
                ) -> Iterator[tuple[int, list[Hypothesis]]]:
    """Yields (input index, n best) in length-sorted batches; `stop` is a
    `beam_search.STOP_RULES` name."""
    backtranslation.check_beam(beam, nbest)
    decode = self.search_fn(beam, alpha, stop, nbest)
    data = partitioning.batch_sharding(self.mesh, 0)
    for rows, src, src_len in batching.sorted_batches(
        sources, batch_size, self.mesh.size, self.width_multiple):
      hyps = partitioning.fetch(decode(
          params, partitioning.put_global(src, data),
          partitioning.put_global(src_len, data)))
      for j, i in enumerate(rows):
        yield int(i), [self.hypothesis(hyps, j, k) for k in range(nbest)]

  def translate_texts(self, params: Any, *, alpha: float | None = None,
                      **options
                      ) -> Callable[[Sequence[str], int],
                                    evaluators.Translations]:
    """(texts, beam) -> their 1-best translations (sources over max_len
    subwords truncated); `alpha` defaults to the config's, `options` are
    `translate`'s (batch_size, stop)."""
    def run(texts: Sequence[str], beam: int) -> evaluators.Translations:
      sources = [self.encode(t, f"input {i + 1}", "truncate")
                 for i, t in enumerate(texts)]
      out = evaluators.Translations([""] * len(texts), [True] * len(texts))
      for i, (best,) in self.translate(
          params, sources, beam=beam,
          alpha=self.alpha if alpha is None else alpha, **options):
        out.texts[i], out.ended[i] = best.text, best.ended
      return out
    return run

  def unended_note(self, unended: int, total: int) -> str:
    """How many 1-best translations the search cut at their output limit,
    and that limit, for logs: a model that loops ("able to be able to ...")
    shows there."""
    share = 100.0 * unended / max(total, 1)
    return (f"{unended} of {total} translations ({share:.1f} %) hit "
            f"{self._limit_text()} without ending")

  def _limit_text(self) -> str:
    if self.max_output_ratio <= 0:
      return f"decode.max_output={self.max_output}"
    return (f"their output limit (decode.max_output_ratio="
            f"{self.max_output_ratio:g} x source subwords + "
            f"decode.max_output_plus={self.max_output_plus}, at most "
            f"decode.max_output={self.max_output})")

  def hypothesis(self, hyps: bs.Hypotheses, row: int, k: int) -> Hypothesis:
    """Hypothesis k of row `row` of a fetched search result."""
    n = int(hyps.lengths[row, k])
    ids = [int(t) for t in hyps.tokens[row, k, :n] if t != bitext.EOS]
    return Hypothesis(self.tgt_sp.decode(ids), float(hyps.scores[row, k]),
                      float(hyps.logprobs[row, k]), n,
                      bool(hyps.ended[row, k]))


def translator(config: ml_collections.ConfigDict, model: nmt.AttentionNMT,
               src_sp, tgt_sp, mesh: Mesh | None = None) -> Translator:
  """The config's translator of `model`, over `mesh` (default: the
  config's)."""
  return Translator(
      model, src_sp, tgt_sp, config.data.max_len, config.decode.max_output,
      config.decode.alpha,
      partitioning.config_mesh(config) if mesh is None else mesh,
      config.decode.max_output_ratio, config.decode.max_output_plus,
      bitext.width_multiple(config))


def init_params(model: nmt.AttentionNMT, key: jax.Array) -> Any:
  ids = jnp.zeros((1, 8), jnp.int32)
  return model.init(key, ids, jnp.ones((1,), jnp.int32), ids)["params"]


class NMTRecipe:
  """Model, loss, batches and dev BLEU for `paraflax train`; decodes over
  `mesh` (default: the config's)."""

  batch_axis = 0
  local_batches = True  # the stream reads this process's rows only
  updates_per_call = 1

  def __init__(self, config: ml_collections.ConfigDict, src_sp, tgt_sp,
               stream: bitext.BucketStream | None,
               mesh: Mesh | None = None):
    self.config = config
    self.model = make_model(config, src_sp.get_piece_size(),
                            tgt_sp.get_piece_size())
    if config.loss.normalize not in NORMALIZE:
      raise errors.ConfigError(
          f"loss.normalize={config.loss.normalize!r}; use one of "
          f"{', '.join(NORMALIZE)}.")
    self.tx = optimizers.make(config.optimizer, config.train_steps)
    self.stream = stream
    self.select_metric = config.select
    self.translator = translator(config, self.model, src_sp, tgt_sp, mesh)

  def init_state(self, key: jax.Array) -> dict[str, Any]:
    params = init_params(self.model, key)
    return {"step": jnp.zeros((), jnp.int32), "params": params,
            "opt": self.tx.init(params)}

  def _loss(self, params, batch):
    logits = self.model.apply({"params": params}, batch["src"],
                              batch["src_len"], batch["tgt_in"])
    mask = (jnp.arange(batch["tgt_out"].shape[1])[None]
            < batch["tgt_len"][:, None])
    total, count = losses.token_cross_entropy(
        logits, batch["tgt_out"], mask, self.config.loss.label_smoothing)
    if self.config.loss.normalize == "sentences":
      return total / jnp.maximum(jnp.sum(batch["tgt_len"] > 0), 1), count
    return total / jnp.maximum(count, 1.0), count

  def train_step(self, state, batch: dict[str, jax.Array], key: jax.Array):
    del key  # no dropout yet
    state, loss, tokens, grad_norm = loop.gradient_step(
        self.tx, self._loss, state, batch)
    return state, {"loss": loss, "grad_norm": grad_norm,
                   "target_tokens": tokens}

  def batches(self, start_step: int) -> Iterator[dict[str, np.ndarray]]:
    return self.stream.from_step(start_step)

  def evaluate(self, params: Any) -> dict[str, float]:
    return evaluators.run_in_training(self.config.evals, evaluators.Model(
        translate=self.translator.translate_texts(params)),
        dev=self.config.data.dev)


def build(config: ml_collections.ConfigDict, workdir: str, mesh: Mesh
          ) -> NMTRecipe:
  """Streams the bitext of `config.data.train` into the workdir's subword
  models and encoded cache (`streamed_bitext`), and returns the recipe,
  whose batches read their rows from the cache."""
  from paraflax.data import specs  # pylint: disable=g-import-not-at-top
  from paraflax.data import bitext_parts  # pylint: disable=g-import-not-at-top
  from paraflax.data import streamed_bitext  # pylint: disable=g-import-not-at-top
  specs.train_specs(config.data)  # before any work: a config with no bitext
  evaluators.settings_of(config.evals, config.data.dev)  # and its evals
  multiple = bitext.width_multiple(config)
  dev = specs.pairs(config.data.dev) if config.data.dev else []
  if bitext_parts.count(config) > 1:  # each process reads its own parts
    stream, src_sp, tgt_sp = bitext_parts.train_stream(
        config, workdir, ("source", "target"), dev, mesh.size,
        partitioning.process())
  else:
    data, src_sp, tgt_sp = streamed_bitext.train_bitext(
        config, workdir, ("source", "target"), dev)
    stream = bitext.BucketStream(data, config.batch_size, mesh.size,
                                 config.seed, sort_by=config.data.sort_by,
                                 width_multiple=multiple,
                                 process=partitioning.process())
  workdir_lib.save_config(workdir, config)
  return NMTRecipe(config, src_sp, tgt_sp, stream, mesh)


def load_translator(workdir: str, mesh: Mesh | None = None,
                    max_len: int | None = None
                    ) -> tuple[Translator, Any, int]:
  """The best checkpoint's translator, decoding over `mesh` (default: the
  config's), its parameters and their step. Sources over `max_len`
  subwords (default: the config's data.max_len, the longest it trained
  on) are cut to it; the attention reads sources of any length."""
  if max_len is not None and max_len < 2:
    raise errors.ConfigError(f"--max-len {max_len}: give at least 2 "
                             "subwords (one and the EOS).")
  config = workdir_lib.load_config(workdir, "nmt")
  src_sp, tgt_sp = sentencepiece_vocab.load_pair(workdir)
  # The model and its parameters only: no recipe, no optimizer.
  model = make_model(config, src_sp.get_piece_size(), tgt_sp.get_piece_size())
  found = translator(config, model, src_sp, tgt_sp, mesh)
  if max_len is not None:
    found.max_len = max_len
  params, step = checkpointing.restore_params_only(
      workdir, functools.partial(init_params, model))
  return found, params, step


def updates_per_call(config: ml_collections.ConfigDict) -> int:
  del config  # one update per step, whatever the settings
  return NMTRecipe.updates_per_call
