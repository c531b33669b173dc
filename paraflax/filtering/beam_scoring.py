"""`paraflax beam-score`: `score-paraphrases` (and the filter of a filtered
`backtranslated:` Task) as an Apache Beam pipeline, for inputs that
outgrow one machine.

The driver surveys the input as the in-process command does (every line
checked, so bad input stops before anything is written; the records'
digest names the input in the output's settings) and cuts it into blocks
of `score_paraphrases.BLOCK` records by byte offset. The pipeline is
`Create(blocks)` -> one DoFn per block that reads its byte range, scores
it with `score_paraphrases.lines_of` (the in-process code) and writes the
block's part file whole (a temporary name, then a rename, through Beam's
`FileSystems`, so the parts may live on gs://). A block whose part exists
is skipped: a run killed anywhere, or a bundle retried by the runner,
redoes only missing blocks. The driver then concatenates the parts in
block order into the output, atomically: the bytes of the in-process path.

With `--filter` / `--max-pairs` the pipeline goes on: each block lists
its 1-best pairs whose score lies in the bounds, one step draws
`max_pairs` of them with `filters.draw` (the Task's own draw), and each
block writes its drawn records; the filtered output holds exactly the
pairs of the Task `backtranslated:OUTPUT` with `data.filter` and
`data.max_pairs`, as whole scored records in file order.

apache_beam is imported when the command runs (`paraflax --help` stays
light); the block scorers are rebuilt in each worker's `setup` from a
picklable factory (`make_scorers`), never shipped as loaded models.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from paraflax import errors
from paraflax import faults
from paraflax import files
from paraflax.data import jsonl
from paraflax.data import shards
from paraflax.filtering import score_paraphrases
from paraflax.filtering import scores

Scorers = Callable[[], Sequence[scores.BlockScorer]]
_GZIP_MAGIC = b"\x1f\x8b"
_METRICS = "paraflax"  # the Beam metrics namespace of the counters below


class Block(NamedTuple):
  """Block `index` of `of`: the `size` records on the lines from `first`
  (1-based, of the input's shards read as one), the bytes [start, end) of
  the (decompressed) text of `path` (default: the input), whose line
  `line` (default: `first`) is the block's first."""
  index: int
  of: int
  first: int
  size: int
  start: int
  end: int
  path: str = ""
  line: int = 0


def _open(path: str) -> io.BufferedIOBase:
  """`path` through Beam's FileSystems (local, gs://, hdfs://), gunzipped
  when its first bytes say gzip, as `readers` decides."""
  from apache_beam.io.filesystem import CompressionTypes  # pylint: disable=g-import-not-at-top
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
  if raw.read(2) == _GZIP_MAGIC:
    raw.seek(0)
    return gzip.GzipFile(fileobj=raw)
  raw.seek(0)
  return raw


def _local(path: str) -> bool:
  return "://" not in path


def _sized(path: str, keys: Sequence[str]) -> Iterator[tuple[dict, int]]:
  if _local(path):
    yield from jsonl.iter_jsonl_sized(path, keys=keys,
                                      fix=score_paraphrases.FIX)
    return
  with _open(path) as f:
    for number, raw in enumerate(f, start=1):
      yield jsonl.jsonl_record(path, number, raw, keys=keys,
                               fix=score_paraphrases.FIX), len(raw)


def survey(path: str, keys: Sequence[str] = score_paraphrases.KEYS
           ) -> tuple[str, list[Block]]:
  """The input's digest (as `score_paraphrases` computes it) and its
  blocks (`score_paraphrases.survey`'s: none across shards); stops at the
  first bad line with the in-process message."""
  size = score_paraphrases.BLOCK
  parts: list[tuple[str, list[int], int]] = []  # (file, block ends, lines)

  def records() -> Iterator[dict]:
    for part in shards.resolve(path) if _local(path) else [path]:
      ends, offset, count = [], 0, 0
      for count, (record, length) in enumerate(_sized(part, keys), start=1):
        offset += length
        if count % size == 0:
          ends.append(offset)
        yield record
      if count % size:
        ends.append(offset)
      parts.append((part, ends, count))

  digest, _ = score_paraphrases.digest_of(records())
  total = sum(len(ends) for _, ends, _ in parts)
  blocks, first = [], 1
  for part, ends, count in parts:
    for i, (start, end) in enumerate(zip([0, *ends[:-1]], ends)):
      blocks.append(Block(len(blocks), total, first, min(size, count - i * size),
                          start, end, part, i * size + 1))
      first += blocks[-1].size
  return digest, blocks


def _part(folder: str, kind: str, block: Block) -> str:
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  return FileSystems.join(folder, f"{kind}-{block.index:06d}-of-"
                          f"{block.of:06d}.jsonl")


def _write_whole(path: str, data: bytes) -> None:
  """`data` at `path`, whole or not at all: a temporary name, a rename."""
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  tmp = f"{path}.tmp-{uuid.uuid4().hex}"
  with FileSystems.create(tmp) as f:
    f.write(data)
  FileSystems.rename([tmp], [path])


def _read_lines(path: str) -> list[bytes]:
  with _open(path) as f:
    return f.readlines()


def _counter(name: str):
  from apache_beam.metrics import Metrics  # pylint: disable=g-import-not-at-top
  return Metrics.counter(_METRICS, name)


class _Score:
  """The DoFn body of the scoring step (`_dofn` makes it a beam.DoFn):
  writes the part of one block unless it is there; yields the block."""

  def __init__(self, input: str, folder: str, make_scorers: Scorers):
    self.input, self.folder, self.make_scorers = input, folder, make_scorers
    self.scorers: Sequence[scores.BlockScorer] = ()

  def setup(self) -> None:
    self.scorers = self.make_scorers()  # loaded once per worker

  def process(self, block: Block) -> Iterator[Block]:
    from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
    part = _part(self.folder, "scored", block)
    if FileSystems.exists(part):  # an earlier run's, or a retried bundle's
      _counter("blocks_reused").inc()
      yield block
      return
    path = block.path or self.input
    with _open(path) as f:
      f.seek(block.start)
      raw = io.BytesIO(f.read(block.end - block.start)).readlines()
    records = [jsonl.jsonl_record(path, (block.line or block.first) + i,
                                  line,
                                  keys=score_paraphrases.KEYS,
                                  fix=score_paraphrases.FIX)
               for i, line in enumerate(raw)]
    text = score_paraphrases.lines_of(records, self.scorers)
    _write_whole(part, text.encode("utf-8"))
    _counter("blocks_scored").inc()
    faults.moment("beam_scoring.block")
    yield block


class _Inside:
  """The DoFn body that marks, of one scored block, the lines of the
  1-best pairs inside the filter's bounds: a bit a line (`np.packbits`),
  so that what the draw gathers and every worker's side input hold is an
  eighth of a byte a record, not a Python int."""

  def __init__(self, folder: str, output: str, spec):
    self.folder, self.output, self.spec = folder, output, spec

  def process(self, block: Block) -> Iterator[tuple[int, bytes]]:
    from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
    lines = _read_lines(_part(self.folder, "scored", block))
    inside = np.zeros(len(lines), bool)
    for i, line in enumerate(lines):
      record = json.loads(line)
      if record["rank"] != 0:
        continue
      if self.spec is not None and self.spec.bounded:
        # What the Task reads from the concatenated output, at this line.
        value = tasks.score_of(self.output, block.first + i, record,
                               self.spec.score)
        if not self.spec.lo <= value <= self.spec.hi:
          continue
      inside[i] = True
    yield block.index, np.packbits(inside).tobytes()


def _lines_marked(mask: bytes) -> np.ndarray:
  """The lines (0-based in their block) whose bits `mask` sets."""
  return np.flatnonzero(np.unpackbits(np.frombuffer(mask, np.uint8)))


def _select(inside: list[tuple[int, bytes]], *, max_pairs: int,
            seed: int, what: str) -> dict[int, bytes]:
  """The lines each block keeps, as its mask: all inside lines, or
  `max_pairs` of them drawn over the whole file in block order, as the
  Task draws."""
  inside = sorted(inside)
  if not max_pairs:
    return dict(inside)
  from paraflax.data import filters  # pylint: disable=g-import-not-at-top
  marked = [(index, len(mask), _lines_marked(mask)) for index, mask in inside]
  keep = filters.draw(sum(len(lines) for *_, lines in marked), n=max_pairs,
                      seed=seed, what=what)
  chosen, at = {}, 0
  for index, size, lines in marked:
    bits = np.zeros(8 * size, bool)
    bits[lines[keep[at:at + len(lines)]]] = True
    chosen[index] = np.packbits(bits).tobytes()
    at += len(lines)
  return chosen


class _Keep:
  """The DoFn body that writes the kept records of one scored block."""

  def __init__(self, folder: str, kept: str):
    self.folder, self.kept = folder, kept

  def process(self, block: Block, chosen: dict[int, bytes]
              ) -> Iterator[int]:
    from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
    part = _part(self.kept, "kept", block)
    if not FileSystems.exists(part):
      lines = _read_lines(_part(self.folder, "scored", block))
      _write_whole(part, b"".join(
          lines[i] for i in _lines_marked(chosen[block.index])))
    yield block.index


def _dofn(body: type) -> Any:
  """`body` as a beam.DoFn subclass (apache_beam is imported only here,
  when the pipeline is built)."""
  import apache_beam as beam  # pylint: disable=g-import-not-at-top
  return type(body.__name__, (body, beam.DoFn), {"__module__": __name__})


def _concatenate(parts: Sequence[str], output: str) -> None:
  with files.atomic_output(output) as out:
    for part in parts:
      with _open(part) as f:
        shutil.copyfileobj(f, out)


# DirectRunner first tries Prism, a binary it downloads, whose failed start
# leaves a beam-temp folder in /tmp; its fallback runs the same pipeline on
# this machine with nothing to fetch.
_RUNNERS = {"DirectRunner": "apache_beam.runners.direct.direct_runner."
                            "BundleBasedDirectRunner"}


def _digest(settings: Any) -> str:
  return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()
                        ).hexdigest()[:12]


def score_file(input: str, output: str, make_scorers: Scorers,
               runner: str = "DirectRunner",
               pipeline_options: Sequence[str] = (),
               parts: str | None = None, filtered_output: str | None = None,
               filter: str | None = None, max_pairs: int = 0, seed: int = 0,
               overwrite: bool = False) -> int:
  """Writes `output` with the bytes of `score_paraphrases.score_file`
  (the scorers `make_scorers` builds), and `filtered_output` when given:
  the scored records of the pairs of the filtered Task; returns the
  blocks this run scored. `parts` holds the blocks' files until the end
  (default OUTPUT.parts; a gs:// folder for runners without a shared
  disk)."""
  import apache_beam as beam  # pylint: disable=g-import-not-at-top
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  from apache_beam.metrics.metric import MetricsFilter  # pylint: disable=g-import-not-at-top
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=g-import-not-at-top
  filtering = filtered_output is not None
  if (filter is not None or max_pairs) and not filtering:
    raise errors.ConfigError("--filter and --max-pairs select the pairs of "
                             "--filtered-output; give it, or drop them.")
  files.check_output(output)
  if filtering:  # filters loads TensorFlow: only a run that filters pays
    from paraflax.data import filters  # pylint: disable=g-import-not-at-top
    spec = filters.parse(filters.from_flag(filter), max_pairs)
    files.check_output(filtered_output)
  # The Task reads the rank of each record: checked up front when filtering.
  keys = (*score_paraphrases.KEYS, *(("rank",) if filtering else ()))
  block_scorers = make_scorers()  # a bad resource stops the run here
  digest, blocks = survey(input, keys)
  settings = score_paraphrases.settings_of(digest, block_scorers)
  files.claim_output(output, settings, overwrite=overwrite)
  if not filtering and files.finished_prefix(
      output, [b.size for b in blocks], unit="block") == len(blocks) > 0:
    print(f"{output}: already written by this command; nothing to do",
          file=sys.stderr)
    return 0
  folder = FileSystems.join(parts or output + ".parts", _digest(settings))
  if filtering:
    kept_settings = {"scored": settings, "filter": spec and spec._asdict(),
                     "max_pairs": max_pairs, "seed": seed}
    files.claim_output(filtered_output, kept_settings, overwrite=overwrite)
    kept = FileSystems.join(folder, "kept-" + _digest(kept_settings))
  options = PipelineOptions(["--runner", _RUNNERS.get(runner, runner),
                             *pipeline_options])
  pipeline = beam.Pipeline(options=options)
  scored = (pipeline | "blocks" >> beam.Create(blocks)
            | "score" >> beam.ParDo(_dofn(_Score)(
                input, folder, make_scorers)))
  if filtering:
    what = filters.described(spec, os.path.abspath(output))
    chosen = (scored | "inside" >> beam.ParDo(_dofn(_Inside)(
        folder, os.path.abspath(output), spec))
              | "gather" >> beam.combiners.ToList()
              | "draw" >> beam.Map(_select, max_pairs=max_pairs, seed=seed,
                                   what=what))
    _ = scored | "keep" >> beam.ParDo(
        _dofn(_Keep)(folder, kept), beam.pvalue.AsSingleton(chosen))
  # A paraflax error in a step (too few pairs for the draw) comes out as
  # itself, the step named; the parts scored so far stay for the rerun.
  result = pipeline.run()
  result.wait_until_finish()
  counted = {c.key.metric.name: c.committed for c in result.metrics().query(
      MetricsFilter().with_namespace(_METRICS))["counters"]}
  _concatenate([_part(folder, "scored", b) for b in blocks], output)
  if filtering:
    _concatenate([_part(kept, "kept", b) for b in blocks], filtered_output)
  faults.moment("beam_scoring.concatenated")
  if FileSystems.exists(folder):  # an empty input has none
    FileSystems.delete([folder])
  default = output + ".parts"
  if parts is None and os.path.isdir(default) and not os.listdir(default):
    os.rmdir(default)
  done = counted.get("blocks_scored", 0)
  print(f"{len(blocks)} blocks of {input} ({runner}): {done} scored by "
        f"this run, {counted.get('blocks_reused', 0)} reused, into {output} "
        f"({', '.join(settings['scores'])})"
        + (f"; {filtered_output}: the pairs of {what}"
           + (f", {max_pairs} drawn with seed {seed}" if max_pairs else "")
           if filtering else ""), file=sys.stderr)
  return done
