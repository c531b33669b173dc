"""The NMT posterior baseline of Kim et al. (2019)'s alignment recovery:
sim(x_i, y_j) = log p(y_j | x_i) / |y_j| under an X->English NMT workdir
(teacher-forced, per target subword, EOS included), for every
source-target pair. A full matrix costs N^2 forced decodings: limit N on
CPUs.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from paraflax.data import bitext
from paraflax.recipes import nmt as nmt_recipe


def _pad(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
  lengths = np.asarray([len(r) for r in rows], np.int32)
  out = np.full((len(rows), max(1, int(lengths.max(initial=0)))),
                bitext.PAD, np.int32)
  for i, r in enumerate(rows):
    out[i, :len(r)] = r
  return out, lengths


def score_matrix(model: nn.Module, params: Any,
                 src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]],
                 *, batch_size: int = 256) -> np.ndarray:
  """[len(src), len(tgt)] mean log p(tgt_j | src_i) per target token, from
  subword ids (targets end with EOS), `batch_size` pairs per call."""
  src_ids, src_len = _pad(src)
  tgt_ids, tgt_len = _pad(tgt)
  tgt_in = np.concatenate([np.full((len(tgt), 1), bitext.BOS, np.int32),
                           tgt_ids[:, :-1]], 1)

  @jax.jit
  def mean_logprob(s, s_len, t_in, t_out, t_len):
    logits = model.apply({"params": params}, s, s_len,
                         t_in).astype(jnp.float32)
    logp = jnp.take_along_axis(jax.nn.log_softmax(logits), t_out[..., None],
                               -1)[..., 0]
    mask = jnp.arange(t_out.shape[1])[None] < t_len[:, None]
    return jnp.sum(logp * mask, 1) / jnp.maximum(t_len, 1)

  pair_i, pair_j = np.divmod(np.arange(len(src) * len(tgt)), len(tgt))
  out = np.empty(len(pair_i), np.float32)
  for start in range(0, len(pair_i), batch_size):
    i = pair_i[start:start + batch_size]
    j = pair_j[start:start + batch_size]
    n = len(i)
    i, j = np.pad(i, (0, batch_size - n)), np.pad(j, (0, batch_size - n))
    out[start:start + n] = np.asarray(mean_logprob(
        src_ids[i], src_len[i], tgt_in[j], tgt_ids[j], tgt_len[j]))[:n]
  return out.reshape(len(src), len(tgt))


def posterior_matrix(workdir: str, src: Sequence[str], tgt: Sequence[str]
                     ) -> np.ndarray:
  """`score_matrix` of an NMT workdir's best checkpoint over texts
  (sources and targets over the config's max_len subwords truncated)."""
  translator, params, _ = nmt_recipe.load_translator(workdir)
  src_ids = [translator.encode(s, f"source {i}", "truncate")
             for i, s in enumerate(src)]
  tgt_ids = [(translator.tgt_sp.encode(t) + [bitext.EOS])[
      :translator.max_len] for t in tgt]
  return score_matrix(translator.model, params, src_ids, tgt_ids)
