"""Searching a finished index folder (`index_build`): on the CPU or on
every GPU faiss sees, query block by query block, the candidates scored
again with exact cosines from the embeddings.
"""
from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from concurrent import futures

import numpy as np

from paraflax import errors
from paraflax.mining import embeddings_io
from paraflax.mining import index_build
from paraflax.mining import index_spec

def load(folder: str, nprobe: int, *, gpu: bool | None = None):
  """The finished index of `folder`, searching `nprobe` clusters (IVF), on
  every GPU faiss sees when `gpu` (None: when faiss has GPUs) in float16,
  the rows sharded over them."""
  if nprobe < 1:
    raise errors.ConfigError(f"--nprobe {nprobe}: use a positive value.")
  faiss = index_spec.faiss_module()
  index = index_build.read(os.path.join(folder, index_build.INDEX_FILE))
  ivf = index_spec.ivf(index)
  if ivf is not None:
    ivf.nprobe = min(nprobe, ivf.nlist)
  gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
  if gpu and not gpus:
    raise errors.ConfigError("--faiss-gpu: this faiss sees no GPU (install "
                             "faiss-gpu, or leave the flag out).")
  if gpus and gpu is not False:  # faiss-gpu only; not run where none is
    options = faiss.GpuMultipleClonerOptions()
    options.useFloat16 = True
    options.shard = True
    index = faiss.index_cpu_to_all_gpus(index, options)
    if ivf is not None:
      faiss.GpuParameterSpace().set_index_parameter(index, "nprobe",
                                                    min(nprobe, ivf.nlist))
  return index


def to_cosine(values: np.ndarray, metric: str) -> np.ndarray:
  return values if metric == "ip" else 1 - values / 2


class Rows:
  """The rows `rows` of `emb` (all when None) as a matrix to slice and
  gather, read only when asked for."""

  def __init__(self, emb, rows: np.ndarray | None):
    self.emb, self.rows = emb, rows
    self.shape = (len(emb) if rows is None else len(rows), emb.shape[1])

  def __len__(self) -> int:
    return self.shape[0]

  def __getitem__(self, key):
    if self.rows is not None:
      key = self.rows[key]
    if isinstance(key, slice) or isinstance(self.emb, embeddings_io.Shards):
      return self.emb[key]
    return embeddings_io.take_rows(self.emb, key)


# Candidates are scored again a chunk of queries at a time, the chunks
# spread over as many threads as faiss searches with (numpy lets go of the
# GIL in the gather, the float32 conversion and the dot products): a
# chunk's rows stay in cache from gather to dot product, where a whole
# block's float32 copies (256 MiB for 65,536 queries x 16 candidates x 64
# dims) would go through memory twice. lab/benchmarks/mining_rerank.py
# times it against faiss's IndexRefineFlat.
_RESCORE_QUERIES = 1024


def exact_cosines(q: np.ndarray, corpus, ids: np.ndarray, threads: int
                  ) -> np.ndarray:
  """Cosines [rows, c] of unit query rows `q` [rows, dim] with rows `ids`
  [rows, c] of `corpus` (any matrix that gathers, `Rows`), float32."""
  out = np.empty(ids.shape, np.float32)

  def chunk(start: int) -> None:
    at = ids[start:start + _RESCORE_QUERIES]
    found = index_spec.unit(corpus[at.ravel()]).reshape(*at.shape, -1)
    out[start:start + _RESCORE_QUERIES] = np.einsum(
        "qd,qkd->qk", q[start:start + _RESCORE_QUERIES], found)

  with futures.ThreadPoolExecutor(max(1, threads)) as pool:
    list(pool.map(chunk, range(0, len(ids), _RESCORE_QUERIES)))
  return out


def search_blocks(index, metric: str, queries, corpus, k: int,
                  *, rerank: int, block: int, todo: Collection[int],
                  name: str) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
  """(b, cosines [rows, k] descending, ids [rows, k]) of query rows [b *
  block, (b + 1) * block) for b in `todo`, as `knn.knn_blocks`.

  With `rerank` > 0, the index's best max(k, rerank) candidates are scored
  again with exact cosines from `corpus` (a `Rows`: row i is id i), read
  where they lie, and the k best kept; ties go to the lower id.
  """
  wanted = min(max(k, rerank), index.ntotal)
  threads = index_spec.faiss_module().omp_get_max_threads()
  for b in sorted(todo):
    q = index_spec.unit(queries[b * block:(b + 1) * block])
    values, ids = index.search(q, wanted)
    ok = ids >= 0
    if rerank:
      cos = exact_cosines(q, corpus, np.where(ok, ids, 0), threads)
    else:
      cos = to_cosine(values, metric).astype(np.float32)
    # A zero row (an empty sentence) has cosine 0 with every row: exact
    # search (`knn`) then takes the first rows, faiss any of its ties;
    # taking the first ones here mines such rows as exact search does.
    zero = ~q.any(axis=1)
    ids[zero], cos[zero], ok[zero] = np.arange(wanted), 0.0, True
    cos = np.where(ok, cos, -np.inf)
    order = np.lexsort((ids, -cos), axis=1)[:, :k]
    cos = np.take_along_axis(cos, order, axis=1)
    ids = np.take_along_axis(ids, order, axis=1)
    short = np.flatnonzero(~np.isfinite(cos[:, -1]))
    if short.size:
      raise errors.ConfigError(
          f"the index found fewer than k={k} neighbours for {name} row "
          f"{b * block + short[0]} (0-based) and {short.size - 1} more in "
          "its block: the probed clusters hold too few rows. Raise --nprobe "
          "or use fewer IVF clusters.")
    yield b, cos.astype(np.float32), ids.astype(np.int32)
