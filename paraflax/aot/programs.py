"""The programs `paraflax compile` can compile, by name.

Each builder returns `Program`s: the jitted function the real command
runs, its abstract arguments (shapes, dtypes and shardings over the
mesh), and what one call of it stands for (a train step; a batch of
searches; a query block of mining; a chunk of LSH events).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import jax
import ml_collections
import numpy as np

from paraflax import errors
from paraflax.aot import shapes
from paraflax.aot import train_programs


@dataclasses.dataclass
class Program:
  name: str
  fn: Any  # jitted
  args: tuple
  width: int | None  # padded sequence width; None: no sequences
  unit: str  # what one call is: "train step", "search batch", ...
  batch_rows: int  # global rows one call takes
  while_trips: int = 1  # bound on a while loop's iterations (searches)
  parameter_bytes: int = 0
  widths_run: list[int] = dataclasses.field(default_factory=list)
  resident: str = "parameters"  # what parameter_bytes holds
  feeds_back: bool = False  # the first output is the next call's first arg


def _struct(a, sharding) -> jax.ShapeDtypeStruct:
  return jax.ShapeDtypeStruct(np.shape(a), getattr(a, "dtype", np.float32),
                              sharding=sharding)


def _shaped(shape: tuple[int, ...], dtype, sharding) -> jax.ShapeDtypeStruct:
  """An abstract array of any size: nothing is allocated."""
  return jax.ShapeDtypeStruct(shape, np.dtype(dtype), sharding=sharding)


def _nbytes(tree) -> int:
  return sum(math.prod(a.shape) * np.dtype(a.dtype).itemsize
             for a in jax.tree.leaves(tree))


def _pick(widths: list[int], width: str) -> list[int]:
  if width == "all":
    return widths
  if width == "max":
    return widths[-1:]
  if not width.isdigit() or int(width) not in widths:
    raise errors.ConfigError(
        f"--width {width}: use max, all or one of the widths this config "
        f"pads to ({', '.join(map(str, widths))}).")
  return [int(width)]


def _abstract_state(recipe, config, mesh):
  from paraflax.training import loop  # pylint: disable=g-import-not-at-top
  abstract, shardings = loop.state_shardings(recipe, config, mesh)
  return jax.tree.map(_struct, abstract, shardings), shardings


def train(config, mesh, options: dict) -> list[Program]:
  """The recipe's train step at each width (`options["width"]`)."""
  from paraflax.training import loop  # pylint: disable=g-import-not-at-top
  from paraflax.training import partitioning  # pylint: disable=g-import-not-at-top
  build = train_programs.builder(config)
  run = train_programs.widths(config)
  out = []
  for width in _pick(run, options["width"]) if run != [0] else [0]:
    recipe, batch = build(config, mesh, width, options["assume"])
    state, shardings = _abstract_state(recipe, config, mesh)
    split = partitioning.batch_sharding(mesh, recipe.batch_axis)
    first = batch[next(iter(batch))]
    rows = first.shape[recipe.batch_axis]
    if rows % mesh.size:
      raise errors.ConfigError(
          f"batch_size={config.batch_size} gives batches of {rows} rows, "
          f"which do not split over {mesh.size} chips: set "
          f"--config.batch_size to a multiple of {mesh.size}.")
    key = jax.ShapeDtypeStruct((), jax.random.key(0).dtype,
                               sharding=partitioning.replicated(mesh))
    out.append(Program(
        f"train {config.recipe}", loop.jit_train_step(recipe, mesh,
                                                      shardings),
        (state, {k: _struct(v, split) for k, v in batch.items()}, key),
        # Every row a step takes: a megabatch's mini-batches too.
        width or None, "train step",
        math.prod(first.shape[:recipe.batch_axis + 1]),
        parameter_bytes=_nbytes(state["params"]), widths_run=run,
        feeds_back=True))
  return out


def _params(recipe, config, mesh):
  from paraflax.training import partitioning  # pylint: disable=g-import-not-at-top
  abstract = jax.eval_shape(recipe.init_state, jax.random.key(0))["params"]
  return jax.tree.map(lambda a: _struct(a, partitioning.replicated(mesh)),
                      abstract)


def _rows(batch: int, mesh) -> int:
  from paraflax.data import batching  # pylint: disable=g-import-not-at-top
  return batching.round_up(batch, mesh.size)


def search(config, mesh, options: dict) -> list[Program]:
  """The NMT's beam search (translate, backtranslate) per width."""
  from paraflax.data import bitext  # pylint: disable=g-import-not-at-top
  from paraflax.training import partitioning  # pylint: disable=g-import-not-at-top
  if config.get("recipe") != "nmt":
    raise errors.ConfigError("--program translate / backtranslate compiles "
                             "an NMT config's beam search (configs/nmt.py).")
  recipe, _ = train_programs.BUILDERS["nmt"](config, mesh, 8, {})
  params = _params(recipe, config, mesh)
  beam, nbest = options["beam"], options["nbest"] or 1
  fn = recipe.translator.search_fn(beam, config.decode.alpha, "exact", nbest)
  rows, split = _rows(options["batch_size"], mesh), \
      partitioning.batch_sharding(mesh, 0)
  run = shapes.widths(config.data.max_len, bitext.width_multiple(config))
  out = []
  for width in _pick(run, options["width"]):
    limit = config.decode.max_output
    if config.decode.max_output_ratio > 0:
      limit = min(limit, math.ceil(config.decode.max_output_ratio * width)
                  + config.decode.max_output_plus)
    out.append(Program(
        f"beam search (beam {beam}, n-best {nbest})", fn,
        (params, _struct(np.zeros((rows, width), np.int32), split),
         _struct(np.zeros(rows, np.int32), split)), width, "search batch",
        rows, while_trips=limit, parameter_bytes=_nbytes(params),
        widths_run=run))
  return out


def embed(config, mesh, options: dict) -> list[Program]:
  """A trained model's embedder (bilingual or paraphrase) per width."""
  from paraflax.training import partitioning  # pylint: disable=g-import-not-at-top
  recipe_name = config.get("recipe")
  if recipe_name not in ("bilingual", "paraphrase"):
    raise errors.ConfigError("--program embed compiles a bilingual or "
                             "paraphrase config's encoder.")
  recipe, _ = train_programs.BUILDERS[recipe_name](
      config, mesh, 8, options["assume"])
  params = _params(recipe, config, mesh)
  if recipe_name == "bilingual":
    fn = recipe.embedder._apply["src"]  # pylint: disable=protected-access
  else:
    fn = jax.jit(recipe.embedder._apply)  # pylint: disable=protected-access
  rows, split = _rows(options["batch_size"], mesh), \
      partitioning.batch_sharding(mesh, 0)
  run = train_programs.widths(config)
  return [Program(f"embed {recipe_name}", fn, (
      params, _struct(np.zeros((rows, width), np.int32), split),
      _struct(np.zeros(rows, np.int32), split)), width, "embed batch", rows,
                  parameter_bytes=_nbytes(params), widths_run=run)
          for width in _pick(run, options["width"])]


def mine(config, mesh, options: dict) -> list[Program]:
  """One query block of exact k-NN against a sharded corpus, both ways
  (the block's rows and the corpus rows' top-k over the block); with
  options["pq"] = M the corpus is a product quantizer's codes, M bytes a
  row, decoded block by block (`paraflax mine --index-on-devices`)."""
  from paraflax.mining import knn  # pylint: disable=g-import-not-at-top
  from paraflax.mining import tile_top_k  # pylint: disable=g-import-not-at-top
  from paraflax.training import partitioning  # pylint: disable=g-import-not-at-top
  k, block = config.get("k", 4), config.get("block", 8192)
  rows, dim, pq = options["rows"], options["dim"], options.get("pq", 0)
  if pq and dim % pq:
    raise errors.ConfigError(f"--pq {pq} does not divide --dim {dim}: a "
                             "row's M subvectors split its dimension.")
  corpus_block, padded = knn.corpus_layout(rows, k, block, mesh.size)
  query_block = tile_top_k.tile_rows(min(block, rows), k)
  dtype = np.float16 if options["fp16"] else np.float32
  replicated = partitioning.replicated(mesh)
  fn = knn._searcher(mesh, k, corpus_block, columns=True,  # pylint: disable=protected-access
                     recall_target=config.get("recall_target"),
                     decoded=bool(pq))
  scalar = _struct(np.int32(0), replicated)
  corpus = ((padded, pq), np.uint8) if pq else ((padded, dim), dtype)
  books = ((_shaped((pq, 256, dim // pq), np.float32, replicated),)
           if pq else ())
  return [Program(
      f"k-NN both ways (k {k}, {rows:,} x {dim} corpus rows"
      + (f", PQ{pq} codes)" if pq else ")"), fn,
      (_shaped((query_block, dim), dtype, replicated),
       _shaped(*corpus, partitioning.batch_sharding(mesh, 0)),
       scalar, scalar, *books),
      None, "query block", query_block,
      parameter_bytes=math.prod(corpus[0]) * np.dtype(corpus[1]).itemsize,
      resident="the corpus, over all chips")]


def monods(config, mesh, options: dict) -> list[Program]:
  """One chunk of LSH events added to the phrases' signature sums."""
  from jax.sharding import NamedSharding, PartitionSpec as P  # pylint: disable=g-import-not-at-top
  from paraflax.domain import lsh  # pylint: disable=g-import-not-at-top
  from paraflax.training import partitioning  # pylint: disable=g-import-not-at-top
  settings = config.monods if "monods" in config else config
  bits, pool_bits = settings.bits, settings.pool_bits
  chunk = settings.chunk_events
  padded = -(-bits // mesh.size) * mesh.size
  replicated = partitioning.replicated(mesh)
  by_bits = NamedSharding(mesh, P(partitioning.DATA))
  phrases = options["rows"]
  sums = _shaped((phrases + 1, padded), np.float32,
                 NamedSharding(mesh, P(None, partitioning.DATA)))
  events = [_struct(np.zeros(chunk, t), replicated)
            for t in (np.int32, np.int32, np.uint32, np.int32)]
  fn = lsh._stepper(mesh, 32 - pool_bits)  # pylint: disable=protected-access
  return [Program(
      f"LSH signature sums ({bits} bits, {phrases:,} phrases)", fn,
      (sums, _struct(np.zeros(2**pool_bits, np.float32), replicated),
       _struct(np.zeros(padded, np.uint32), by_bits),
       _struct(np.zeros(padded, np.uint32), by_bits), *events), None,
      "event chunk", chunk,
      parameter_bytes=(phrases + 1) * padded * 4,
      resident="the signature sums, over all chips", feeds_back=True)]


PROGRAMS: dict[str, Callable[[ml_collections.ConfigDict, Any, dict],
                             list[Program]]] = {
    "train": train, "translate": search, "backtranslate": search,
    "embed": embed, "mine": mine, "monods": monods}
