"""`paraflax mine`: embeddings in, margin-scored sentence pairs out.

load (`sides`; or embed: `inference.embedders.embed_sides`) -> deduplicate ->
k-NN both ways (`searches`: jax, one product for both; or a faiss index of
each side, `index_build`, `index_search`), resumable -> margin scores ->
candidate strategy -> TSV, written atomically.

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

import hashlib
import os
import sys
from collections.abc import Sequence

import jax
import numpy as np

from paraflax import errors
from paraflax import files
from paraflax.mining import embeddings_io
from paraflax.mining import index_build
from paraflax.mining import index_spec
from paraflax.mining import margin
from paraflax.mining.options import Options
from paraflax.mining import searches
from paraflax.mining import sides as sides_lib
from paraflax.training import distributed

_TSV_CHUNK = 100_000  # pairs formatted per write


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



def _gathered(emb, rows: np.ndarray | None):
  """The rows `rows` of `emb` (all when None), in memory for the jax and
  --backend faiss searches (one file stays memory-mapped)."""
  if rows is not None:
    return emb[rows]
  return np.asarray(emb) if isinstance(emb, embeddings_io.Shards) else emb


def _check_k(k: int, sides: Sequence[tuple[sides_lib.Side, int]],
             what: str) -> None:
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


def _settings(src: sides_lib.Side, tgt: sides_lib.Side,
              shapes: Sequence[tuple[int, int]],
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


def mine(src: sides_lib.Side, tgt: sides_lib.Side, options: Options,
         output: str, *,
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
      sides_lib.unique(s) if dedup else (None, None) for s in (src, tgt))
  shapes = [(len(s.emb) if r is None else len(r), s.emb.shape[1])
            for s, r in ((src, x_rows), (tgt, y_rows))]
  _check_k(options.k, [(src, shapes[0][0]), (tgt, shapes[1][0])],
           "distinct sentences" if dedup else "embeddings")
  parts = searches.Parts(output)
  folders, indexes = None, None
  if options.faiss_string is not None:
    if jax.process_count() > 1:
      raise errors.ConfigError(
          "--index searches on one process: leave --distributed out (each "
          "index folder is written by one run).")
    folders = searches.index_folders(output, index_folders)
    indexes = searches.index_settings((src, tgt), (x_rows, y_rows), options,
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
    fwd, bwd = searches.index_both_ways((src, tgt), (x_rows, y_rows), options,
                                        folders, parts)
  else:
    fwd, bwd = searches.BACKENDS[options.backend](
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
  spec = index_spec.Spec(index, metric, train_sample, seed)
  if index == index_spec.FLAT:
    raise errors.ConfigError(
        f"--index {index_spec.FLAT} is the exact search over the embedding "
        "files themselves: it has no index to build. Mine with --index "
        f"{index_spec.FLAT}, or give a faiss string such as 'IVF4096,PQ16'.")
  side = sides_lib.load_side(emb, dim, fp16, text)
  dedup = side.texts is not None if dedup is None else dedup
  if dedup and side.texts is None:
    raise errors.ConfigError("--dedup needs --text: duplicates are found "
                             "by their sentence.")
  rows = sides_lib.unique(side)[0] if dedup else None
  settings = index_build.build(output, side.emb, spec,
                               shard_prints=side.shard_prints, rows=rows,
                               overwrite=overwrite)
  print(f"{output}: {settings['indexed']:,} rows of dim {settings['dim']} "
        f"in {index} ({metric}), {index_build.memory_bytes(output):,} bytes",
        file=sys.stderr)
  return settings
