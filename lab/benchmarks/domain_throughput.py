r"""Throughput of `paraflax select-domain`, in general sentences/s: the
diffCE scoring alone (two KenLM queries and the tokenizing per sentence) and
the whole command (counting and checking the inputs, the general LM's
sample, both LMs, scoring, ranking and writing the bins), with peak memory,
at several general-corpus sizes; and the time 50M pairs would take at the
measured rates.

Command (writes lab/results/domain_throughput.json by children.write_result,
with the run's command, commit, hardware, load and seconds):
  paraflax domain-data --output runs/domain
  .venv/bin/python lab/benchmarks/domain_throughput.py --sizes 100000 400000 \
    --data runs/domain

General pairs: `general.mul` / `general.en` of `paraflax domain-data`
(95,442 real pairs), cycled in file order to reach each size (the JSON says
how many times); in-domain: `biomed.train.en`. Each measurement runs in its
own child process (children.py), so its peak RSS (`ru_maxrss`) is its own:
equal peaks at growing sizes show that memory does not grow with the
general corpus.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from typing import Any

import children  # lab/benchmarks/children.py, beside this script

_HERE = os.path.dirname(os.path.abspath(__file__))
_DEFAULT_OUTPUT = os.path.join(os.path.dirname(_HERE), "results", "domain_throughput.json")
TARGET = 50_000_000  # pairs to project to
MEASURES = ("score", "command")


def _parse(argv: list[str] | None) -> argparse.Namespace:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--sizes", type=int, nargs="+",
                      default=[100000, 400000])
  parser.add_argument("--data", default="runs/domain",
                      help="a paraflax domain-data folder")
  parser.add_argument("--output", default=_DEFAULT_OUTPUT)
  parser.add_argument("--child", choices=MEASURES, help=argparse.SUPPRESS)
  parser.add_argument("--child-dir", help=argparse.SUPPRESS)
  return parser.parse_args(argv)


def _config():
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  return config_lib.load(os.path.join(_HERE, "..", "..", "configs", "domain.py"))


def _measure_command(args: argparse.Namespace) -> dict[str, Any]:
  # The function `paraflax select-domain` calls (paraflax/commands/).
  from paraflax.domain import selection  # pylint: disable=g-import-not-at-top
  folder = args.child_dir
  start = time.perf_counter()
  summary = selection.select_domain(
      os.path.join(args.data, "biomed.train.en"),
      os.path.join(folder, "general.mul"), os.path.join(folder, "general.en"),
      "mul", os.path.join(folder, "select"), _config())
  seconds = time.perf_counter() - start
  n = summary["general_sentences"]
  return {"sentences": n, "seconds": seconds, "sentences_per_s": n / seconds,
          "peak_rss_mib": children.peak_rss_mib()}


def _measure_score(args: argparse.Namespace) -> dict[str, Any]:
  """The scoring loop of select-domain on the LMs the command child wrote."""
  from paraflax.data import readers  # pylint: disable=g-import-not-at-top
  from paraflax.domain import selection  # pylint: disable=g-import-not-at-top
  from paraflax.filtering import lm  # pylint: disable=g-import-not-at-top
  folder = os.path.join(args.child_dir, "select")
  inside = lm.load(os.path.join(folder, "in_domain.lm"))
  outside = lm.load(os.path.join(folder, "general.lm"))
  vocabulary = selection.read_vocabulary(folder)
  start, n = time.perf_counter(), 0
  for text in readers.iter_lines(os.path.join(args.child_dir, "general.en")):
    _ = (selection.cross_entropy(inside, text, vocabulary)
         - selection.cross_entropy(outside, text, vocabulary))
    n += 1
  seconds = time.perf_counter() - start
  return {"sentences": n, "seconds": seconds, "sentences_per_s": n / seconds,
          "peak_rss_mib": children.peak_rss_mib()}


def _cycle(data: str, n: int, folder: str) -> float:
  """Writes the first `n` general pairs of `data`, repeated, with the
  language of each source line (`general.langs`, which select-domain reads
  beside a `mul` source); returns how many times over the real pairs that
  is."""
  real = 0
  for ext in ("mul", "en", "langs"):
    with open(os.path.join(data, f"general.{ext}"), encoding="utf-8") as f:
      lines = f.readlines()
    real = len(lines)
    with open(os.path.join(folder, f"general.{ext}"), "w",
              encoding="utf-8") as f:
      f.writelines(itertools.islice(itertools.cycle(lines), n))
  return n / real


def main(argv: list[str] | None = None) -> int:
  args = _parse(argv)
  if args.child:
    measure = _measure_command if args.child == "command" else _measure_score
    print(json.dumps(measure(args)))
    return 0
  result: dict[str, Any] = {
      **children.run_facts(__file__, argv), "data": children.portable_path(args.data, "DATA"),
      "projected_pairs": TARGET, "sizes": []}
  for size in args.sizes:
    with tempfile.TemporaryDirectory() as tmp:
      cycles = _cycle(args.data, size, tmp)
      measures = {}
      for name in ("command", "score"):  # score reads the command's LMs
        print(f"{size}: {name} ...", file=sys.stderr, flush=True)
        measures[name] = children.run_child(
            [os.path.abspath(__file__), "--data", os.path.abspath(args.data),
             "--child", name, "--child-dir", tmp], num_devices=1)
        measures[name]["projected_hours"] = (
            TARGET / measures[name]["sentences_per_s"] / 3600)
    result["sizes"].append({"sentences": size, "cycles_of_real_pairs": cycles,
                            "measures": measures})
  children.write_result(args.output, result)
  for size in result["sizes"]:
    for name, r in size["measures"].items():
      print(f"{size['sentences']:>9} {name:>8} {r['sentences_per_s']:>9.0f}/s "
            f"{r['seconds']:>8.1f} s {r['peak_rss_mib']:>7.0f} MiB "
            f"50M: {r['projected_hours']:.2f} h")
  return 0


if __name__ == "__main__":
  sys.exit(main())
