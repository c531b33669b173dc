"""What a faiss index is: a factory string ("OPQ64,IVF65536,PQ64",
"IVF4096,PQ16x4fs", "IVF1024,Flat", "SQ8", ...), a metric, the training
sample and its seed (`Spec`); the untrained index it makes, and the unit
rows every index holds.

Vectors are L2-normalised, so `ip` (inner product) similarities are
cosines and `l2` distances d give cosines 1 - d / 2.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterator

import numpy as np

from paraflax import errors

FLAT = "Flat"  # exact search: the blocked jax kernel, no faiss index
METRICS = ("ip", "l2")
_EPS = 1e-8  # as vectors.normalize: zero rows stay zero


def faiss_module():
  import faiss  # pylint: disable=g-import-not-at-top
  return faiss


@dataclasses.dataclass(frozen=True)
class Spec:
  """What an index is: everything its contents depend on."""
  factory: str  # a faiss index_factory string
  metric: str = "ip"
  train_sample: int | None = None  # rows trained on; None: `default_sample`
  seed: int = 0  # draws the training sample

  def __post_init__(self):
    if self.metric not in METRICS:
      raise errors.ConfigError(f"--metric {self.metric!r}: use one of "
                               f"{list(METRICS)}.")
    if not self.factory or self.factory.strip() != self.factory:
      raise errors.ConfigError(f"--index {self.factory!r}: give a faiss "
                               "factory string such as 'IVF1024,PQ16' or "
                               f"'{FLAT}'.")
    if self.train_sample is not None and self.train_sample < 1:
      raise errors.ConfigError(f"--train-sample {self.train_sample}: use a "
                               "positive number of rows.")


def unit(x: np.ndarray) -> np.ndarray:
  """Rows as contiguous float32 of length 1 (zero rows stay zero)."""
  x = np.asarray(x, np.float32)
  sq = np.einsum("nd,nd->n", x, x)[:, None]
  return np.ascontiguousarray(x / np.sqrt(np.maximum(sq, _EPS * _EPS)))


def _metric(name: str) -> int:
  faiss = faiss_module()
  return {"ip": faiss.METRIC_INNER_PRODUCT, "l2": faiss.METRIC_L2}[name]


def new_index(spec: Spec, dim: int):
  """The untrained faiss index of `spec`, or a ConfigError that says why
  faiss cannot make it, or why it cannot be built shard by shard."""
  faiss = faiss_module()
  try:
    index = faiss.index_factory(dim, spec.factory, _metric(spec.metric))
  except RuntimeError as e:
    reason = str(e).strip().splitlines()[-1]
    raise errors.ConfigError(
        f"--index {spec.factory!r} with --metric {spec.metric} at dim {dim}: "
        f"faiss cannot build it ({reason}). Check the factory string (e.g. "
        "PQ<m> needs m to divide the dimension; LSH needs --metric l2)."
        ) from None
  # Polysemous training only reorders PQ codes for Hamming-distance
  # filtering, which a search here never turns on; it is the slow part of
  # training (about 50 s for PQ8 on 3,000 rows).
  for part in (index, ivf(index)):
    if part is not None and hasattr(faiss.downcast_index(part),
                                    "do_polysemous_training"):
      faiss.downcast_index(part).do_polysemous_training = False
  if ivf(index) is None and not isinstance(faiss.downcast_index(index),
                                           faiss.IndexFlatCodes):
    raise errors.ConfigError(
        f"--index {spec.factory!r}: a {type(faiss.downcast_index(index)).__name__}"
        " cannot be filled shard by shard and merged; use an IVF index "
        "('IVF4096,PQ16', 'OPQ64,IVF65536,PQ64') or a flat-code one "
        "('PQ16', 'SQ8').")
  return index


def min_train_rows(index) -> int:
  """The fewest rows faiss trains `index` on: its k-means needs one row
  per centroid, IVF's clusters and a PQ's 2^nbits codes alike."""
  faiss = faiss_module()
  need = 1
  lists = ivf(index)
  if lists is not None:
    need = lists.nlist
  for part in (index, lists):
    pq = part is not None and getattr(faiss.downcast_index(part), "pq", None)
    if pq:
      need = max(need, pq.ksub)
  return need


def check_sample(spec: Spec, index, sample: int, rows: int) -> None:
  """A ConfigError naming the fix, before any work, when `sample` rows are
  too few to train `index` (faiss would stop with a RuntimeError)."""
  need = min_train_rows(index)
  if sample >= need:
    return
  fix = (f"give --train-sample {need} or more" if rows >= need else
         f"the corpus has {rows:,} rows: use fewer IVF clusters (IVF<n>, n "
         f"<= {rows:,}) or fewer PQ bits (PQ<m>x4 needs 16 rows)")
  raise errors.ConfigError(
      f"--index {spec.factory!r} trains on at least {need:,} rows (one per "
      f"k-means centroid) but its training sample has {sample:,}: {fix}.")


@contextlib.contextmanager
def training(spec: Spec) -> Iterator[None]:
  """faiss's training as paraflax messages: a RuntimeError becomes a
  ConfigError, each warning line is shown once."""
  from paraflax import quiet  # pylint: disable=g-import-not-at-top
  try:
    with quiet.native_stderr_once():
      yield
  except RuntimeError as e:
    reason = str(e).strip().splitlines()[-1]
    raise errors.ConfigError(
        f"--index {spec.factory!r}: faiss cannot train it ({reason}). "
        "Change the factory string or --train-sample.") from None


def ivf(index):
  faiss = faiss_module()
  try:
    return faiss.extract_index_ivf(index)
  except RuntimeError:
    return None


def nlist(spec: Spec, dim: int) -> int | None:
  """The IVF clusters of `spec`; None for indexes without clusters."""
  lists = ivf(new_index(spec, dim))
  return None if lists is None else lists.nlist


def default_sample(spec: Spec, dim: int, rows: int) -> int:
  """Rows to train on: 64 per IVF cluster and at least 10,000 (a PQ's 256
  centroids per sub-quantizer want about 40 points each), at most all."""
  lists = nlist(spec, dim) or 1
  return min(rows, max(64 * lists, 10_000))


def code_bytes_per_row(spec: Spec, dim: int) -> float:
  """Bytes per indexed row of the index's codes (ids of IVF lists apart)."""
  index = new_index(spec, dim)
  return float(getattr(faiss_module().downcast_index(
      ivf(index) or index), "code_size", math.nan))
