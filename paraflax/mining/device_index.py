"""A product-quantizer index searched on the devices: the codes of a faiss
`PQ<M>` index folder (`index_build`) split over the devices' `data` axis
(M bytes a row instead of 2 d in float16), each corpus block decoded from
its codes on the device and scored against the query block as the exact
search scores rows (`knn`'s blocked kernel); then `index_search`
re-scores the best candidates with exact cosines from the embeddings.

The ranking is that of exact cosine search over the decoded rows; it
differs from faiss's own PQ search, which ranks by the inner product
with the decoded row, unnormalised.
"""
from __future__ import annotations

import re

import jax
import numpy as np
from jax.sharding import Mesh

from paraflax import errors
from paraflax.mining import index_spec
from paraflax.mining import knn
from paraflax.training import partitioning

# The factory strings searched on the devices: a flat product quantizer of
# M bytes a row (8 bits a subvector).
FACTORY = re.compile(r"PQ(\d+)(x8)?")


def check_factory(factory: str | None) -> None:
  """ConfigError unless `factory` is a flat 8-bit product quantizer."""
  if factory is None or not FACTORY.fullmatch(factory):
    raise errors.ConfigError(
        f"--index-on-devices with --index {factory!r}: the devices search "
        "a flat product quantizer's codes; use --index PQ<M> (M bytes a "
        "row, a divisor of the dimension, e.g. PQ64), or leave "
        "--index-on-devices out to search this index with faiss.")


class DeviceIndex:
  """The codes and codebooks of a faiss IndexPQ on the devices of `mesh`
  (default: all), with faiss's `search(queries, k)` and `ntotal`; values
  in the index's metric (`ip`: cosines; `l2`: 2 - 2 cosines)."""

  def __init__(self, index, metric: str, block: int,
               mesh: Mesh | None = None):
    faiss = index_spec.faiss_module()
    pq_index = faiss.downcast_index(index)
    if not isinstance(pq_index, faiss.IndexPQ) or pq_index.pq.nbits != 8:
      raise errors.ConfigError(
          f"--index-on-devices: the index folder holds a "
          f"{type(pq_index).__name__}, not an 8-bit IndexPQ; build it "
          "with --index PQ<M>.")
    pq = pq_index.pq
    self.ntotal, self.metric, self.block = index.ntotal, metric, block
    self.mesh = partitioning.make_mesh(-1) if mesh is None else mesh
    self.books = faiss.vector_to_array(pq.centroids).reshape(
        pq.M, pq.ksub, pq.dsub).astype(np.float32)
    self.codes = faiss.vector_to_array(pq_index.codes).reshape(
        index.ntotal, pq.M)
    self._placed: dict[int, tuple[jax.Array, int]] = {}

  def _on_devices(self, k: int) -> tuple[jax.Array, int]:
    """The codes split over the devices in blocks for `k` (placed once)."""
    if k not in self._placed:
      self._placed = {k: knn.place_corpus(self.codes, k, self.block,
                                          self.mesh)}
    return self._placed[k]

  def search(self, queries: np.ndarray, k: int
             ) -> tuple[np.ndarray, np.ndarray]:
    """The `k` rows of highest cosine with each query (a block of them:
    one compiled search per block size), and those cosines."""
    codes, corpus_block = self._on_devices(k)
    replicated = partitioning.replicated(self.mesh)
    sims, ids = partitioning.fetch(knn._searcher(  # pylint: disable=protected-access
        self.mesh, k, corpus_block, decoded=True)(
            partitioning.put_global(np.asarray(queries, np.float32),
                                    replicated),
            codes, np.int32(self.ntotal),
            partitioning.put_global(self.books, replicated)))
    # Writable copies, as faiss's search returns.
    return (np.array(sims) if self.metric == "ip" else 2 - 2 * sims,
            np.array(ids))
