"""Back-translation of bitext into English paraphrase pairs (Wieting et al.
2017): translate the non-English side, pair each hypothesis with the English
reference.

Output: JSONL, one record per hypothesis,
  {"id", "reference", "translation", "rank", "cost", "nll", "source"}
with `id` the row's place in the whole input, `nll` the translation's
negative log-likelihood and `cost` that per subword (EOS included); the
paper's "translation cost" is per token of the translation, the score
`cost_token` of `paraflax score-paraphrases`. An input may come in shards, each written to its own
output shard; a shard is streamed: read in windows of `window` rows, each
window decoded in length-sorted batches, so memory does not grow with the
input. The plan of batches is a pure function of the shard's rows; each
batch's records are appended in one write, so a killed run restarted with
the same command skips the finished batches, drops a half-written one and
ends with exactly the records of an uninterrupted run. The settings a
shard's records were made with (model, input, beam, nbest, alpha, stop
rule, batch size, window) sit beside it in `SHARD.meta.json`; a run with
other settings refuses to touch the records unless told to overwrite
them.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import jax
import numpy as np
import tqdm

from paraflax import errors
from paraflax import faults
from paraflax import files
from paraflax.data import batching

WINDOW = 100_000  # rows length-sorted together: memory is bounded by it


def check_beam(beam: int, nbest: int) -> None:
  if not 1 <= nbest <= beam:
    raise errors.ConfigError(f"need 1 <= nbest <= beam, got nbest={nbest}, "
                             f"beam={beam}.")


def _model_digest(params: Any) -> str:
  """Tells checkpoints (and workdirs) apart by their parameters."""
  digest = hashlib.sha256()
  for leaf in jax.tree.leaves(params):
    leaf = np.asarray(leaf)
    digest.update(f"{leaf.dtype}{leaf.shape}".encode() + leaf.tobytes())
  return digest.hexdigest()


Rows = Callable[[], Iterable[tuple[str, str]]]  # (source, reference) rows


class Shard(NamedTuple):
  """Output shard `index` of `count`: the records of `rows` (a function
  that streams them afresh at each call), whose ids are `first_id`,
  `first_id + id_step`, ... in row order."""
  index: int
  count: int
  output: str
  rows: Rows
  name: str  # for messages: the input it reads
  first_id: int = 0
  id_step: int = 1


class Written(NamedTuple):
  records: int  # appended by this run
  inputs: int  # decoded by this run (a resumed run skips finished batches)
  unended: int  # of those, 1-best hypotheses cut at the output limit
  rows: int  # in the shard


def input_digest(rows: Rows) -> tuple[str, int]:
  """The sha256 of json.dumps([sources, references]) (what an output's
  settings name as its input) and the number of rows, streamed: two
  passes over `rows`, memory flat."""
  digest, count = hashlib.sha256(b"[["), 0
  for side in (0, 1):
    if side:
      digest.update(b"], [")
    for i, row in enumerate(rows()):
      digest.update((b", " if i else b"") + json.dumps(row[side]).encode())
      count += not side
  digest.update(b"]]")
  return digest.hexdigest(), count


def _edited(path: str, what: str) -> errors.DataError:
  return errors.DataError(
      f"{path}: {what} than this run writes, though the settings match: the "
      "file was edited. Use a new --output, or --overwrite to replace it.")


class _Finished:
  """The batches an output holds already, read one batch at a time as the
  plan is streamed (`files.finished_prefix`, without knowing the plan in
  advance): the first batch it lacks cuts the file there."""

  def __init__(self, path: str):
    self.path, self.offset, self.done = path, 0, 0
    self.f = open(path, "rb") if os.path.exists(path) else None

  def has(self, ids: Sequence[int], nbest: int) -> bool:
    if self.f is None:
      return False
    size = len(ids) * nbest
    lines = list(itertools.islice(self.f, size))
    whole = [l for l in lines if l.endswith(b"\n")]
    if len(whole) == size:
      if {json.loads(l)["id"] for l in lines} != set(ids):
        raise _edited(self.path, f"batch {self.done + 1} holds other records")
      self.offset += sum(map(len, lines))
      self.done += 1
      return True
    self._cut(len(whole), size)
    return False

  def _cut(self, whole: int, size: int) -> None:
    self.f.close()
    self.f = None
    left = os.path.getsize(self.path) - self.offset
    if left:
      logging.warning("%s: a killed run left %d of the %d records of batch "
                      "%d (%d bytes); dropping them, the batch is redone",
                      self.path, whole, size, self.done + 1, left)
      with open(self.path, "r+b") as f:
        f.truncate(self.offset)

  def close(self) -> None:
    """At the end of the plan: nothing may follow the last batch."""
    if self.f is None:
      return
    self.f.close()
    self.f = None
    if os.path.getsize(self.path) > self.offset:
      raise _edited(self.path, "holds more records")


def _plan(translator: Any, shard: Shard, window: int, batch_size: int,
          longer: list[int]) -> Iterator[tuple[list[int], list[str],
                                               list[str], list[np.ndarray]]]:
  """(ids, sources, references, encoded sources) of each batch, in order:
  windows of `window` rows, each cut into length-sorted batches. Counts
  the sources over data.max_len into `longer`."""
  rows = iter(shard.rows())
  start = 0
  while True:
    chunk = list(itertools.islice(rows, window))
    if not chunk:
      return
    encoded = []
    for i, (source, _) in enumerate(chunk, start=start):
      longer[0] += len(translator.src_sp.encode(source)) + 1 \
          > translator.max_len
      encoded.append(translator.encode(source, f"{shard.name} line {i + 1}",
                                       "truncate"))
    for batch in batching.sorted_chunks([len(e) for e in encoded],
                                        batch_size):
      yield ([shard.first_id + shard.id_step * (start + int(j))
              for j in batch],
             [chunk[j][0] for j in batch], [chunk[j][1] for j in batch],
             [encoded[j] for j in batch])
    start += len(chunk)


def settings(translator: Any, params: Any, shard: Shard, digest: str,
             rows: int, *, beam: int, nbest: int, alpha: float,
             batch_size: int, stop: str, window: int) -> dict[str, Any]:
  """What a shard's records are made with; an output of one shard that
  fits one window has the settings of an unsharded, unwindowed run."""
  out = {"model": _model_digest(params), "input": digest, "beam": beam,
         "nbest": nbest, "alpha": alpha, "stop": stop,
         "batch_size": batch_size, "max_len": translator.max_len,
         **translator.limit_settings()}
  if rows > window:
    out["window"] = window
  if shard.count > 1 or shard.first_id or shard.id_step != 1:
    out.update(shard=[shard.index, shard.count],
               ids=[shard.first_id, shard.id_step])
  return out


def run_shard(translator: Any, params: Any, shard: Shard, *, beam: int,
              nbest: int, alpha: float, batch_size: int, stop: str = "exact",
              window: int = WINDOW, overwrite: bool = False,
              surveyed: tuple[str, int] | None = None) -> Written:
  """Appends the records of every unfinished batch of `shard`; returns
  what it wrote. `surveyed`: the shard's `input_digest`, if read already.

  Records of other settings in the shard's output are refused (a
  `ConfigError`) unless `overwrite`, which deletes them first.
  """
  check_beam(beam, nbest)
  if window < batch_size:
    raise errors.ConfigError(f"--window {window} is smaller than "
                             f"--batch-size {batch_size}; sort at least one "
                             "batch's rows together.")
  digest, rows = surveyed or input_digest(shard.rows)
  files.claim_output(shard.output, settings(
      translator, params, shard, digest, rows, beam=beam, nbest=nbest,
      alpha=alpha, batch_size=batch_size, stop=stop, window=window),
                     overwrite=overwrite)
  finished = _Finished(shard.output)
  written, inputs, unended, longer = 0, 0, 0, [0]
  progress = tqdm.tqdm(total=rows, unit="sent", dynamic_ncols=True,
                       desc=None if shard.count == 1
                       else f"shard {shard.index}")
  with open(shard.output, "a", encoding="utf-8") as f:
    for ids, sources, references, encoded in _plan(
        translator, shard, window, batch_size, longer):
      if finished.has(ids, nbest):
        progress.update(len(ids))
        continue
      # Every batch has batch_size rows (rounded up to the device count):
      # one shape per width, also for each window's short last batch.
      results = dict(translator.translate(
          params, encoded, beam=beam, nbest=nbest, alpha=alpha,
          batch_size=batch_size, stop=stop))
      lines = []
      for j, i in enumerate(ids):
        for rank, hyp in enumerate(results[j]):
          lines.append(json.dumps({
              "id": i, "reference": references[j], "translation": hyp.text,
              "rank": rank, "cost": -hyp.logprob / hyp.tokens,
              "nll": -hyp.logprob,
              "source": sources[j]}, ensure_ascii=False,
              allow_nan=False) + "\n")
      f.write("".join(lines))
      f.flush()
      os.fsync(f.fileno())
      faults.moment("backtranslate.batch")
      written += len(lines)
      inputs += len(ids)
      unended += sum(not results[j][0].ended for j in range(len(ids)))
      progress.update(len(ids))
  finished.close()
  progress.close()
  if longer[0]:
    logging.warning("%d of %d inputs are longer than %d subwords (with "
                    "EOS) and were truncated; --max-len raises the limit",
                    longer[0], rows, translator.max_len)
  return Written(written, inputs, unended, rows)


def run(translator: Any, params: Any, sources: Sequence[str],
        references: Sequence[str], output: str, *, beam: int, nbest: int,
        alpha: float, batch_size: int, name: str, stop: str = "exact",
        overwrite: bool = False) -> Written:
  """`run_shard` of in-memory rows into one output."""
  shard = Shard(0, 1, output, lambda: zip(sources, references), name)
  return run_shard(translator, params, shard, beam=beam, nbest=nbest,
                   alpha=alpha, batch_size=batch_size, stop=stop,
                   window=max(len(sources), batch_size), overwrite=overwrite)
