"""The bilingual autoencoder's encoders as sentence embedders: text of
either language in, embeddings out, each batch split over a mesh's devices;
the recipe's dev evaluations and `load_for_inference` use them."""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh

from paraflax import errors
from paraflax.data import batching
from paraflax.data import bitext
from paraflax.models import bilingual as model_lib
from paraflax.training import partitioning

_EMBED_BATCH = 256


class Embedder:
  """Text of either language in, sentence embeddings out; each batch is
  split over the devices of `mesh` (its `data` axis)."""

  def __init__(self, model: model_lib.BilingualAutoencoder,
               langs: Sequence[str], processors: Sequence[Any],
               max_len: int, mesh: Mesh,
               width_multiple: int = batching.QUANTUM):
    self.model, self.max_len = model, max_len
    # Input widths are multiples of this: one compiled encoder a width.
    self.width_multiple = width_multiple
    self.encoders = {lang: (side, sp) for lang, side, sp
                     in zip(langs, model_lib.SIDES, processors)}
    self.mesh = mesh
    self._params = partitioning.replicated(self.mesh)
    data = partitioning.batch_sharding(self.mesh, 0)
    self._apply = {side: jax.jit(
        functools.partial(self._embed, side=side),
        in_shardings=(self._params, data, data), out_shardings=data)
                   for side in model_lib.SIDES}

  def _embed(self, params, ids, lengths, side: str) -> jax.Array:
    return self.model.apply({"params": params}, ids, lengths, side,
                            method=model_lib.BilingualAutoencoder.embed)

  @property
  def languages(self) -> tuple[str, ...]:
    return tuple(self.encoders)

  def tokenize(self, texts: Sequence[str], lang: str) -> list[list[int]]:
    """The subword ids (EOS-terminated, cut to max_len) that `lang`'s
    encoder reads."""
    if lang not in self.encoders:
      raise errors.ConfigError(
          f"no {lang!r} encoder: this bilingual model embeds "
          f"{' and '.join(map(repr, self.encoders))}; choose one of them.")
    sp = self.encoders[lang][1]
    full = [sp.encode(t) + [bitext.EOS] for t in texts]
    batching.report_longer([len(s) for s in full], self.max_len,
                           "subwords (with EOS)")
    return [bitext.fit_length(s, self.max_len, "truncate", "") for s in full]

  def __call__(self, params: Any, texts: Sequence[str], lang: str
               ) -> np.ndarray:
    """[N, 2 * hidden] float32 in input order, by the `lang` encoder."""
    seqs = self.tokenize(texts, lang)
    apply = self._apply[self.encoders[lang][0]]
    # Once per call, not per batch: training may hold the parameters under
    # another sharding (fsdp rules, a smaller mesh), which jit would refuse.
    params = jax.device_put(params, self._params)
    out = np.zeros((len(texts), 2 * self.model.hidden), np.float32)
    data = partitioning.batch_sharding(self.mesh, 0)
    for rows, ids, lengths in batching.sorted_batches(
        seqs, _EMBED_BATCH, self.mesh.size, self.width_multiple):
      out[rows] = partitioning.fetch(apply(
          params, partitioning.put_global(ids, data),
          partitioning.put_global(lengths, data)))[:len(rows)]
    return out
