"""`paraflax mine`: embeddings in, margin-scored sentence pairs out.

load (or embed: `recipes.embedders.embed_sides`) -> deduplicate -> k-NN both
ways (jax: one product for both), resumable -> margin scores -> candidate
strategy -> TSV, written atomically.

The settings (input fingerprints, search and scoring options) are recorded
in `OUT.meta.json` before anything else is written. Finished k-NN query
blocks are kept in `OUT.parts/` (jax: per source block, its rows' neighbours
and the targets' top-k among its rows, merged in block order at the end);
rerunning the same command after a crash loads them and searches the rest,
and once the TSV is written it has nothing left to do. A run with other
settings is refused unless told to overwrite. The parts folder goes once
the TSV is written.
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import shutil
import sys
from collections.abc import Callable, Collection, Iterator, Sequence

import numpy as np
import tqdm

from paraflax import errors
from paraflax import files
from paraflax.data import readers
from paraflax.mining import embeddings_io
from paraflax.mining import knn
from paraflax.mining import margin
from paraflax.training import distributed

_TSV_CHUNK = 100_000  # pairs formatted per write


@dataclasses.dataclass(frozen=True)
class Side:
  """One side of the bitext: embeddings and, if given, the sentences."""
  emb: np.ndarray  # [N, d], possibly memory-mapped
  texts: list[str] | None
  name: str  # the file that error messages name
  fingerprint: str  # changes whenever `emb` does


@dataclasses.dataclass(frozen=True)
class Options:
  """How to mine; see `paraflax mine --help`."""
  k: int = 4
  margin: str = "ratio"
  retrieval: str = "max"
  threshold: float | None = None
  backend: str = "jax"
  block: int = 8192
  faiss_index: str = "flat"
  nlist: int | None = None
  nprobe: int = 16
  dedup: bool | None = None  # None: on when both sides have texts

  def __post_init__(self):
    """Refuses what no corpus could make sense of, before any work."""
    _check_choice(self.margin, margin.MARGINS, "--margin")
    _check_choice(self.retrieval, margin.STRATEGIES, "--retrieval")
    _check_choice(self.backend, BACKENDS, "--backend")
    if self.block < 1:
      raise errors.ConfigError(f"--block {self.block}: use a positive size.")
    if self.threshold is not None and not math.isfinite(self.threshold):
      raise errors.ConfigError(
          f"--threshold {self.threshold}: use a finite score (or leave it "
          "out to keep every pair).")


# --- Inputs -----------------------------------------------------------------


def load_sides(emb_paths: Sequence[str], dim: int | None, fp16: bool,
               text_paths: Sequence[str | None]) -> tuple[Side, Side]:
  """LASER embedding files, with their text files when given."""
  if None in emb_paths:
    raise errors.ConfigError("give --src-emb and --tgt-emb (with --dim), or "
                             "--workdir with the text files to embed them.")
  if (text_paths[0] is None) != (text_paths[1] is None):
    raise errors.ConfigError("give both --src-text and --tgt-text, or "
                             "neither (then pairs are line numbers).")
  src, tgt = (_load_side(e, dim, fp16, t)
              for e, t in zip(emb_paths, text_paths))
  return src, tgt


def _load_side(emb_path: str, dim: int | None, fp16: bool, text_path: str | None
               ) -> Side:
  emb = embeddings_io.read(emb_path, dim, fp16=fp16)
  texts = None
  if text_path is not None:
    # LASER embeds an empty line like any other: it has a row.
    texts, _ = readers.read_lines(text_path, empty="keep")
    tabbed = [n for n, t in enumerate(texts, start=1) if "\t" in t]
    if tabbed:
      raise errors.DataError(
          f"{text_path}:{tabbed[0]}: a tab inside a sentence ({len(tabbed)} "
          "line(s)); the mined TSV separates its columns by tabs. Replace "
          "the tabs with spaces (embed that text again), or mine without "
          "--src-text/--tgt-text (then pairs are line numbers).")
    if len(texts) != len(emb):
      raise errors.DataError(
          f"{text_path} has {len(texts)} lines but {emb_path} holds "
          f"{len(emb)} embeddings of dim {emb.shape[1]}: the text needs one "
          "line per "
          "embedding, in order. Pass the text the file was embedded from "
          "(and check --dim and --fp16).")
  return Side(emb, texts, emb_path, embeddings_io.fingerprint(emb_path))


# --- Resumable k-NN ---------------------------------------------------------


class _Parts:
  """Finished k-NN blocks of one run, kept until its output is written;
  `OUT.meta.json` says which run."""

  def __init__(self, output: str):
    self.dir = output + ".parts"

  def _path(self, kind: str, b: int) -> str:
    return os.path.join(self.dir, f"{kind}-{b:06d}.npz")

  def load(self, kind: str, total: int) -> dict[int, dict[str, np.ndarray]]:
    done = {}
    for b in range(total):
      if os.path.exists(self._path(kind, b)):
        with np.load(self._path(kind, b)) as part:
          done[b] = dict(part)
    return done

  def save(self, kind: str, b: int, **arrays: np.ndarray) -> None:
    if not distributed.is_primary():  # every process holds the same arrays
      return
    with files.atomic_output(self._path(kind, b)) as f:
      np.savez(f, **arrays)

  def remove(self) -> None:
    if distributed.is_primary() and os.path.isdir(self.dir):
      shutil.rmtree(self.dir)  # absent when nothing was saved


def _resumed(kind: str, total: int, parts: _Parts,
             blocks: Callable[[Collection[int]], Iterator[tuple[int, dict]]]
             ) -> list[dict[str, np.ndarray]]:
  """Every block's arrays, from `parts` or from `blocks(skip)`; each
  finished block is saved at once."""
  done = parts.load(kind, total)
  todo = blocks(done.keys())  # checks the inputs before any progress bar
  with tqdm.tqdm(total=total, initial=len(done), unit="block",
                 desc=f"k-NN {kind}", dynamic_ncols=True) as progress:
    for b, arrays in todo:
      parts.save(kind, b, **arrays)
      done[b] = arrays
      progress.update()
  return [done[b] for b in range(total)]


def _rows(done: list[dict[str, np.ndarray]]) -> knn.Neighbours:
  """The blocks' query rows' neighbours, in row order."""
  sims, idx = (np.concatenate([p[key] for p in done])
               for key in ("sims", "idx"))
  return sims, idx


def _jax_both_ways(x: np.ndarray, y: np.ndarray, options: Options,
                   names: tuple[str, str], parts: _Parts
                   ) -> tuple[knn.Neighbours, knn.Neighbours]:
  """Both directions from one pass over x blocks (`knn.both_ways_blocks`):
  a part holds the block's x neighbours and its y columns' top-k."""

  def blocks(skip):
    found = knn.both_ways_blocks(x, y, options.k, block=options.block,
                                 names=names, skip=skip)
    return ((b, {"sims": sims, "idx": idx, "col_sims": col_sims,
                 "col_idx": col_idx})
            for b, sims, idx, col_sims, col_idx in found)

  done = _resumed("both", knn.num_blocks(len(x), options.block), parts,
                  blocks)
  bwd = knn.merge_columns(((p["col_sims"], p["col_idx"]) for p in done),
                          options.k)
  return _rows(done), bwd


def _faiss_neighbours(direction: str, queries: np.ndarray,
                      corpus: np.ndarray, names: tuple[str, str],
                      options: Options, parts: _Parts) -> knn.Neighbours:
  from paraflax.mining import faiss_knn  # pylint: disable=g-import-not-at-top

  def blocks(skip):
    found = faiss_knn.knn_blocks(
        queries, corpus, options.k, block=options.block,
        index=options.faiss_index, nlist=options.nlist,
        nprobe=options.nprobe, names=names, skip=skip)
    return ((b, {"sims": sims, "idx": idx}) for b, sims, idx in found)

  return _rows(_resumed(
      direction, knn.num_blocks(len(queries), options.block), parts, blocks))


def _faiss_both_ways(x: np.ndarray, y: np.ndarray, options: Options,
                     names: tuple[str, str], parts: _Parts
                     ) -> tuple[knn.Neighbours, knn.Neighbours]:
  """faiss searches each direction on its own."""
  return (_faiss_neighbours("fwd", x, y, names, options, parts),
          _faiss_neighbours("bwd", y, x, names[::-1], options, parts))


BothWays = Callable[..., tuple[knn.Neighbours, knn.Neighbours]]
BACKENDS: dict[str, BothWays] = {"jax": _jax_both_ways,
                                 "faiss": _faiss_both_ways}


# --- Mining -----------------------------------------------------------------


def _digest(rows: np.ndarray | None) -> str:
  return "all" if rows is None else hashlib.sha256(rows.tobytes()).hexdigest()


def _texts_digest(texts: list[str] | None) -> str | None:
  if texts is None:
    return None
  digest = hashlib.sha256()
  for text in texts:  # lines: no newline inside
    digest.update(text.encode("utf-8") + b"\n")
  return digest.hexdigest()


def _unique(side: Side) -> tuple[np.ndarray, np.ndarray]:
  """Embeddings of the side's distinct sentences and, per line, the index of
  its sentence among them."""
  unique, inverse = margin.deduplicate(side.texts)
  if len(unique) == len(side.texts):
    return side.emb, inverse  # no copy of a memory-mapped file
  first = np.unique(inverse, return_index=True)[1]
  return side.emb[first], inverse


def _check_choice(value: str, registry: dict, flag: str) -> None:
  if value not in registry:
    raise errors.ConfigError(f"{flag} {value!r}: use one of "
                             f"{sorted(registry)}.")


def _check_k(k: int, sides: Sequence[tuple[Side, int]], what: str) -> None:
  for side, rows in sides:
    if not 1 <= k <= rows:
      fewest = min(rows for _, rows in sides)
      raise errors.ConfigError(
          f"--k {k}: {side.name} has {rows} {what}; use 1 <= --k <= "
          f"{fewest}.")


def _write_tsv(output: str, pairs: margin.Mined, src_texts: list[str] | None,
               tgt_texts: list[str] | None) -> None:
  """score<TAB>src<TAB>tgt per pair, as LASER; sentences or 0-based lines."""
  src, tgt = pairs.src.tolist(), pairs.tgt.tolist()
  if src_texts is not None:
    src, tgt = [src_texts[i] for i in src], [tgt_texts[i] for i in tgt]
  score = pairs.score.tolist()
  with files.atomic_output(output) as f:
    for start in range(0, len(score), _TSV_CHUNK):
      rows = zip(*(a[start:start + _TSV_CHUNK] for a in (score, src, tgt)))
      f.write("".join(f"{s:.6f}\t{a}\t{b}\n" for s, a, b in rows)
              .encode("utf-8"))


def _settings(src: Side, tgt: Side, x: np.ndarray, y: np.ndarray,
              rows: tuple[np.ndarray | None, np.ndarray | None],
              options: Options) -> dict:
  """Everything the TSV depends on."""
  return {
      "inputs": [src.fingerprint, tgt.fingerprint],
      "texts": [_texts_digest(s.texts) for s in (src, tgt)],
      "rows": [_digest(r) for r in rows],
      "shapes": [list(x.shape), list(y.shape)],
      "dtypes": [str(x.dtype), str(y.dtype)],
      "k": options.k, "block": options.block, "backend": options.backend,
      "faiss": [options.faiss_index, options.nlist, options.nprobe]
               if options.backend == "faiss" else None,
      "margin": options.margin, "retrieval": options.retrieval,
      "threshold": options.threshold}


def mine(src: Side, tgt: Side, options: Options, output: str, *,
         overwrite: bool = False) -> int:
  """Mines `src` against `tgt` into the TSV `output`; the pairs written.

  Finished work of the same settings is resumed; an output (or parts) of
  other settings is refused with a `ConfigError` unless `overwrite`.
  """
  has_texts = src.texts is not None and tgt.texts is not None
  dedup = has_texts if options.dedup is None else options.dedup
  if dedup and not has_texts:
    raise errors.ConfigError("--dedup needs --src-text and --tgt-text: "
                             "duplicates are found by their sentence.")
  (x, x_lines), (y, y_lines) = (_unique(s) if dedup else (s.emb, None)
                                for s in (src, tgt))
  _check_k(options.k, [(src, len(x)), (tgt, len(y))],
           "distinct sentences" if dedup else "embeddings")
  parts = _Parts(output)
  # Process 0 claims (and with `overwrite` clears) the output; the others
  # look at it only once that is done.
  if distributed.is_primary():
    files.claim_output(output, _settings(src, tgt, x, y, (x_lines, y_lines),
                                         options),
                       overwrite=overwrite, leftovers=(parts.dir,))
  distributed.barrier("mine.claimed")
  if os.path.exists(output):
    print(f"{output}: already mined with these settings", file=sys.stderr)
    parts.remove()  # left by a run killed after writing the TSV
    with open(output, "rb") as f:
      return sum(1 for _ in f)
  fwd, bwd = BACKENDS[options.backend](x, y, options, (src.name, tgt.name),
                                       parts)
  pairs = margin.select(margin.from_neighbours(fwd, bwd,
                                               margin=options.margin),
                        options.retrieval, options.threshold)
  if dedup:
    pairs = margin.expand_pairs(pairs, x_lines, y_lines)
  if distributed.is_primary():
    _write_tsv(output, pairs, src.texts, tgt.texts)
  parts.remove()
  return len(pairs.score)
