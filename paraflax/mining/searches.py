"""The k-NN both ways that `mine` scores, by each backend, resumable:
jax (one product for both directions, `knn.both_ways_blocks`), faiss
(`--backend faiss`, each direction on its own) or a faiss index of each
side (`--index`, built first or found built). Finished query blocks are
kept in `OUT.parts/` and loaded, not searched again, by a rerun.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Collection, Iterator, Sequence

import numpy as np
import tqdm

from paraflax import files
from paraflax.mining import device_index
from paraflax.mining import index_build
from paraflax.mining import index_search
from paraflax.mining import knn
from paraflax.mining.options import Options
from paraflax.mining import sides as sides_lib
from paraflax.training import distributed


class Parts:
  """Finished k-NN blocks of one run, kept until its output is written;
  `OUT.meta.json` says which run."""

  def __init__(self, output: str):
    self.dir = output + ".parts"

  def _path(self, kind: str, b: int) -> str:
    return os.path.join(self.dir, f"{kind}-{b:06d}.npz")

  def load(self, kind: str, total: int) -> dict[int, dict[str, np.ndarray]]:
    done = {}
    for b in range(total):
      if (part := self.load_one(kind, b)) is not None:
        done[b] = part
    return done

  def load_one(self, kind: str, b: int) -> dict[str, np.ndarray] | None:
    if not os.path.exists(self._path(kind, b)):
      return None
    with np.load(self._path(kind, b)) as part:
      return dict(part)

  def save(self, kind: str, b: int, **arrays: np.ndarray) -> None:
    if not distributed.is_primary():  # every process holds the same arrays
      return
    with files.atomic_output(self._path(kind, b)) as f:
      np.savez(f, **arrays)

  def discard(self, kind: str, b: int) -> None:
    if distributed.is_primary() and os.path.exists(self._path(kind, b)):
      os.remove(self._path(kind, b))

  def remove(self) -> None:
    if distributed.is_primary() and os.path.isdir(self.dir):
      shutil.rmtree(self.dir)  # absent when nothing was saved


def resumed(kind: str, total: int, parts: Parts,
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
                   names: tuple[str, str], parts: Parts
                   ) -> tuple[knn.Neighbours, knn.Neighbours]:
  """Both directions from one pass over x blocks (`knn.both_ways_blocks`):
  a part holds the block's x neighbours, and the y rows' running top-k
  through the last finished block is kept beside it alone (saved before
  the part, the one before removed after: a kill between leaves the
  previous one). A rerun goes on after the first blocks found."""
  total = knn.num_blocks(len(x), options.block)
  done = parts.load("both", total)
  start = next(b for b in range(total + 1) if b not in done)
  saved = parts.load_one("columns", start - 1) if start else None
  columns = saved and (saved["sims"], saved["idx"])
  if start and columns is None:  # parts of a run that kept no columns
    start = 0
  found = knn.both_ways_blocks(
      x, y, options.k, block=options.block, names=names, skip=start,
      columns_from=columns, recall_target=options.recall_target)
  with tqdm.tqdm(total=total, initial=start, unit="block", desc="k-NN both",
                 dynamic_ncols=True) as progress:
    for b, sims, idx, col_sims, col_idx in found:
      parts.save("columns", b, sims=col_sims, idx=col_idx)
      parts.save("both", b, sims=sims, idx=idx)
      parts.discard("columns", b - 1)
      done[b], columns = {"sims": sims, "idx": idx}, (col_sims, col_idx)
      progress.update()
  return _rows([done[b] for b in range(total)]), columns


def _faiss_neighbours(direction: str, queries: np.ndarray,
                      corpus: np.ndarray, names: tuple[str, str],
                      options: Options, parts: Parts) -> knn.Neighbours:
  from paraflax.mining import faiss_knn  # pylint: disable=g-import-not-at-top

  def blocks(skip):
    found = faiss_knn.knn_blocks(
        queries, corpus, options.k, block=options.block,
        index=options.faiss_index, nlist=options.nlist,
        nprobe=options.nprobe, names=names, skip=skip)
    return ((b, {"sims": sims, "idx": idx}) for b, sims, idx in found)

  return _rows(resumed(
      direction, knn.num_blocks(len(queries), options.block), parts, blocks))


def _faiss_both_ways(x: np.ndarray, y: np.ndarray, options: Options,
                     names: tuple[str, str], parts: Parts
                     ) -> tuple[knn.Neighbours, knn.Neighbours]:
  """faiss searches each direction on its own."""
  return (_faiss_neighbours("fwd", x, y, names, options, parts),
          _faiss_neighbours("bwd", y, x, names[::-1], options, parts))


def index_folders(output: str, folders: Sequence[str | None]
                   ) -> tuple[str, str]:
  """The given index folders; the missing ones are built in the parts
  folder and go with it."""
  return tuple(folder or os.path.join(Parts(output).dir, f"index-{side}")
               for folder, side in zip(folders, ("src", "tgt")))


def index_settings(sides: Sequence[sides_lib.Side],
                   rows: Sequence[np.ndarray | None],
                    options: Options, given: Sequence[str | None]
                    ) -> list[dict]:
  """The settings of each side's index; a given folder built otherwise is
  refused here, before anything is written (those in the parts folder go
  with the output's other settings)."""
  planned = []
  for side, side_rows, folder in zip(sides, rows, given):
    settings = index_build.planned(side.emb, options.spec, side.shard_prints,
                                   side_rows)
    if folder is not None:
      index_build.check(folder, settings)
    planned.append(settings)
  return planned


def index_both_ways(sides: tuple[sides_lib.Side, sides_lib.Side],
                    rows: tuple[np.ndarray | None, np.ndarray | None],
                    options: Options, folders: tuple[str, str],
                    parts: Parts
                    ) -> tuple[knn.Neighbours, knn.Neighbours]:
  """x searched in y's index and y in x's (each built first, or found
  built), query block by query block, resumable; rerank from the
  embeddings (`index.search_blocks`)."""
  views = [index_search.Rows(s.emb, r) for s, r in zip(sides, rows)]
  found = []
  for direction, (q, c) in (("fwd", (0, 1)), ("bwd", (1, 0))):
    corpus_side = sides[c]
    index_build.build(folders[c], corpus_side.emb, options.spec,
                      shard_prints=corpus_side.shard_prints, rows=rows[c])

    def blocks(skip, q=q, c=c):
      todo = [b for b in range(knn.num_blocks(len(views[q]), options.block))
              if b not in skip]
      if not todo:
        return iter(())
      index = index_search.load(folders[c], options.nprobe,
                                gpu=options.faiss_gpu)
      if options.index_on_devices:
        index = device_index.DeviceIndex(index, options.metric,
                                         options.block)
      searched = index_search.search_blocks(
          index, options.metric, views[q], views[c], options.k,
          rerank=options.rerank, block=options.block, todo=todo,
          name=sides[q].name)
      return ((b, {"sims": sims, "idx": idx}) for b, sims, idx in searched)

    found.append(_rows(resumed(
        direction, knn.num_blocks(len(views[q]), options.block), parts,
        blocks)))
  return found[0], found[1]


BothWays = Callable[..., tuple[knn.Neighbours, knn.Neighbours]]
BACKENDS: dict[str, BothWays] = {"jax": _jax_both_ways,
                                 "faiss": _faiss_both_ways}
