"""The checks of the k-NN's inputs: embeddings as a host [rows, dim] float
array with finite rows, both sides of one dimension, k and the block size
in range; each failure says what to fix."""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from paraflax import errors

# Narrow floats stay narrow on the device (half the memory); everything else
# becomes float32. Similarities are always computed in float32.
_KEPT_DTYPES = (np.dtype(np.float16), np.dtype(jnp.bfloat16),
                np.dtype(np.float32))
_SHOWN = 5  # how many offending rows an error message lists


def as_embeddings(x, name: str) -> np.ndarray:
  """`x` as a host [rows, dim] float array with finite rows, or DataError."""
  x = np.asarray(x)
  if x.ndim != 2:
    raise errors.DataError(f"{name} must be a 2-D [rows, dim] array of "
                           f"embeddings; got shape {x.shape}.")
  if x.dtype not in _KEPT_DTYPES:
    x = x.astype(np.float32)
  # A float64 row sum is non-finite exactly when the row has a NaN or inf
  # (finite values cannot overflow it) and needs no [rows, dim] temporary.
  bad = np.flatnonzero(~np.isfinite(x.sum(axis=1, dtype=np.float64)))
  if bad.size:
    shown = ", ".join(str(i) for i in bad[:_SHOWN])
    more = f" (and {bad.size - _SHOWN} more)" if bad.size > _SHOWN else ""
    raise errors.DataError(
        f"{name} row(s) {shown}{more} (0-based) contain NaN or inf; fix or "
        f"drop those embeddings before the nearest-neighbour search.")
  return x


def check_inputs(queries, corpus, k: int, block: int, names: tuple[str, str]
                 ) -> tuple[np.ndarray, np.ndarray]:
  """Both inputs as `as_embeddings`, of one dimension, and k and block in
  range, or the error that says what to fix."""
  queries = as_embeddings(queries, names[0])
  corpus = as_embeddings(corpus, names[1])
  if queries.shape[1] != corpus.shape[1]:
    raise errors.DataError(
        f"{names[0]} have dimension {queries.shape[1]} but {names[1]} have "
        f"{corpus.shape[1]}; embed both with the same encoder.")
  if not 1 <= k <= len(corpus):
    raise errors.ConfigError(
        f"k={k} nearest neighbours asked for, but the {names[1]} has "
        f"{len(corpus)} rows; use 1 <= k <= {len(corpus)}.")
  if block < 1:
    raise errors.ConfigError(f"block={block}; use a positive block size.")
  return queries, corpus
