"""Saved faiss indexes over (sharded) embeddings, for approximate mining.

An index is described by a faiss factory string ("OPQ64,IVF65536,PQ64",
"IVF4096,PQ16x4fs", "IVF1024,Flat", "SQ8", ...) and a metric; it is
trained on a seeded sample of the rows, then populated shard by shard.
An index folder holds:

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
embeddings or settings is refused (`check`), never reused.

Vectors are L2-normalised, so `ip` (inner product) similarities are
cosines and `l2` distances d give cosines 1 - d / 2. Ids are positions
among the rows indexed, so a search returns what `knn.knn` returns.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import shutil
import sys
from collections.abc import Collection, Iterator, Sequence

import numpy as np

from paraflax import errors
from paraflax import faults
from paraflax import files
from paraflax.mining import embeddings_io

FLAT = "Flat"  # exact search: the blocked jax kernel, no faiss index
METRICS = ("ip", "l2")
_EPS = 1e-8  # as vectors.normalize: zero rows stay zero
_ADD_BLOCK = 65_536  # rows normalised and added at a time
INDEX_FILE = "index.faiss"


def _faiss():
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
  faiss = _faiss()
  return {"ip": faiss.METRIC_INNER_PRODUCT, "l2": faiss.METRIC_L2}[name]


def new_index(spec: Spec, dim: int):
  """The untrained faiss index of `spec`, or a ConfigError that says why
  faiss cannot make it, or why it cannot be built shard by shard."""
  faiss = _faiss()
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
  for part in (index, _ivf(index)):
    if part is not None and hasattr(faiss.downcast_index(part),
                                    "do_polysemous_training"):
      faiss.downcast_index(part).do_polysemous_training = False
  if _ivf(index) is None and not isinstance(faiss.downcast_index(index),
                                            faiss.IndexFlatCodes):
    raise errors.ConfigError(
        f"--index {spec.factory!r}: a {type(faiss.downcast_index(index)).__name__}"
        " cannot be filled shard by shard and merged; use an IVF index "
        "('IVF4096,PQ16', 'OPQ64,IVF65536,PQ64') or a flat-code one "
        "('PQ16', 'SQ8').")
  return index


def _ivf(index):
  faiss = _faiss()
  try:
    return faiss.extract_index_ivf(index)
  except RuntimeError:
    return None


def nlist(spec: Spec, dim: int) -> int | None:
  """The IVF clusters of `spec`; None for indexes without clusters."""
  ivf = _ivf(new_index(spec, dim))
  return None if ivf is None else ivf.nlist


def default_sample(spec: Spec, dim: int, rows: int) -> int:
  """Rows to train on: 64 per IVF cluster and at least 10,000 (a PQ's 256
  centroids per sub-quantizer want about 40 points each), at most all."""
  lists = nlist(spec, dim) or 1
  return min(rows, max(64 * lists, 10_000))


# --- The folder ---------------------------------------------------------------


def _settings(spec: Spec, dim: int, shard_prints: Sequence[str],
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
  naming what differs."""
  saved = _meta(folder)
  if saved is None or saved == settings:
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


def _read(path: str):
  return _faiss().read_index(path)


def _add(index, emb, rows: np.ndarray | None, start: int, stop: int,
         first_id: int) -> None:
  """Adds rows [start, stop) of `emb` (of those in `rows`, when given),
  with ids from first_id on."""
  take = (np.arange(start, stop) if rows is None
          else rows[(rows >= start) & (rows < stop)])
  ivf = _ivf(index) is not None
  for at in range(0, len(take), _ADD_BLOCK):
    chunk = take[at:at + _ADD_BLOCK]
    vectors = unit(emb[chunk[0]:chunk[-1] + 1] if rows is None else emb[chunk])
    if ivf:
      ids = np.arange(first_id + at, first_id + at + len(chunk), dtype=np.int64)
      index.add_with_ids(vectors, ids)
    else:  # flat codes: ids are positions, and parts merge in order
      index.add(vectors)


def _merge(index, part) -> None:
  ivf = _ivf(index)
  if ivf is None:
    _faiss().downcast_index(index).merge_from(_faiss().downcast_index(part))
    return
  ivf.merge_from(_ivf(part), 0)
  index.ntotal = ivf.ntotal  # a wrapper (OPQ's IndexPreTransform) counts too


def shard_bounds(emb) -> list[tuple[int, int]]:
  """Each shard's rows [start, stop) of `emb`; one file is one shard."""
  if isinstance(emb, embeddings_io.Shards):
    return [emb.shard_rows(i) for i in range(len(emb.parts))]
  return [(0, len(emb))]


def planned(emb, spec: Spec, shard_prints: Sequence[str],
            rows: np.ndarray | None = None) -> dict:
  """The settings an index of `emb`'s rows (those in `rows`) will have;
  refuses a factory string faiss cannot build, before any work."""
  dim = emb.shape[1]
  total = len(emb) if rows is None else len(rows)
  new_index(spec, dim)
  sample = min(spec.train_sample or default_sample(spec, dim, total), total)
  return _settings(spec, dim, shard_prints, rows_digest(rows), total, sample)


def build(folder: str, emb, spec: Spec, *, shard_prints: Sequence[str],
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
  index = new_index(spec, emb.shape[1])
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
    trained = _read(trained_path)
  else:
    picked = np.sort(np.random.default_rng(spec.seed).choice(
        total, sample, replace=False))
    say(f"training {spec.factory} ({spec.metric}) on {sample:,} of "
        f"{total:,} rows")
    index.train(unit(emb[picked if rows is None else rows[picked]]))
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
  ivf = _ivf(index)
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
    _merge(merged, _read(path))
  return merged


def _add_in_place(trained, emb, rows, bounds, first_ids, parts_dir, say):
  """Every shard into one index, which is saved whole after each shard
  (`parts/upto-NNNNNN.faiss`, the previous one then removed): for indexes
  that cannot be merged. Rows go in in the same order as with parts."""
  done = sorted(name for name in os.listdir(parts_dir)
                if name.startswith("upto-"))
  index = (_read(os.path.join(parts_dir, done[-1])) if done
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


# --- Search -------------------------------------------------------------------


def load(folder: str, nprobe: int, *, gpu: bool | None = None):
  """The finished index of `folder`, searching `nprobe` clusters (IVF), on
  every GPU faiss sees when `gpu` (None: when faiss has GPUs) in float16,
  the rows sharded over them."""
  if nprobe < 1:
    raise errors.ConfigError(f"--nprobe {nprobe}: use a positive value.")
  faiss = _faiss()
  index = _read(os.path.join(folder, INDEX_FILE))
  ivf = _ivf(index)
  if ivf is not None:
    ivf.nprobe = min(nprobe, ivf.nlist)
  gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
  if gpu and not gpus:
    raise errors.ConfigError("--faiss-gpu: this faiss sees no GPU (install "
                             "faiss-gpu, or leave the flag out).")
  if gpus and gpu is not False:  # faiss-gpu only; not run where none is
    options = faiss.GpuMultipleClonerOptions()
    options.useFloat16 = True
    options.shard = True
    index = faiss.index_cpu_to_all_gpus(index, options)
    if ivf is not None:
      faiss.GpuParameterSpace().set_index_parameter(index, "nprobe",
                                                    min(nprobe, ivf.nlist))
  return index


def to_cosine(values: np.ndarray, metric: str) -> np.ndarray:
  return values if metric == "ip" else 1 - values / 2


class Rows:
  """The rows `rows` of `emb` (all when None) as a matrix to slice and
  gather, read only when asked for."""

  def __init__(self, emb, rows: np.ndarray | None):
    self.emb, self.rows = emb, rows
    self.shape = (len(emb) if rows is None else len(rows), emb.shape[1])

  def __len__(self) -> int:
    return self.shape[0]

  def __getitem__(self, key):
    return self.emb[key] if self.rows is None else self.emb[self.rows[key]]


def search_blocks(index, metric: str, queries, corpus, k: int,
                  *, rerank: int, block: int, todo: Collection[int],
                  name: str) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
  """(b, cosines [rows, k] descending, ids [rows, k]) of query rows [b *
  block, (b + 1) * block) for b in `todo`, as `knn.knn_blocks`.

  With `rerank` > 0, the index's best max(k, rerank) candidates are scored
  again with exact cosines from `corpus` (a `Rows`: row i is id i), read
  where they lie, and the k best kept; ties go to the lower id.
  """
  wanted = min(max(k, rerank), index.ntotal)
  for b in sorted(todo):
    q = unit(queries[b * block:(b + 1) * block])
    values, ids = index.search(q, wanted)
    ok = ids >= 0
    if rerank:
      safe = np.where(ok, ids, 0)
      found = unit(corpus[safe.ravel()]).reshape(*safe.shape, -1)
      cos = np.einsum("qd,qkd->qk", q, found)
    else:
      cos = to_cosine(values, metric).astype(np.float32)
    cos = np.where(ok, cos, -np.inf)
    order = np.lexsort((ids, -cos), axis=1)[:, :k]
    cos = np.take_along_axis(cos, order, axis=1)
    ids = np.take_along_axis(ids, order, axis=1)
    short = np.flatnonzero(~np.isfinite(cos[:, -1]))
    if short.size:
      raise errors.ConfigError(
          f"the index found fewer than k={k} neighbours for {name} row "
          f"{b * block + short[0]} (0-based) and {short.size - 1} more in "
          "its block: the probed clusters hold too few rows. Raise --nprobe "
          "or use fewer IVF clusters.")
    yield b, cos.astype(np.float32), ids.astype(np.int32)


def memory_bytes(folder: str) -> int:
  """The size of the finished index: what a search holds in memory."""
  return os.path.getsize(os.path.join(folder, INDEX_FILE))


def code_bytes_per_row(spec: Spec, dim: int) -> float:
  """Bytes per indexed row of the index's codes (ids of IVF lists apart)."""
  index = new_index(spec, dim)
  return float(getattr(_faiss().downcast_index(
      _ivf(index) or index), "code_size", math.nan))
