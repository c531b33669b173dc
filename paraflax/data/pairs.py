"""Sentence pairs as padded word ids, served in megabatches.

A megabatch is `megabatch` mini-batches of `batch` pairs, shaped [M, B, L]:
the unit in which hardest negatives are chosen. The stream is a pure function
of (seed, megabatch index), so a resumed run sees exactly the batches an
uninterrupted run would have seen.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

import numpy as np

from paraflax.data import batching
from paraflax.data import words


@dataclasses.dataclass(frozen=True)
class EncodedPairs:
  a: np.ndarray  # [N, max_len] int32 word ids
  a_len: np.ndarray  # [N]
  b: np.ndarray
  b_len: np.ndarray
  a_uid: np.ndarray  # [N] equal exactly when the id sequences are equal
  b_uid: np.ndarray

  def __len__(self) -> int:
    return len(self.a_len)


def encode_pairs(pairs: Sequence[tuple[str, str]], vocab: words.WordVocab,
                 max_len: int) -> EncodedPairs:
  a, a_len = vocab.encode_batch([p[0] for p in pairs], max_len)
  b, b_len = vocab.encode_batch([p[1] for p in pairs], max_len)
  batching.report_longer([len(words.tokenize(s)) for p in pairs for s in p],
                         max_len, "words")
  uid: dict[bytes, int] = {}
  ids = [uid.setdefault(row[:n].tobytes(), len(uid))
         for x, lengths in ((a, a_len), (b, b_len))
         for row, n in zip(x, lengths)]
  ids = np.asarray(ids, np.int32)
  return EncodedPairs(a, a_len, b, b_len, ids[:len(pairs)], ids[len(pairs):])


def _scramble(ids: np.ndarray, lengths: np.ndarray, p: float,
              rng: np.random.Generator) -> np.ndarray:
  ids = ids.copy()
  for row in np.flatnonzero(rng.random(len(ids)) < p):
    ids[row, :lengths[row]] = rng.permutation(ids[row, :lengths[row]])
  return ids


@dataclasses.dataclass
class MegabatchStream:
  pairs: EncodedPairs
  batch: int
  megabatch: int
  shards: int = 1
  seed: int = 0
  scramble: float = 0.0  # probability of shuffling a sentence's word order

  def _order(self, epoch: int) -> np.ndarray:
    return np.random.default_rng([self.seed, epoch]).permutation(
        len(self.pairs))

  def indices(self, k: int) -> np.ndarray:
    """Pair indices of megabatch k: epoch-wise shuffled passes, chained."""
    n, size = len(self.pairs), self.batch * self.megabatch
    flat = np.arange(k * size, (k + 1) * size)
    epochs = flat // n
    out = np.empty_like(flat)
    for epoch in np.unique(epochs):
      mask = epochs == epoch
      out[mask] = self._order(int(epoch))[flat[mask] % n]
    return out

  def get(self, k: int) -> dict[str, np.ndarray]:
    idx = self.indices(k).reshape(self.megabatch, self.batch)
    pad = batching.round_up(self.batch, self.shards) - self.batch
    p = self.pairs
    longest = int(max(p.a_len[idx].max(), p.b_len[idx].max()))
    length = min(batching.width(longest), p.a.shape[1])
    rng = np.random.default_rng([self.seed, 1, k])
    out = {"a": p.a[idx, :length], "a_len": p.a_len[idx],
           "b": p.b[idx, :length], "b_len": p.b_len[idx],
           "a_uid": p.a_uid[idx], "b_uid": p.b_uid[idx],
           "weight": np.ones(idx.shape, np.float32)}
    if self.scramble > 0:
      for side in ("a", "b"):
        flat = _scramble(out[side].reshape(-1, length),
                         out[side + "_len"].reshape(-1), self.scramble, rng)
        out[side] = flat.reshape(out[side].shape)
    if pad:
      fill = {"a_uid": -1, "b_uid": -1}
      out = {k: np.concatenate(
          [v, np.full((self.megabatch, pad) + v.shape[2:], fill.get(k, 0),
                      v.dtype)], axis=1) for k, v in out.items()}
    return out

  def from_step(self, step: int) -> Iterator[dict[str, np.ndarray]]:
    if step % self.megabatch:
      raise ValueError(f"step {step} is not a megabatch boundary "
                       f"(megabatch={self.megabatch}).")
    k = step // self.megabatch
    while True:
      yield self.get(k)
      k += 1
