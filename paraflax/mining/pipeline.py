"""`paraflax mine`: embeddings in, margin-scored sentence pairs out.

load (or embed: `recipes.embedders.embed_sides`) -> deduplicate -> k-NN both
ways (jax: one product for both; or a faiss index of each side, `index`),
resumable -> margin scores -> candidate strategy -> TSV, written atomically.

A side is one embedding file or several (shards, read in path order as one
corpus, each memory-mapped); with texts, duplicates are found across every
shard of the side.

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

import jax
import numpy as np
import tqdm

from paraflax import errors
from paraflax import files
from paraflax.data import readers
from paraflax.mining import embeddings_io
from paraflax.mining import index as index_lib
from paraflax.mining import knn
from paraflax.mining import margin
from paraflax.training import distributed

_TSV_CHUNK = 100_000  # pairs formatted per write


@dataclasses.dataclass(frozen=True)
class Side:
  """One side of the bitext: embeddings and, if given, the sentences."""
  emb: np.ndarray | embeddings_io.Shards  # [N, d], possibly memory-mapped
  texts: list[str] | None
  name: str  # the file (or pattern) that error messages name
  fingerprint: str  # changes whenever `emb` does
  shard_prints: tuple[str, ...] = ()  # each file's fingerprint, in order


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
  # A faiss factory string ("OPQ64,IVF65536,PQ64"): approximate search in
  # an index of each side (`index`); "Flat": the exact jax search.
  index: str | None = None
  metric: str = "ip"  # the index's: ip or l2, on unit vectors
  rerank: int = 16  # index candidates re-scored exactly; 0: none
  train_sample: int | None = None  # rows the index trains on; None: auto
  seed: int = 0  # draws that sample
  faiss_gpu: bool | None = None  # None: on GPUs when faiss has them
  # jax: approximate top-k (`lax.approx_max_k`) at this recall; None: exact
  recall_target: float | None = None

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
    if self.index is not None:
      index_lib.Spec(self.index, self.metric, self.train_sample, self.seed)
      if self.backend != "jax":
        raise errors.ConfigError(
            f"--index with --backend {self.backend}: --index names the "
            "search itself (a faiss factory string, or Flat for the exact "
            "jax search); leave --backend out.")
    if self.rerank < 0:
      raise errors.ConfigError(f"--rerank {self.rerank}: use 0 (the "
                               "index's similarities) or a positive count.")
    if self.recall_target is not None:
      if not 0 < self.recall_target <= 1:
        raise errors.ConfigError(f"--recall-target {self.recall_target}: "
                                 "use a recall in (0, 1].")
      if self.backend != "jax" or self.faiss_string is not None:
        raise errors.ConfigError("--recall-target is for the jax search; "
                                 "a faiss index's recall follows --nprobe.")

  @property
  def faiss_string(self) -> str | None:
    """The faiss index to search; None: the jax (or --backend faiss)
    search."""
    return None if self.index in (None, index_lib.FLAT) else self.index

  @property
  def spec(self) -> index_lib.Spec:
    return index_lib.Spec(self.faiss_string, self.metric, self.train_sample,
                          self.seed)


# --- Inputs -----------------------------------------------------------------


def load_sides(emb_paths: Sequence[str], dim: int | None, fp16: bool,
               text_paths: Sequence[str | None]) -> tuple[Side, Side]:
  """LASER embedding files, with their text files when given; each path
  may be a glob of shards (`embeddings_io.read_shards`), its texts a glob
  of as many text files, the i-th text file holding the i-th shard's
  sentences (both in path order)."""
  if None in emb_paths:
    raise errors.ConfigError("give --src-emb and --tgt-emb (with --dim), or "
                             "--workdir with the text files to embed them.")
  if (text_paths[0] is None) != (text_paths[1] is None):
    raise errors.ConfigError("give both --src-text and --tgt-text, or "
                             "neither (then pairs are line numbers).")
  src, tgt = (_load_side(e, dim, fp16, t)
              for e, t in zip(emb_paths, text_paths))
  return src, tgt


def _load_side(emb_pattern: str, dim: int | None, fp16: bool,
               text_pattern: str | None) -> Side:
  emb, emb_paths = embeddings_io.read_shards(emb_pattern, dim, fp16=fp16)
  prints = tuple(embeddings_io.fingerprint(p) for p in emb_paths)
  if len(emb_paths) == 1:
    name, fingerprint = emb_paths[0], prints[0]
  else:
    name = emb_pattern
    fingerprint = hashlib.sha256("\n".join(prints).encode()).hexdigest()
  if text_pattern is None:
    return Side(emb, None, name, fingerprint, prints)
  text_paths = embeddings_io.expand(text_pattern, "text file")
  if len(text_paths) != len(emb_paths):
    raise errors.DataError(
        f"{text_pattern} names {len(text_paths)} text file(s) but "
        f"{emb_pattern} {len(emb_paths)} embedding file(s): give one text "
        "file per shard, named so that both sort in the same order.")
  texts = []
  for text_path, emb_path, (start, stop) in zip(
      text_paths, emb_paths, index_lib.shard_bounds(emb)):
    texts += _load_texts(text_path, emb_path, stop - start, emb.shape[1])
  return Side(emb, texts, name, fingerprint, prints)


def _load_texts(text_path: str, emb_path: str, rows: int, dim: int
                ) -> list[str]:
  """The sentences of one embedding file, one per row."""
  # LASER embeds an empty line like any other: it has a row.
  texts, _ = readers.read_lines(text_path, empty="keep")
  tabbed = [n for n, t in enumerate(texts, start=1) if "\t" in t]
  if tabbed:
    raise errors.DataError(
        f"{text_path}:{tabbed[0]}: a tab inside a sentence ({len(tabbed)} "
        "line(s)); the mined TSV separates its columns by tabs. Replace "
        "the tabs with spaces (embed that text again), or mine without "
        "--src-text/--tgt-text (then pairs are line numbers).")
  if len(texts) != rows:
    raise errors.DataError(
        f"{text_path} has {len(texts)} lines but {emb_path} holds "
        f"{rows} embeddings of dim {dim}: the text needs one "
        "line per "
        "embedding, in order. Pass the text the file was embedded from "
        "(and check --dim and --fp16).")
  return texts


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
                                 names=names, skip=skip,
                                 recall_target=options.recall_target)
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


def _index_folders(output: str, folders: Sequence[str | None]
                   ) -> tuple[str, str]:
  """The given index folders; the missing ones are built in the parts
  folder and go with it."""
  return tuple(folder or os.path.join(_Parts(output).dir, f"index-{side}")
               for folder, side in zip(folders, ("src", "tgt")))


def _index_settings(sides: Sequence[Side], rows: Sequence[np.ndarray | None],
                    options: Options, given: Sequence[str | None]
                    ) -> list[dict]:
  """The settings of each side's index; a given folder built otherwise is
  refused here, before anything is written (those in the parts folder go
  with the output's other settings)."""
  planned = []
  for side, side_rows, folder in zip(sides, rows, given):
    settings = index_lib.planned(side.emb, options.spec, side.shard_prints,
                                 side_rows)
    if folder is not None:
      index_lib.check(folder, settings)
    planned.append(settings)
  return planned


def _index_both_ways(sides: tuple[Side, Side],
                     rows: tuple[np.ndarray | None, np.ndarray | None],
                     options: Options, folders: tuple[str, str],
                     parts: _Parts
                     ) -> tuple[knn.Neighbours, knn.Neighbours]:
  """x searched in y's index and y in x's (each built first, or found
  built), query block by query block, resumable; rerank from the
  embeddings (`index.search_blocks`)."""
  views = [index_lib.Rows(s.emb, r) for s, r in zip(sides, rows)]
  found = []
  for direction, (q, c) in (("fwd", (0, 1)), ("bwd", (1, 0))):
    corpus_side = sides[c]
    index_lib.build(folders[c], corpus_side.emb, options.spec,
                    shard_prints=corpus_side.shard_prints, rows=rows[c])

    def blocks(skip, q=q, c=c):
      todo = [b for b in range(knn.num_blocks(len(views[q]), options.block))
              if b not in skip]
      if not todo:
        return iter(())
      index = index_lib.load(folders[c], options.nprobe,
                             gpu=options.faiss_gpu)
      searched = index_lib.search_blocks(
          index, options.metric, views[q], views[c], options.k,
          rerank=options.rerank, block=options.block, todo=todo,
          name=sides[q].name)
      return ((b, {"sims": sims, "idx": idx}) for b, sims, idx in searched)

    found.append(_rows(_resumed(
        direction, knn.num_blocks(len(views[q]), options.block), parts,
        blocks)))
  return found[0], found[1]


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


def _unique(side: Side) -> tuple[np.ndarray | None, np.ndarray]:
  """The rows of the side's distinct sentences (their first lines; None:
  every row) and, per line, the index of its sentence among them."""
  unique, inverse = margin.deduplicate(side.texts)
  if len(unique) == len(side.texts):
    return None, inverse  # no copy of a memory-mapped file
  return np.unique(inverse, return_index=True)[1], inverse


def _gathered(emb, rows: np.ndarray | None):
  """The rows `rows` of `emb` (all when None), in memory for the jax and
  --backend faiss searches (one file stays memory-mapped)."""
  if rows is not None:
    return emb[rows]
  return np.asarray(emb) if isinstance(emb, embeddings_io.Shards) else emb


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


def _settings(src: Side, tgt: Side, shapes: Sequence[tuple[int, int]],
              rows: tuple[np.ndarray | None, np.ndarray | None],
              options: Options, indexes: list[dict] | None) -> dict:
  """Everything the TSV depends on."""
  settings = {
      "inputs": [src.fingerprint, tgt.fingerprint],
      "texts": [_texts_digest(s.texts) for s in (src, tgt)],
      "rows": [_digest(r) for r in rows],
      "shapes": [list(shape) for shape in shapes],
      "dtypes": [str(s.emb.dtype) for s in (src, tgt)],
      "k": options.k, "block": options.block, "backend": options.backend,
      "faiss": [options.faiss_index, options.nlist, options.nprobe]
               if options.backend == "faiss" else None,
      "margin": options.margin, "retrieval": options.retrieval,
      "threshold": options.threshold}
  # Keys that exact jax mining leaves out, so that its settings (and
  # outputs made before these keys existed) stay as they were.
  if indexes is not None:
    settings["index"] = {"sides": indexes, "nprobe": options.nprobe,
                         "rerank": options.rerank}
  if options.recall_target is not None:
    settings["recall_target"] = options.recall_target
  return settings


def mine(src: Side, tgt: Side, options: Options, output: str, *,
         overwrite: bool = False,
         index_folders: Sequence[str | None] = (None, None)) -> int:
  """Mines `src` against `tgt` into the TSV `output`; the pairs written.

  Finished work of the same settings is resumed; an output (or parts) of
  other settings is refused with a `ConfigError` unless `overwrite`. With
  `options.index` a faiss string, each side's index is built in (or read
  from) its `index_folders` entry, None: inside `OUTPUT.parts/`.
  """
  has_texts = src.texts is not None and tgt.texts is not None
  dedup = has_texts if options.dedup is None else options.dedup
  if dedup and not has_texts:
    raise errors.ConfigError("--dedup needs --src-text and --tgt-text: "
                             "duplicates are found by their sentence.")
  if src.emb.shape[1] != tgt.emb.shape[1]:
    raise errors.DataError(
        f"{src.name} have dimension {src.emb.shape[1]} but {tgt.name} have "
        f"{tgt.emb.shape[1]}; embed both with the same encoder.")
  (x_rows, x_lines), (y_rows, y_lines) = (
      _unique(s) if dedup else (None, None) for s in (src, tgt))
  shapes = [(len(s.emb) if r is None else len(r), s.emb.shape[1])
            for s, r in ((src, x_rows), (tgt, y_rows))]
  _check_k(options.k, [(src, shapes[0][0]), (tgt, shapes[1][0])],
           "distinct sentences" if dedup else "embeddings")
  parts = _Parts(output)
  folders, indexes = None, None
  if options.faiss_string is not None:
    if jax.process_count() > 1:
      raise errors.ConfigError(
          "--index searches on one process: leave --distributed out (each "
          "index folder is written by one run).")
    folders = _index_folders(output, index_folders)
    indexes = _index_settings((src, tgt), (x_rows, y_rows), options,
                              index_folders)
  # Process 0 claims (and with `overwrite` clears) the output; the others
  # look at it only once that is done.
  if distributed.is_primary():
    files.claim_output(output, _settings(src, tgt, shapes, (x_lines, y_lines),
                                         options, indexes),
                       overwrite=overwrite, leftovers=(parts.dir,))
  distributed.barrier("mine.claimed")
  if os.path.exists(output):
    print(f"{output}: already mined with these settings", file=sys.stderr)
    parts.remove()  # left by a run killed after writing the TSV
    with open(output, "rb") as f:
      return sum(1 for _ in f)
  if folders is not None:
    fwd, bwd = _index_both_ways((src, tgt), (x_rows, y_rows), options,
                                folders, parts)
  else:
    fwd, bwd = BACKENDS[options.backend](
        _gathered(src.emb, x_rows), _gathered(tgt.emb, y_rows), options,
        (src.name, tgt.name), parts)
  pairs = margin.select(margin.from_neighbours(fwd, bwd,
                                               margin=options.margin),
                        options.retrieval, options.threshold)
  if dedup:
    pairs = margin.expand_pairs(pairs, x_lines, y_lines)
  if distributed.is_primary():
    _write_tsv(output, pairs, src.texts, tgt.texts)
  parts.remove()
  return len(pairs.score)


def index_files(emb: str, output: str, index: str, *, dim: int | None = None,
                fp16: bool = False, text: str | None = None,
                metric: str = "ip", train_sample: int | None = None,
                seed: int = 0, dedup: bool | None = None,
                overwrite: bool = False) -> dict:
  """`paraflax index`: the faiss index of one side's embedding files (a
  path or glob of shards) in the folder `output`, as `paraflax mine
  --index` builds it, to be reused (`--src-index` / `--tgt-index`). With
  `text`, each distinct sentence is indexed once, as mining deduplicates
  (`dedup` None: on when texts are given)."""
  spec = index_lib.Spec(index, metric, train_sample, seed)
  if index == index_lib.FLAT:
    raise errors.ConfigError(
        f"--index {index_lib.FLAT} is the exact search over the embedding "
        "files themselves: it has no index to build. Mine with --index "
        f"{index_lib.FLAT}, or give a faiss string such as 'IVF4096,PQ16'.")
  side = _load_side(emb, dim, fp16, text)
  dedup = side.texts is not None if dedup is None else dedup
  if dedup and side.texts is None:
    raise errors.ConfigError("--dedup needs --text: duplicates are found "
                             "by their sentence.")
  rows = _unique(side)[0] if dedup else None
  settings = index_lib.build(output, side.emb, spec,
                             shard_prints=side.shard_prints, rows=rows,
                             overwrite=overwrite)
  print(f"{output}: {settings['indexed']:,} rows of dim {settings['dim']} "
        f"in {index} ({metric}), {index_lib.memory_bytes(output):,} bytes",
        file=sys.stderr)
  return settings
