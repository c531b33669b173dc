"""Sentence pairs as padded word ids, served in megabatches.

A megabatch is `megabatch` mini-batches of `batch` pairs, shaped [M, B, L]:
the unit in which hardest negatives are chosen. The stream is a pure function
of (seed, megabatch index), so a resumed run sees exactly the batches an
uninterrupted run would have seen. The pairs are either read in shuffled
passes over all of them, or drawn from several members by rate (`Rates`,
a seqio Mixture's semantics).
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


@dataclasses.dataclass(frozen=True)
class Passes:
  """Shuffled passes over `n` items, chained: position i of the chain is
  item order(i // n)[i % n], each pass's order drawn from (*key, pass)."""
  n: int
  key: tuple[int, ...]

  def take(self, start: int, count: int) -> np.ndarray:
    flat = np.arange(start, start + count)
    epochs = flat // self.n
    out = np.empty_like(flat)
    for epoch in np.unique(epochs):
      mask = epochs == epoch
      order = np.random.default_rng([*self.key, int(epoch)]).permutation(
          self.n)
      out[mask] = order[flat[mask] % self.n]
    return out


class Rates:
  """A seqio Mixture's rates over consecutive members of the pairs (sizes
  `sizes`): every example of a megabatch comes from member m with
  probability rates[m] / sum(rates), independently, as in
  `seqio.Mixture.get_dataset`. Each member is read in its own shuffled
  passes (`Passes`), so a small member repeats and a large one is sampled
  without repeats until it is used up. Megabatch k draws its member counts
  from (seed, 2, k): where each member stands before k is the sum of the
  counts before it, so the stream stays a pure function of k."""

  def __init__(self, sizes: Sequence[int], rates: Sequence[float], seed: int,
               size: int):
    self.p = np.asarray(rates, np.float64) / np.sum(rates)
    self.offsets = np.cumsum([0, *sizes[:-1]])
    self.passes = [Passes(n, (seed, 3, m)) for m, n in enumerate(sizes)]
    self.seed, self.size = seed, size
    self._before = [np.zeros(len(sizes), np.int64)]  # counts before k

  def _draw(self, k: int) -> tuple[np.ndarray, np.random.Generator]:
    rng = np.random.default_rng([self.seed, 2, k])
    return rng.multinomial(self.size, self.p), rng

  def indices(self, k: int) -> np.ndarray:
    """Pair indices of megabatch k, the members interleaved at random."""
    while len(self._before) <= k:  # once per k: a resumed run sums them
      done = len(self._before) - 1
      self._before.append(self._before[-1] + self._draw(done)[0])
    counts, rng = self._draw(k)
    out = np.concatenate([
        offset + passes.take(int(start), int(count)) for offset, passes,
        start, count in zip(self.offsets, self.passes, self._before[k],
                            counts)])
    return out[rng.permutation(self.size)]


@dataclasses.dataclass
class MegabatchStream:
  pairs: EncodedPairs
  batch: int
  megabatch: int
  shards: int = 1
  seed: int = 0
  scramble: float = 0.0  # probability of shuffling a sentence's word order
  # With rates: `pairs` are members of these sizes, one after another,
  # sampled by these rates (`Rates`); without: passes over all pairs.
  sizes: tuple[int, ...] = ()
  rates: tuple[float, ...] = ()

  def __post_init__(self):
    size = self.batch * self.megabatch
    self._rates = Rates(self.sizes, self.rates, self.seed, size) \
        if self.rates else None

  def indices(self, k: int) -> np.ndarray:
    """Pair indices of megabatch k."""
    if self._rates is not None:
      return self._rates.indices(k)
    size = self.batch * self.megabatch
    return Passes(len(self.pairs), (self.seed,)).take(k * size, size)

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
