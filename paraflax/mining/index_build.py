"""Index folders: a faiss index (`index_spec.Spec`) of one side's
(sharded) embeddings, trained on a seeded sample of the rows, then
populated shard by shard. A folder holds:

  index.faiss.meta.json  what it is built from: the factory string, the
                         metric, the dimension, the embedding files'
                         fingerprints, the rows indexed, the sample
  trained.faiss          the trained, empty index
  parts/part-NNNNNN.faiss  the trained index holding shard N's rows
                         (fast-scan indexes, which faiss cannot merge
                         safely: parts/upto-NNNNNN.faiss, the index of the
                         first N shards)
  index.faiss            every part merged, in shard order; then the
                         trained index and the parts go

A killed build resumes from its last finished part and ends with the same
index as a build that was never stopped; a folder built from other
embeddings or settings is refused (`check`), never reused. Ids are
positions among the rows indexed, so a search returns what `knn.knn`
returns.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Sequence

import numpy as np

from paraflax import errors
from paraflax import faults
from paraflax import files
from paraflax.mining import embeddings_io
from paraflax.mining import index_spec

_faiss = index_spec.faiss_module  # imported on first use

_ADD_BLOCK = 65_536  # rows normalised and added at a time
INDEX_FILE = "index.faiss"


def _settings(spec: index_spec.Spec, dim: int,
              shard_prints: Sequence[str],
              rows_digest: str, rows: int, sample: int) -> dict:
  return {"factory": spec.factory, "metric": spec.metric, "dim": dim,
          "shards": list(shard_prints), "rows": rows_digest,
          "indexed": rows, "train_sample": sample, "seed": spec.seed,
          "format": "paraflax index folder 1"}


def rows_digest(rows: np.ndarray | None) -> str:
  return ("all" if rows is None
          else hashlib.sha256(np.asarray(rows, np.int64).tobytes()).hexdigest())


def _meta(folder: str) -> dict | None:
  path = files.settings_path(os.path.join(folder, INDEX_FILE))
  if not os.path.exists(path):
    return None
  with open(path, encoding="utf-8") as f:
    return json.load(f)


_WHAT = {"dim": "the embedding dimension", "metric": "the metric",
         "factory": "the index string", "shards": "the embedding files",
         "rows": "the rows indexed (deduplication)",
         "train_sample": "the training sample", "seed": "the sample's seed",
         "indexed": "the number of rows indexed"}


def check(folder: str, settings: dict) -> None:
  """Refuses an index folder built from other embeddings or settings,
  naming what differs. A folder that holds only the settings of a build
  that failed before its first result is not refused."""
  saved = _meta(folder)
  if saved is None or saved == settings or not files.holds_work(folder):
    return
  differs = [f"{_WHAT.get(key, key)} ({_shown(saved.get(key))} there, "
             f"{_shown(settings.get(key))} here)"
             for key in sorted(settings) if saved.get(key) != settings[key]]
  raise errors.ConfigError(
      f"{folder} is an index of other embeddings or settings: "
      f"{'; '.join(differs)}. Give the embeddings and settings it was built "
      "from, build a new index folder (paraflax index ... --output NEW), or "
      "pass --overwrite to rebuild it.")


def _shown(value) -> str:
  text = json.dumps(value)
  return text if len(text) <= 40 else f"{text[:37]}..."


def _write(index, path: str) -> None:
  data = _faiss().serialize_index(index)
  with files.atomic_output(path) as f:
    f.write(memoryview(data))


def read(path: str):
  return _faiss().read_index(path)


def _add(index, emb, rows: np.ndarray | None, start: int, stop: int,
         first_id: int) -> None:
  """Adds rows [start, stop) of `emb` (of those in `rows`, when given),
  with ids from first_id on."""
  take = (np.arange(start, stop) if rows is None
          else rows[(rows >= start) & (rows < stop)])
  ivf = index_spec.ivf(index) is not None
  for at in range(0, len(take), _ADD_BLOCK):
    chunk = take[at:at + _ADD_BLOCK]
    vectors = index_spec.unit(emb[chunk[0]:chunk[-1] + 1] if rows is None
                              else emb[chunk])
    if ivf:
      ids = np.arange(first_id + at, first_id + at + len(chunk), dtype=np.int64)
      index.add_with_ids(vectors, ids)
    else:  # flat codes: ids are positions, and parts merge in order
      index.add(vectors)


def _merge(index, part) -> None:
  ivf = index_spec.ivf(index)
  if ivf is None:
    _faiss().downcast_index(index).merge_from(_faiss().downcast_index(part))
    return
  ivf.merge_from(index_spec.ivf(part), 0)
  index.ntotal = ivf.ntotal  # a wrapper (OPQ's IndexPreTransform) counts too


def shard_bounds(emb) -> list[tuple[int, int]]:
  """Each shard's rows [start, stop) of `emb`; one file is one shard."""
  if isinstance(emb, embeddings_io.Shards):
    return [emb.shard_rows(i) for i in range(len(emb.parts))]
  return [(0, len(emb))]


def planned(emb, spec: index_spec.Spec, shard_prints: Sequence[str],
            rows: np.ndarray | None = None) -> dict:
  """The settings an index of `emb`'s rows (those in `rows`) will have;
  refuses a factory string faiss cannot build, before any work."""
  dim = emb.shape[1]
  total = len(emb) if rows is None else len(rows)
  index = index_spec.new_index(spec, dim)
  sample = min(spec.train_sample
               or index_spec.default_sample(spec, dim, total), total)
  index_spec.check_sample(spec, index, sample, total)
  return _settings(spec, dim, shard_prints, rows_digest(rows), total, sample)


def build(folder: str, emb, spec: index_spec.Spec, *,
          shard_prints: Sequence[str],
          rows: np.ndarray | None = None, overwrite: bool = False,
          progress: bool = True) -> dict:
  """Builds (or resumes, or finds built) the index of `emb`'s rows (those
  in `rows`, sorted, when given) in `folder`; its settings.

  Parts are saved shard by shard: a killed build resumes from the last
  finished one. A folder of other settings is refused (`check`) unless
  `overwrite`.
  """
  settings = planned(emb, spec, shard_prints, rows)
  total, sample = settings["indexed"], settings["train_sample"]
  index = index_spec.new_index(spec, emb.shape[1])
  if not overwrite:
    check(folder, settings)
  final = os.path.join(folder, INDEX_FILE)
  trained_path = os.path.join(folder, "trained.faiss")
  parts_dir = os.path.join(folder, "parts")
  files.claim_output(final, settings, overwrite=overwrite,
                     leftovers=(trained_path, parts_dir))
  if os.path.exists(final):
    return settings
  say = (lambda text: print(f"{folder}: {text}", file=sys.stderr)
         ) if progress else (lambda text: None)
  if os.path.exists(trained_path):
    trained = read(trained_path)
  else:
    picked = np.sort(np.random.default_rng(spec.seed).choice(
        total, sample, replace=False))
    say(f"training {spec.factory} ({spec.metric}) on {sample:,} of "
        f"{total:,} rows")
    with index_spec.training(spec):
      index.train(index_spec.unit(
          emb[picked if rows is None else rows[picked]]))
    _write(index, trained_path)
    trained = index
  os.makedirs(parts_dir, exist_ok=True)
  bounds = shard_bounds(emb)
  first_ids = np.cumsum([0] + [
      (stop - start) if rows is None
      else int(np.count_nonzero((rows >= start) & (rows < stop)))
      for start, stop in bounds])
  if _fast_scan(trained):
    merged = _add_in_place(trained, emb, rows, bounds, first_ids, parts_dir,
                           say)
  else:
    merged = _add_parts(trained, emb, rows, bounds, first_ids, parts_dir,
                        say)
  _write(merged, final)
  os.remove(trained_path)
  shutil.rmtree(parts_dir)
  say(f"{merged.ntotal:,} rows indexed")
  return settings


def _fast_scan(index) -> bool:
  """Whether `index` keeps its IVF lists in fast-scan blocks, which
  faiss's merge_from corrupts past a few hundred thousand rows (faiss
  1.15.1, `IVF4096_HNSW32,PQ16x4fs`: heap corruption at 700,000)."""
  ivf = index_spec.ivf(index)
  return ivf is not None and isinstance(_faiss().downcast_index(ivf),
                                        _faiss().IndexIVFFastScan)


def _add_parts(trained, emb, rows, bounds, first_ids, parts_dir, say):
  """Each shard into its own copy of the trained index, saved as a part,
  then the parts merged in shard order."""
  paths = [os.path.join(parts_dir, f"part-{i:06d}.faiss")
           for i in range(len(bounds))]
  for i, (start, stop) in enumerate(bounds):
    if os.path.exists(paths[i]):
      continue
    part = _faiss().clone_index(trained)
    _add(part, emb, rows, start, stop, int(first_ids[i]))
    _write(part, paths[i])
    say(f"shard {i + 1} of {len(bounds)} added ({part.ntotal:,} rows)")
    faults.moment("index.part")
  merged = _faiss().clone_index(trained)
  for path in paths:
    _merge(merged, read(path))
  return merged


def _add_in_place(trained, emb, rows, bounds, first_ids, parts_dir, say):
  """Every shard into one index, which is saved whole after each shard
  (`parts/upto-NNNNNN.faiss`, the previous one then removed): for indexes
  that cannot be merged. Rows go in in the same order as with parts."""
  done = sorted(name for name in os.listdir(parts_dir)
                if name.startswith("upto-"))
  index = (read(os.path.join(parts_dir, done[-1])) if done
           else _faiss().clone_index(trained))
  first = int(done[-1][5:11]) if done else 0
  for i in range(first, len(bounds)):
    start, stop = bounds[i]
    _add(index, emb, rows, start, stop, int(first_ids[i]))
    path = os.path.join(parts_dir, f"upto-{i + 1:06d}.faiss")
    _write(index, path)
    for name in done:
      os.remove(os.path.join(parts_dir, name))
    done = [os.path.basename(path)]
    say(f"shard {i + 1} of {len(bounds)} added ({index.ntotal:,} rows)")
    faults.moment("index.part")
  return index


def settings_of(folder: str) -> dict:
  """The settings of a finished index folder, or a DataError."""
  saved = _meta(folder)
  if saved is None or not os.path.exists(os.path.join(folder, INDEX_FILE)):
    raise errors.DataError(
        f"{folder}: not a finished index folder (no {INDEX_FILE}); build it "
        "with paraflax index, or rerun that command to finish it.")
  return saved


def memory_bytes(folder: str) -> int:
  """The size of the finished index: what a search holds in memory."""
  return os.path.getsize(os.path.join(folder, INDEX_FILE))
