"""Back-translation of bitext into English paraphrase pairs (Wieting et al.
2017): translate the non-English side, pair each hypothesis with the English
reference.

Output: JSONL, one record per hypothesis,
  {"id", "reference", "translation", "rank", "cost", "source"}
with `cost` the translation's negative log-likelihood per subword (EOS
included), the paper's "translation cost". Inputs are decoded in a fixed plan
of length-sorted batches; each batch's records are appended in one write, so
a killed run restarted with the same command skips the finished batches,
drops a half-written one and ends with exactly the records of an
uninterrupted run. The settings the records were made with (model, input,
beam, nbest, alpha, stop rule, batch size) sit beside them in
`OUT.jsonl.meta.json`; a run with other settings refuses to touch the records
unless told to overwrite them.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import numpy as np
import tqdm

from paraflax import errors
from paraflax import faults
from paraflax import files
from paraflax.data import batching


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


def _finished_prefix(path: str, batches: list[list[int]], nbest: int) -> int:
  """How many leading batches `path` holds completely (each batch's records
  are one append); cuts off the rest."""
  return files.finished_prefix(
      path, [len(batch) * nbest for batch in batches], unit="batch",
      fits=lambda i, lines: {json.loads(l)["id"] for l in lines}
      == set(batches[i]))


class Written(NamedTuple):
  records: int  # appended by this run
  inputs: int  # decoded by this run (a resumed run skips finished batches)
  unended: int  # of those, 1-best hypotheses cut at the output limit


def run(translator: Any, params: Any, sources: Sequence[str],
        references: Sequence[str], output: str, *, beam: int, nbest: int,
        alpha: float, batch_size: int, name: str, stop: str = "exact",
        overwrite: bool = False) -> Written:
  """Appends the records of every unfinished batch; returns what it wrote.

  Records of other settings in `output` are refused (a `ConfigError`) unless
  `overwrite`, which deletes them first.
  """
  check_beam(beam, nbest)
  batching.report_longer([len(translator.src_sp.encode(s)) + 1
                          for s in sources], translator.max_len,
                         "subwords (with EOS)")
  encoded = [translator.encode(s, f"{name} line {i + 1}", "truncate")
             for i, s in enumerate(sources)]
  # The plan is a pure function of the input: a rerun finds the same batches.
  batches = [c.tolist() for c in batching.sorted_chunks(
      [len(e) for e in encoded], batch_size)]
  files.claim_output(output, {
      "model": _model_digest(params),
      "input": hashlib.sha256(json.dumps([sources, references]).encode()
                              ).hexdigest(),
      "beam": beam, "nbest": nbest, "alpha": alpha, "stop": stop,
      "batch_size": batch_size, "max_len": translator.max_len,
      **translator.limit_settings()}, overwrite=overwrite)
  start = _finished_prefix(output, batches, nbest)
  written, inputs, unended = 0, 0, 0
  progress = tqdm.tqdm(total=len(sources), unit="sent", dynamic_ncols=True,
                       initial=sum(len(b) for b in batches[:start]))
  with open(output, "a", encoding="utf-8") as f:
    for batch in batches[start:]:
      results = dict(translator.translate(
          params, [encoded[i] for i in batch], beam=beam, nbest=nbest,
          alpha=alpha, batch_size=len(batch), stop=stop))
      lines = []
      for j, i in enumerate(batch):
        for rank, hyp in enumerate(results[j]):
          lines.append(json.dumps({
              "id": i, "reference": references[i], "translation": hyp.text,
              "rank": rank, "cost": -hyp.logprob / hyp.tokens,
              "source": sources[i]}, ensure_ascii=False,
              allow_nan=False) + "\n")
      f.write("".join(lines))
      f.flush()
      os.fsync(f.fileno())
      faults.moment("backtranslate.batch")
      written += len(lines)
      inputs += len(batch)
      unended += sum(not results[j][0].ended for j in range(len(batch)))
      progress.update(len(batch))
  progress.close()
  return Written(written, inputs, unended)
