"""What the search's phases cost to compile and what they save, per
`beam_search.SHRINK` (each phase has at most 1/SHRINK of the last one's
rows and compiles its own loop body), on a trained NMT workdir's
checkpoint, the same batches, one process; with the 1-best agreement.

  python lab/benchmarks/nmt_decode_phases.py --workdir /tmp/nmtw \
      --shrinks 4 8 1000 --beams 5 50 [--sentences 100] [--stop exact] \
      [--output lab/results/nmt_decode_phases.json]

A SHRINK above the batch size gives two phases: the whole batch, then the
last input alone. Compile seconds are those of the first batch of each padded
source width, run untimed; the rate is the best of `--repeats` passes.
children.write_result writes --output, with the run's facts.
"""
from __future__ import annotations

import argparse
import json
import time

# Before jax, which reads its platform when imported (children.py).
import children  # lab/benchmarks/children.py, beside this script

import jax
import numpy as np

from paraflax.data import batching, paths, readers
from paraflax.decoding import beam_search as bs
from paraflax.decoding.translator import Translator
from paraflax.recipes import nmt


def _measure(translator, params, batches, beam: int, stop: str,
             repeats: int) -> tuple[dict, list[np.ndarray]]:
  search = translator.search_fn(beam, translator.alpha, stop)
  start, widths = time.perf_counter(), set()
  for _, src, src_len in batches:
    if src.shape not in widths:
      widths.add(src.shape)
      jax.block_until_ready(search(params, src, src_len))
  compile_s = time.perf_counter() - start
  best, tokens = float("inf"), []
  for _ in range(repeats):
    start, tokens = time.perf_counter(), []
    for _, src, src_len in batches:
      hyps = jax.device_get(search(params, src, src_len))
      tokens.append(hyps.tokens[:, 0])
    best = min(best, time.perf_counter() - start)
  sentences = sum(len(rows) for rows, _, _ in batches)
  return {"phases": bs.phase_sizes(batches[0][1].shape[0]),
          "padded_widths": len(widths),
          "compile_and_first_batches_s": compile_s, "seconds": best,
          "sentences_per_s": sentences / best}, tokens


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--workdir", required=True, help="a trained NMT workdir")
  parser.add_argument("--shrinks", type=int, nargs="+", default=[4, 8, 1000])
  parser.add_argument("--beams", type=int, nargs="+", default=[5, 50])
  parser.add_argument("--sentences", type=int, default=100)
  parser.add_argument("--stop", default="exact", choices=sorted(bs.STOP_RULES))
  parser.add_argument("--repeats", type=int, default=2)
  parser.add_argument("--output",
                      default="lab/results/nmt_decode_phases.json")
  args = parser.parse_args(argv)
  translator, params, step = nmt.load_translator(args.workdir)
  lines, _ = readers.read_lines(
      paths.data_path("newstest_dev", "newstest2013.deu"))
  sources = [translator.encode(s, f"newstest2013 line {i + 1}", "truncate")
             for i, s in enumerate(lines[:args.sentences])]
  rows = []
  for beam in args.beams:
    batches = list(batching.sorted_batches(sources, max(1, 256 // beam)))
    first = None
    for shrink in args.shrinks:
      bs.SHRINK = shrink  # read when the search traces
      t = translator  # a new Translator: its own jitted searches
      fresh = Translator(t.model, t.src_sp, t.tgt_sp, t.max_len,
                         t.max_output, t.alpha, t.mesh,
                         t.max_output_ratio, t.max_output_plus)
      row, tokens = _measure(fresh, params, batches, beam, args.stop,
                             args.repeats)
      first = tokens if first is None else first
      row.update(beam=beam, shrink=shrink, same_1best_as_first=all(
          np.array_equal(a, b) for a, b in zip(tokens, first)))
      rows.append(row)
      print(json.dumps(row), flush=True)
  report = {**children.run_facts(__file__, argv),
            "benchmark": "nmt_decode_phases",
            "checkpoint_step": step, "stop": args.stop,
            "sentences": len(sources), "rows": rows}
  children.write_result(args.output, report)
  print(f"wrote {args.output}")


if __name__ == "__main__":
  main()
