"""Beam search of an attention NMT model from text to text: `Translator`
batches encoded sources by length, splits each batch over the devices of a
mesh and decodes them with `beam_search`, each input's output capped by
`output_limits`; `Hypothesis` is one decoded output, `Translations` the
1-best of a list of texts (what evaluators read)."""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from paraflax.data import batching
from paraflax.data import bitext
from paraflax.decoding import backtranslation
from paraflax.decoding import beam_search as bs
from paraflax.models import nmt
from paraflax.training import partitioning


@dataclasses.dataclass(frozen=True)
class Hypothesis:
  text: str
  score: float  # length-normalised log-prob (what the beam ranks by)
  logprob: float  # total log-prob, EOS included
  tokens: int  # subwords, EOS included
  ended: bool  # in EOS; False: cut at its output limit


class Translations(NamedTuple):
  texts: list[str]  # 1-best translations
  ended: list[bool]  # False: the search cut it at its output limit


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
                                    Translations]:
    """(texts, beam) -> their 1-best translations (sources over max_len
    subwords truncated); `alpha` defaults to the config's, `options` are
    `translate`'s (batch_size, stop)."""
    def run(texts: Sequence[str], beam: int) -> Translations:
      sources = [self.encode(t, f"input {i + 1}", "truncate")
                 for i, t in enumerate(texts)]
      out = Translations([""] * len(texts), [True] * len(texts))
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


def from_config(config: ml_collections.ConfigDict, model: nmt.AttentionNMT,
                src_sp, tgt_sp, mesh: Mesh | None = None) -> Translator:
  """The config's translator of `model`, over `mesh` (default: the
  config's)."""
  return Translator(
      model, src_sp, tgt_sp, config.data.max_len, config.decode.max_output,
      config.decode.alpha,
      partitioning.config_mesh(config) if mesh is None else mesh,
      config.decode.max_output_ratio, config.decode.max_output_plus,
      bitext.width_multiple(config))
