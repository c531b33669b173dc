"""Online LSH signatures (Van Durme & Lall 2010), as jitted sharded sums.

Bit j of a phrase's signature is 1 where sum_f count(f) r_j(f) >= 0, r_j(f)
a standard Gaussian drawn once per (feature, bit): instead of storing r,
a pool of 2**pool_bits Gaussian values is indexed by a hash of the
feature, a different multiply-shift hash per bit. The sums are updated
event by event as the corpus streams by; no feature vector is built. Then
cos(u, v) ~ cos(pi * hamming(sig_u, sig_v) / b) (Charikar 2002).

Layout: the sums are [phrases, bits] float32 split over the `data` axis
by bits, so each device holds b / devices columns and sees every event;
memory and work per device fall with the device count. The mesh may span
several processes (`paraflax monods --distributed`): each streams the
whole corpus and its devices hold their bits. A step adds one
chunk of events; its int32 sum is exact (pool values are integers scaled
so that a chunk cannot overflow), so the signatures are bit-for-bit the
same on any number of devices; each phrase row then gets one float add
per chunk, so the float sums are too. Signatures are packed 8 bits a byte.
"""
from __future__ import annotations

import dataclasses
import functools
import zlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from paraflax import errors
from paraflax.training import distributed
from paraflax.training import partitioning

CLIP = 6.0  # pool values are standard Gaussians clipped at +-CLIP
_POPCOUNT = np.asarray([bin(i).count("1") for i in range(256)], np.int32)


@dataclasses.dataclass(frozen=True)
class Hashing:
  """The random pool and per-bit hashes of one set of signatures."""
  pool: np.ndarray  # [2**pool_bits] int32, Gaussian * scale
  mult: np.ndarray  # [bits] uint32, odd
  add: np.ndarray  # [bits] uint32
  pool_bits: int
  chunk: int  # events per step; pool values are scaled for it

  @property
  def bits(self) -> int:
    return len(self.mult)


def check_bits(bits: int) -> None:
  if bits <= 0 or bits % 8:
    raise errors.ConfigError(
        f"--bits {bits}: signatures are packed 8 bits a byte, so the bits "
        "must be a positive multiple of 8 (e.g. 64, 256, 1024).")


def make_hashing(bits: int, pool_bits: int, chunk: int, seed: int
                 ) -> Hashing:
  check_bits(bits)
  if not 1 <= pool_bits <= 30:
    raise errors.ConfigError(f"monods.pool_bits={pool_bits}: use 1 to 30.")
  rng = np.random.default_rng(seed)
  scale = (2**31 - 1) // int(np.ceil(chunk * CLIP))
  if scale < 1:
    raise errors.ConfigError(f"monods.chunk_events={chunk} is too large for "
                             "exact int32 chunk sums; use at most 2**27.")
  gauss = np.clip(rng.standard_normal(2**pool_bits), -CLIP, CLIP)
  return Hashing(np.floor(gauss * scale).astype(np.int32),
                 (rng.integers(0, 2**32, bits, np.uint64) | 1
                  ).astype(np.uint32),
                 rng.integers(0, 2**32, bits, np.uint64).astype(np.uint32),
                 pool_bits, chunk)


def feature_hash(feature: str) -> int:
  """A stable 32-bit id of a feature string (the same in every process)."""
  return zlib.crc32(feature.encode("utf-8"))


def _add_chunk(sums_PxB, pool, mult_B, add_B, rows_U, slot_E, feats_E,
               weights_E, *, shift: int):
  """Adds one chunk: its events summed exactly (int32) per distinct phrase
  of the chunk (`rows_U`, event e in slot `slot_E[e]`), then one float add
  per phrase row: the work is the chunk's, not the table's."""
  idx_ExB = (feats_E[:, None] * mult_B[None, :] + add_B[None, :]) >> shift
  vals_ExB = pool[idx_ExB.astype(jnp.int32)] * weights_E[:, None]
  chunk_UxB = jax.ops.segment_sum(vals_ExB, slot_E,
                                  num_segments=rows_U.shape[0])
  return sums_PxB.at[rows_U].add(chunk_UxB.astype(jnp.float32))


@functools.lru_cache(maxsize=8)
def _stepper(mesh: Mesh, shift: int):
  bits = P(None, partitioning.DATA)
  step = jax.shard_map(
      functools.partial(_add_chunk, shift=shift), mesh=mesh,
      in_specs=(bits, P(), P(partitioning.DATA), P(partitioning.DATA), P(),
                P(), P(), P()),
      out_specs=bits)
  return distributed.first_runs_together(jax.jit(step, donate_argnums=0),
                                         "lsh")


class Signatures:
  """Running sums of `num_phrases` phrases; `add` streams events in."""

  def __init__(self, num_phrases: int, hashing: Hashing, mesh: Mesh):
    self.hashing, self.mesh = hashing, mesh
    # Bits padded to a multiple of the device count, dropped at the end.
    self._padded = -(-hashing.bits // mesh.size) * mesh.size
    pad = self._padded - hashing.bits
    # Every process holds the same host values and hands over its own
    # devices' part (a mesh over several processes: --distributed).
    self._replicated = partitioning.replicated(mesh)
    by_bits = NamedSharding(mesh, P(partitioning.DATA))
    self._pool = partitioning.put_global(hashing.pool, self._replicated)
    self._mult = partitioning.put_global(
        np.pad(hashing.mult, (0, pad), constant_values=1), by_bits)
    self._add = partitioning.put_global(np.pad(hashing.add, (0, pad)),
                                        by_bits)
    # Row num_phrases takes the empty slots of a chunk (zeros).
    self._rows = num_phrases
    self._sums = partitioning.put_global(
        np.zeros((num_phrases + 1, self._padded), np.float32),
        NamedSharding(mesh, P(None, partitioning.DATA)))
    self._step = _stepper(mesh, 32 - hashing.pool_bits)
    self.events = 0

  def add(self, ids: np.ndarray, feats: np.ndarray) -> None:
    """Adds one event per (phrase id, feature hash), in chunks."""
    chunk = self.hashing.chunk
    for start in range(0, len(ids), chunk):
      n = min(chunk, len(ids) - start)
      rows, slots = np.unique(ids[start:start + n], return_inverse=True)
      events = (np.pad(rows.astype(np.int32), (0, chunk - len(rows)),
                       constant_values=self._rows),
                np.pad(slots.astype(np.int32), (0, chunk - n)),
                np.pad(feats[start:start + n].astype(np.uint32),
                       (0, chunk - n)),
                np.pad(np.ones(n, np.int32), (0, chunk - n)))
      if jax.process_count() > 1:  # one process: numpy goes in as it is
        events = tuple(partitioning.put_global(e, self._replicated)
                       for e in events)
      self._sums = self._step(self._sums, self._pool, self._mult, self._add,
                              *events)
      self.events += n

  def sums(self) -> np.ndarray:
    """The sums on the host (every process gets all of them)."""
    return np.asarray(partitioning.fetch(self._sums))[
        :self._rows, :self.hashing.bits]

  def packed(self) -> np.ndarray:
    """[phrases, bits / 8] uint8: bit j is 1 where sum j >= 0 (Van Durme
    & Lall 2010's sign: a sum of exactly 0 sets the bit)."""
    return np.packbits(self.sums() >= 0, axis=1)


def cosine(a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
  """cos(pi * hamming / bits) of packed signatures (broadcasting rows)."""
  hamming = _POPCOUNT[np.bitwise_xor(a, b)].sum(axis=-1)
  return np.cos(np.pi * hamming / bits)
