"""Beam search before and after, in one process: another checkout's
`paraflax/decoding/beam_search.py` (its recipe's form: encoder states tiled
per beam, the whole batch stepping until its last input ends) against this
one's `Translator.search_fn`, on a trained NMT workdir's checkpoint, the same
batches, interleaved, best of `--repeats`; with the 1-best and K-best
agreement on the real rows. --output is written by children.write_result,
with the run's command, commit, hardware, load and seconds.

  python lab/benchmarks/nmt_decode_before_after.py --workdir /tmp/nmtw \
      --before /path/to/main/paraflax/decoding/beam_search.py \
      --beam 5 --stops exact best_ended [--sentences 100] [--batches 8:12]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time

# Before jax, which reads its platform when imported (children.py).
import children  # lab/benchmarks/children.py, beside this script

import jax
import numpy as np

from paraflax.data import batching, bitext, paths, readers
from paraflax.models import nmt as nmt_model
from paraflax.recipes import nmt


def load_module(path: str, name: str = "beam_search_before"):
  spec = importlib.util.spec_from_file_location(name, path)
  module = importlib.util.module_from_spec(spec)
  sys.modules[name] = module  # flax dataclasses look their module up
  spec.loader.exec_module(module)
  return module


def before_fn(old, translator, beam: int, stop: str):
  model = translator.model

  def run(params, src, src_len):
    encoded = model.apply({"params": params}, src, src_len,
                          method=nmt_model.AttentionNMT.encode)
    carry = model.apply({"params": params}, encoded,
                        method=nmt_model.AttentionNMT.init_carry)
    tiled = old.repeat_for_beams(encoded, beam)
    step = lambda c, t: model.apply({"params": params}, tiled, c, t,
                                    method=nmt_model.AttentionNMT.decode_step)
    return old.beam_search(step, old.repeat_for_beams(carry, beam),
                           batch=src.shape[0], beam=beam, bos=bitext.BOS,
                           eos=bitext.EOS, max_len=translator.max_output,
                           alpha=translator.alpha, active=src_len > 0,
                           stop=stop)
  return jax.jit(run)


def compare(fns: dict, params, batches, repeats: int) -> dict:
  out = {}
  for name, fn in fns.items():
    start, widths = time.perf_counter(), set()
    for src, src_len in batches:
      if src.shape not in widths:
        widths.add(src.shape)
        jax.block_until_ready(fn(params, src, src_len))
    out[name] = {"compile_and_first_s": time.perf_counter() - start,
                 "best_s": float("inf")}
  hyps = {}
  for _ in range(repeats):
    for name, fn in fns.items():
      start = time.perf_counter()
      hyps[name] = [jax.device_get(fn(params, s, n)) for s, n in batches]
      out[name]["best_s"] = min(out[name]["best_s"],
                                time.perf_counter() - start)
  sentences = int(sum((n > 0).sum() for _, n in batches))
  for name in fns:
    out[name]["sentences_per_s"] = sentences / out[name]["best_s"]
  # Padding rows of a last batch are never translated; compare real rows.
  rows = [(a, b, np.asarray(n) > 0) for a, b, (_, n)
          in zip(hyps["before"], hyps["after"], batches)]
  out.update(
      sentences=sentences, batches=len(batches),
      speedup=out["before"]["best_s"] / out["after"]["best_s"],
      rows_1best_differ=int(sum((a.tokens[m, 0] != b.tokens[m, 0]).any(-1)
                                .sum() for a, b, m in rows)),
      same_kbest=all(np.array_equal(a.tokens[m], b.tokens[m])
                     for a, b, m in rows),
      max_score_diff=max(float(np.abs(a.scores[m] - b.scores[m]).max())
                         for a, b, m in rows),
      steps_before=[int(h.steps) for h in hyps["before"]])
  return out


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--workdir", required=True)
  parser.add_argument("--before", required=True,
                      help="the beam_search.py to compare against")
  parser.add_argument("--beam", type=int, default=5)
  parser.add_argument("--stops", nargs="+", default=["exact"])
  parser.add_argument("--sentences", type=int, default=100)
  parser.add_argument("--batches", default="",
                      help="a slice a:b of the length-sorted batches")
  parser.add_argument("--repeats", type=int, default=2)
  parser.add_argument("--output", default="")
  args = parser.parse_args(argv)
  old = load_module(args.before)
  translator, params, step = nmt.load_translator(args.workdir)
  lines, _ = readers.read_lines(
      paths.data_path("newstest_dev", "newstest2013.deu"))
  sources = [translator.encode(s, f"newstest2013 line {i + 1}", "truncate")
             for i, s in enumerate(lines[:args.sentences])]
  batch = max(1, 256 // args.beam)
  batches = [(s, n) for _, s, n in batching.sorted_batches(sources, batch, 1)]
  if args.batches:
    first, last = map(int, args.batches.split(":"))
    batches = batches[first:last]
  report = {**children.run_facts(__file__, argv), "checkpoint_step": step,
            "beam": args.beam, "batch": batch}
  for stop in args.stops:
    fns = {"before": before_fn(old, translator, args.beam, stop),
           "after": translator.search_fn(args.beam, translator.alpha, stop)}
    report[stop] = compare(fns, params, batches, args.repeats)
    print(stop, json.dumps(report[stop]), flush=True)
  if args.output:
    children.write_result(args.output, report)


if __name__ == "__main__":
  main()
