"""k-NN by cosine with faiss, block by block like `knn.knn_blocks`.

Cosine is inner product on L2-normalised float32 rows. `flat` is exact
(`IndexFlatIP`) and finds the same neighbours as `knn.knn` (equal
similarities may come in another order); `ivf` (`IndexIVFFlat`) searches the
`nprobe` nearest of `nlist` clusters only: much faster on big corpora,
approximate unless nprobe == nlist. Importing this module imports faiss.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterator

import faiss
import numpy as np

from paraflax import errors
from paraflax.mining import knn

_EPS = 1e-8  # as vectors.normalize: zero rows stay zero
_TRAIN_PER_LIST = 256  # IVF training rows per cluster (faiss's own cap)


def _unit(x: np.ndarray) -> np.ndarray:
  x = np.asarray(x, np.float32)
  sq = np.einsum("nd,nd->n", x, x)[:, None]
  return np.ascontiguousarray(x / np.sqrt(np.maximum(sq, _EPS * _EPS)))


def _add(index: faiss.Index, corpus: np.ndarray, block: int) -> faiss.Index:
  # Block by block: a memory-mapped corpus is never copied whole.
  for start in range(0, len(corpus), block):
    index.add(_unit(corpus[start:start + block]))
  return index


def _flat(corpus: np.ndarray, block: int, nlist: int | None, nprobe: int
          ) -> faiss.Index:
  del nlist, nprobe  # exact search has no clusters
  return _add(faiss.IndexFlatIP(corpus.shape[1]), corpus, block)


def default_nlist(rows: int) -> int:
  """About 4 sqrt(N) clusters, faiss's rule of thumb."""
  return max(1, min(rows, round(4 * math.sqrt(rows))))


def _ivf(corpus: np.ndarray, block: int, nlist: int | None, nprobe: int
         ) -> faiss.Index:
  nlist = default_nlist(len(corpus)) if nlist is None else nlist
  if not 1 <= nlist <= len(corpus):
    raise errors.ConfigError(f"--nlist {nlist}: use 1 <= nlist <= "
                             f"{len(corpus)} (the corpus rows).")
  if nprobe < 1:
    raise errors.ConfigError(f"--nprobe {nprobe}: use a positive value.")
  dim = corpus.shape[1]
  index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist,
                             faiss.METRIC_INNER_PRODUCT)
  # A fixed sample keeps the clusters, hence the results, reproducible.
  sample = np.sort(np.random.default_rng(0).choice(
      len(corpus), min(len(corpus), _TRAIN_PER_LIST * nlist), replace=False))
  index.train(_unit(corpus[sample]))
  index.nprobe = min(nprobe, nlist)
  return _add(index, corpus, block)


INDEXES: dict[str, Callable[..., faiss.Index]] = {"flat": _flat, "ivf": _ivf}


def knn_blocks(queries: np.ndarray, corpus: np.ndarray, k: int, *,
               block: int = 8192, index: str = "flat",
               nlist: int | None = None, nprobe: int = 16,
               names: tuple[str, str] = ("queries", "corpus"),
               skip: Collection[int] = ()
               ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
  """As `knn.knn_blocks`, with a faiss `index` (a key of INDEXES) built over
  the corpus; `nlist` (default `default_nlist`) and `nprobe` are for ivf."""
  queries, corpus = knn.check_inputs(queries, corpus, k, block, names)
  if index not in INDEXES:
    raise errors.ConfigError(f"unknown faiss index {index!r}; use one of "
                             f"{sorted(INDEXES)}.")
  todo = [b for b in range(knn.num_blocks(len(queries), block))
          if b not in skip]
  if not todo:
    return iter(())
  built = INDEXES[index](corpus, block, nlist, nprobe)
  return _search_blocks(built, queries, k, block, todo, names[0])


def _search_blocks(index: faiss.Index, queries: np.ndarray, k: int,
                   block: int, todo: list[int], name: str
                   ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
  for b in todo:
    sims, idx = index.search(_unit(queries[b * block:(b + 1) * block]), k)
    short = np.flatnonzero((idx < 0).any(axis=1))
    if short.size:
      # Only IVF gets here: the probed clusters held fewer than k rows.
      raise errors.ConfigError(
          f"the IVF index found fewer than k={k} neighbours for {name} row "
          f"{b * block + short[0]} (0-based) and {short.size - 1} more in "
          f"its block; raise --nprobe (now {index.nprobe}) or lower --nlist.")
    yield b, sims, idx
