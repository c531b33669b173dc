"""Decoding throughput (sentences/s) of `paraflax translate`'s beam search.

  python benchmarks/decode_throughput.py --workdir runs/nmt_de_en \
      [--beams 5 50] [--sentences 256] [--output benchmarks/results/decode_throughput.json]

Decodes the first N lines of newstest2013 (the workdir's source language)
with each beam width; the first batch of each width is a warm-up (compile)
and is reported apart. Our side only: the OpenNMT-py comparison the NMT
issue asks for is not written yet.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time

_ISO3 = {"de": "deu", "fr": "fra", "cs": "ces"}


def _measure(workdir: str, beam: int, sentences: list[str], batch: int
             ) -> dict:
  import jax  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import nmt  # pylint: disable=g-import-not-at-top
  translator, params, step = nmt.load_translator(workdir)
  sources = [translator.encode(s, f"line {i + 1}", "truncate")
             for i, s in enumerate(sentences)]
  start = time.perf_counter()
  list(translator.translate(params, sources[:batch], beam=beam,
                            batch_size=batch))
  warm = time.perf_counter() - start
  start = time.perf_counter()
  out = list(translator.translate(params, sources[batch:], beam=beam,
                                  batch_size=batch))
  seconds = time.perf_counter() - start
  tokens = sum(h[0].tokens for _, h in out)
  return {"beam": beam, "batch": batch, "sentences": len(out),
          "checkpoint_step": step, "warmup_batch_s": warm, "seconds": seconds,
          "sentences_per_s": len(out) / seconds,
          "output_subwords_per_s": tokens / seconds,
          "devices": jax.device_count(), "backend": jax.default_backend()}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--workdir", required=True)
  parser.add_argument("--beams", type=int, nargs="+", default=[5, 50])
  parser.add_argument("--sentences", type=int, default=256)
  parser.add_argument("--output",
                      default="benchmarks/results/decode_throughput.json")
  args = parser.parse_args()
  from paraflax import files  # pylint: disable=g-import-not-at-top
  from paraflax.data import paths, readers  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import workdir as workdir_lib  # pylint: disable=g-import-not-at-top
  config = workdir_lib.load_config(args.workdir, "nmt")
  lang = config.data.dev_task.split("_")[-2]
  lines, _ = readers.read_lines(
      paths.data_path("newstest_dev", f"newstest2013.{_ISO3[lang]}"))
  results = []
  for beam in args.beams:
    batch = max(1, 256 // beam)  # about the same number of live hypotheses
    results.append(_measure(args.workdir, beam, lines[:args.sentences + batch],
                            batch))
    print(json.dumps(results[-1]), flush=True)
  report = {"benchmark": "decode_throughput", "workdir": args.workdir,
            "command": " ".join(["python"] + sys.argv),
            "cpu_count": os.cpu_count(), "platform": platform.platform(),
            "peak_rss_mib": resource.getrusage(
                resource.RUSAGE_SELF).ru_maxrss / 1024, "results": results}
  files.write_text_atomic(args.output, json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
  main()
