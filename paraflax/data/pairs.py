"""Sentence pairs as padded word ids, served in megabatches.

A megabatch is `megabatch` mini-batches of `batch` pairs, shaped [M, B, L]:
the unit in which hardest negatives are chosen. The stream is a pure function
of (seed, megabatch index), so a resumed run sees exactly the batches an
uninterrupted run would have seen. The pairs are either read in shuffled
passes over all of them, or drawn from several members by rate (`Rates`,
a seqio Mixture's semantics).

The pairs are in memory (`encode_pairs`) or, in training, read by row
from the workdir's encoded cache (`cached_pairs`, `encoded_cache`): the
corpus is streamed once into it and a megabatch reads its own rows, so
memory does not grow with the corpus but for the order of the pass under
way (4 bytes a pair).
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from paraflax.data import batching
from paraflax.data import encoded_cache
from paraflax.data import words


@dataclasses.dataclass(frozen=True)
class EncodedPairs:
  """In memory (`encode_pairs`) or read by row from the workdir's encoded
  cache (`cached_pairs`): the stream indexes rows, either way."""
  a: np.ndarray  # [N, max_len] int32 word ids
  a_len: np.ndarray  # [N]
  b: np.ndarray
  b_len: np.ndarray
  a_uid: np.ndarray  # [N] int64 digests of the id sequences (`row_hash`)
  b_uid: np.ndarray

  def __len__(self) -> int:
    return len(self.a_len)


def columns(max_len: int) -> dict[str, encoded_cache.Column]:
  return {"a": encoded_cache.Column("int32", max_len),
          "a_len": encoded_cache.Column("int32"),
          "b": encoded_cache.Column("int32", max_len),
          "b_len": encoded_cache.Column("int32"),
          "a_uid": encoded_cache.Column("int64"),
          "b_uid": encoded_cache.Column("int64")}


def encode_chunk(pairs: Sequence[tuple[str, str]], vocab: words.WordVocab,
                 max_len: int) -> tuple[dict[str, np.ndarray], int]:
  """The cache's columns of `pairs`, and how many of their sentences are
  longer than `max_len` words (cut to it)."""
  out, longer = {}, 0
  for side, texts in (("a", [p[0] for p in pairs]),
                      ("b", [p[1] for p in pairs])):
    ids = np.zeros((len(texts), max_len), np.int32)
    lengths = np.zeros((len(texts),), np.int32)
    for row, text in enumerate(texts):
      seq = vocab.encode(text)
      longer += len(seq) > max_len
      seq = seq[:max_len]
      ids[row, :len(seq)] = seq
      lengths[row] = len(seq)
    out.update({side: ids, side + "_len": lengths,
                side + "_uid": encoded_cache.row_hash(ids, lengths)})
  return out, longer


def encode_pairs(pairs: Sequence[tuple[str, str]], vocab: words.WordVocab,
                 max_len: int) -> EncodedPairs:
  """All of `pairs` in memory: what `cached_pairs` writes, for small
  data and tests."""
  out, longer = encode_chunk(pairs, vocab, max_len)
  batching.warn_longer(longer, 2 * len(pairs), max_len, "words")
  return EncodedPairs(**out)


def cached_pairs(folder: str, settings: dict, chunks: Callable[
    [], Iterator[Sequence[tuple[str, str]]]], vocab: words.WordVocab,
                 max_len: int, name: str | None = None
                 ) -> tuple[EncodedPairs, dict]:
  """The pairs of `chunks()` (called once, only when the cache in
  `folder` is missing or of other `settings`) encoded into `folder`, and
  read back by row; with the `info` recorded (the pairs of each chunk source
  under "sizes" when `chunks` yields (source, pairs)). `name` heads the
  warning of sentences cut to max_len."""

  def fill(writer: encoded_cache.Writer) -> dict:
    longer, sizes = 0, {}
    for source, chunk in chunks():
      out, n = encode_chunk(chunk, vocab, max_len)
      writer.append(out)
      longer += n
      sizes[source] = sizes.get(source, 0) + len(chunk)
    batching.warn_longer(longer, 2 * writer.rows, max_len, "words",
                         name=name)
    return {"sizes": sizes, "longer": longer}

  cache = encoded_cache.ensure(folder, settings, columns(max_len), fill)
  return EncodedPairs(**{name: cache[name] for name in columns(max_len)}), \
      cache.info


def _scrambles(lengths: np.ndarray, p: float, rng: np.random.Generator
               ) -> dict[int, np.ndarray]:
  """Which of the rows of `lengths` have their words shuffled (each with
  probability `p`), and each one's order of words: the draws depend on the
  lengths alone, so every process draws the same whatever rows it reads."""
  return {int(row): rng.permutation(int(lengths[row]))
          for row in np.flatnonzero(rng.random(len(lengths)) < p)}


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
      out[mask] = _order(self.n, self.key, int(epoch))[flat[mask] % self.n]
    return out


@functools.lru_cache(maxsize=4)
def _order(n: int, key: tuple[int, ...], epoch: int) -> np.ndarray:
  """`default_rng([*key, epoch]).permutation(n)` as int32 (the same
  shuffle, 4 bytes a pair), kept while its pass is read."""
  order = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)
  np.random.default_rng([*key, epoch]).shuffle(order)
  return order


class Rates:
  """A seqio Mixture's rates over consecutive members of the pairs (sizes
  `sizes`): every example of a megabatch comes from member m with
  probability rates[m] / sum(rates), independently, as in
  `seqio.Mixture.get_dataset`. Each member is read in its own shuffled
  passes (`Passes`), so a small member repeats and a large one is sampled
  without repeats until it is used up. Megabatch k draws its member counts
  from (seed, 2, k): where each member stands before k is the sum of the
  counts before it, so the stream stays a pure function of k. `seed` may
  be a tuple, (seed, part) for a part's pairs (`PartedMegabatches`)."""

  def __init__(self, sizes: Sequence[int], rates: Sequence[float],
               seed: int | tuple[int, ...], size: int):
    self.p = np.asarray(rates, np.float64) / np.sum(rates)
    self.offsets = np.cumsum([0, *sizes[:-1]])
    self.key = tuple(seed) if isinstance(seed, tuple) else (seed,)
    self.passes = [Passes(n, (*self.key, 3, m)) for m, n in enumerate(sizes)]
    self.size = size
    self._before = [np.zeros(len(sizes), np.int64)]  # counts before k

  def _draw(self, k: int) -> tuple[np.ndarray, np.random.Generator]:
    rng = np.random.default_rng([*self.key, 2, k])
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
  # (index, count): a process of a multi-process run reads only its block
  # of each megabatch's columns (the block `partitioning.put_batch` places
  # on its devices).
  process: tuple[int, int] = (0, 1)
  # The part of the training pairs these are (`PartedMegabatches`): its
  # orders and scrambles drawn from (seed, part, ...), its rows as wide as
  # the cache's (max_len) and their duplicate ids from their digests
  # alone (`folded_uid`), none of it from another part's rows; None:
  # from (seed, ...) and the whole megabatch's lengths and digests.
  part: int | None = None

  def __post_init__(self):
    batching.process_block(self.batch, self.shards, self.process)
    size = self.batch * self.megabatch
    self._key = (self.seed,) if self.part is None else (self.seed, self.part)
    self._rates = Rates(self.sizes, self.rates, self._key, size) \
        if self.rates else None

  def indices(self, k: int) -> np.ndarray:
    """Pair indices of megabatch k."""
    if self._rates is not None:
      return self._rates.indices(k)
    size = self.batch * self.megabatch
    return Passes(len(self.pairs), self._key).take(k * size, size)

  def get(self, k: int) -> dict[str, np.ndarray]:
    """Megabatch k, [megabatch, batch padded to the shards], or this
    process's block of its columns."""
    idx = self.indices(k).reshape(self.megabatch, self.batch)
    start, block = batching.process_block(self.batch, self.shards,
                                          self.process)
    cols = np.arange(start, start + block)
    cols = cols[cols < self.batch]  # past them, this block's padding
    p = self.pairs
    lengths = {"a": p.a_len[idx], "b": p.b_len[idx]}
    # Width, duplicate ids and scrambles come from the whole megabatch's
    # small columns (lengths, digests); word ids only for this block.
    longest = int(max(lengths["a"].max(), lengths["b"].max()))
    length = min(batching.width(longest), p.a.shape[1])
    if self.part is None:
      # The digests as small ids, equal where they are: what the negatives'
      # mask compares, in int32 as the devices take it.
      _, uid = np.unique(np.stack([p.a_uid[idx], p.b_uid[idx]]),
                         return_inverse=True)
      uid = uid.reshape((2,) + idx.shape).astype(np.int32)
    else:
      length = p.a.shape[1]
      uid = folded_uid(np.stack([p.a_uid[idx], p.b_uid[idx]]))
    mine = idx[:, cols]
    out = {"a": p.a[mine][..., :length].copy(), "a_len": lengths["a"][:, cols],
           "b": p.b[mine][..., :length].copy(), "b_len": lengths["b"][:, cols],
           "a_uid": uid[0][:, cols], "b_uid": uid[1][:, cols],
           "weight": np.ones(mine.shape, np.float32)}
    if self.scramble > 0:
      rng = np.random.default_rng([*self._key, 1, k] if self.part is not None
                                  else [self.seed, 1, k])
      for side in ("a", "b"):
        for row, order in _scrambles(lengths[side].reshape(-1),
                                     self.scramble, rng).items():
          m, j = divmod(row, self.batch)
          if cols.size and cols[0] <= j <= cols[-1]:
            words = out[side][m, j - cols[0]]
            words[:len(order)] = words[order]
    return _padded(out, block - len(cols))

  def from_step(self, step: int) -> Iterator[dict[str, np.ndarray]]:
    return _from_step(self, step)


def _from_step(stream, step: int) -> Iterator[dict[str, np.ndarray]]:
  if step % stream.megabatch:
    raise ValueError(f"step {step} is not a megabatch boundary "
                     f"(megabatch={stream.megabatch}).")
  k = step // stream.megabatch
  while True:
    yield stream.get(k)
    k += 1


def _padded(out: dict[str, np.ndarray], pad: int) -> dict[str, np.ndarray]:
  """`out`'s [M, B, ...] columns and `pad` empty ones (uid -1: no text)."""
  if not pad:
    return out
  fill = {"a_uid": -1, "b_uid": -1}
  return {k: np.concatenate(
      [v, np.full((v.shape[0], pad) + v.shape[2:], fill.get(k, 0),
                  v.dtype)], axis=1) for k, v in out.items()}


def folded_uid(digests: np.ndarray) -> np.ndarray:
  """int32 ids >= 0 of 64-bit digests (`encoded_cache.row_hash`), equal
  for equal digests and, to about 2^-31 per pair of texts, only for them:
  what a part's rows give the negatives' mask without the other parts'
  digests (a pair of texts that collide is only kept from being each
  other's negative)."""
  d = digests.astype(np.int64).view(np.uint64)
  return ((d ^ (d >> np.uint64(32))) & np.uint64(0x7FFFFFFF)).astype(np.int32)


@dataclasses.dataclass
class PartedMegabatches:
  """With data.parts = S (`bitext_parts`): this process's block of each
  global megabatch, the columns batch / S at a time of each of its parts'
  streams (`MegabatchStream` with `part`, over that part's cache), in part
  order, padded to the block's columns (`batching.process_block`). Part
  p's columns are [p B/S, (p+1) B/S) of every global megabatch, so the
  global megabatch is a pure function of (seed, k, S), whatever the
  process count."""
  streams: Sequence[MegabatchStream]  # one per owned part
  batch: int
  megabatch: int
  shards: int
  process: tuple[int, int] = (0, 1)

  def __post_init__(self):
    batching.process_block(self.batch, self.shards, self.process)

  def get(self, k: int) -> dict[str, np.ndarray]:
    _, block = batching.process_block(self.batch, self.shards, self.process)
    got = [s.get(k) for s in self.streams]
    out = {key: np.concatenate([g[key] for g in got], axis=1)
           for key in got[0]}
    return _padded(out, block - out["a"].shape[1])

  def from_step(self, step: int) -> Iterator[dict[str, np.ndarray]]:
    return _from_step(self, step)
