r"""Scoring throughput of `paraflax score-paraphrases`, in records/s: each
scorer alone and the whole command, with peak memory, at 10k and 100k
records; and the time 50M records (ParaNMT's size) would take at the
measured rates.

Command (writes lab/results/scoring_throughput.json by children.write_result,
with the run's command, commit, hardware, load and seconds):
  .venv/bin/python lab/benchmarks/scoring_throughput.py --sizes 10000 100000 \
    --input runs/tiny/backtranslate/bt.jsonl \
    --classifier-workdir runs/refclf_tiny

Records: the real back-translation records of `--input` (`paraflax
backtranslate` output), cycled in file order to reach each size, each pass
under new ids (the JSON says how many passes). The LM of `lm_ppl` is a 3-gram trained here by
`paraflax train-lm` on the Multi30k train English captions that are not a
reference of `--input` (held apart, as the paper's 40,000).

Every measurement runs in its own child process (children.py), so its peak
RSS (`ru_maxrss`) is that scorer's or that command's alone. A scorer child
streams the records in blocks of `score_paraphrases.BLOCK`, as the command
does, and times parsing + tokenizing (`parse`) apart from each scorer; a
command child runs `paraflax score-paraphrases` in-process (the function
the command calls), timed from the call to its return (reading the input twice, scoring, writing).

With `--beam`, two more command children run `paraflax beam-score` (the
Apache Beam pipeline) on the DirectRunner, timed the same way (survey,
pipeline, concatenation), and the JSON says whether each wrote the bytes
of its in-process twin (default output: scoring_throughput_beam.json):
  .venv/bin/python lab/benchmarks/scoring_throughput.py --sizes 10000 --beam \
    --input runs/tiny/backtranslate/bt.jsonl \
    --classifier-workdir runs/refclf_tiny
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import itertools
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import children  # lab/benchmarks/children.py, beside this script

_HERE = os.path.dirname(os.path.abspath(__file__))
_DEFAULT_OUTPUT = os.path.join(os.path.dirname(_HERE), "results", "scoring_throughput.json")
_BEAM_OUTPUT = os.path.join(os.path.dirname(_HERE), "results", "scoring_throughput_beam.json")
# $PARAFLAX_DATA_DIR, else ../shared/data beside the checkout (as paraflax).
_DATA = os.environ.get("PARAFLAX_DATA_DIR") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(_HERE))), "shared", "data")
_LM_TEXT = os.path.join(_DATA, "multi30k_task1", "train.en.gz")
PARANMT = 50_000_000  # records to project to
BASE = ("length", "cost", "overlap_1", "overlap_2", "overlap_3", "bleu")
COMMANDS = ("command_base", "command_all")
BEAM = {"beam_base": "command_base", "beam_all": "command_all"}  # and twin


def _parse(argv: list[str] | None) -> argparse.Namespace:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
  parser.add_argument("--input", required=True,
                      help="a back-translation JSONL (paraflax backtranslate)")
  parser.add_argument("--lm-text", default=_LM_TEXT,
                      help="English text (gz or plain) for the 3-gram LM")
  parser.add_argument("--classifier-workdir",
                      help="a ref_classifier workdir; without, no ref_prob")
  parser.add_argument("--beam", action="store_true",
                      help="also time beam-score on the DirectRunner")
  parser.add_argument("--output",
                      help="default: results/scoring_throughput.json, "
                      "with --beam results/scoring_throughput_beam.json")
  parser.add_argument("--child", help=argparse.SUPPRESS)
  parser.add_argument("--child-records", help=argparse.SUPPRESS)
  parser.add_argument("--child-lm", help=argparse.SUPPRESS)
  return parser.parse_args(argv)


def _blocks(path: str, size: int) -> Iterator[list[str]]:
  with open(path, encoding="utf-8") as f:
    lines = iter(f)
    while block := list(itertools.islice(lines, size)):
      yield block


def _scorer(args: argparse.Namespace):
  """The child's scorer: a function of a block of pairs, and its load time."""
  from paraflax.filtering import scores  # pylint: disable=g-import-not-at-top
  from paraflax.inference import score_paraphrases  # pylint: disable=g-import-not-at-top
  start = time.perf_counter()
  if args.child in scores.SCORERS:
    one = scores.SCORERS[args.child]
    return (lambda pairs: [one(p) for p in pairs]), 0.0
  if args.child == "parse":
    return (lambda pairs: pairs), 0.0
  found = score_paraphrases.block_scorers(
      classifier_workdir=args.classifier_workdir if args.child == "ref_prob"
      else None, lm=args.child_lm if args.child == "lm_ppl" else None)
  return found[0].score, time.perf_counter() - start


def _measure_scorer(args: argparse.Namespace) -> dict[str, Any]:
  from paraflax.filtering import score_paraphrases  # pylint: disable=g-import-not-at-top
  from paraflax.filtering import scores  # pylint: disable=g-import-not-at-top
  score, load_s = _scorer(args)
  block_s, sizes, parse_s = [], [], 0.0
  for block in _blocks(args.child_records, score_paraphrases.BLOCK):
    t0 = time.perf_counter()
    pairs = [scores.pair_of(json.loads(line)) for line in block]
    t1 = time.perf_counter()
    values = score(pairs)
    t2 = time.perf_counter()
    assert len(values) == len(pairs)
    parse_s += t1 - t0
    sizes.append(len(pairs))
    block_s.append(t1 - t0 if args.child == "parse" else t2 - t1)
  n, timed, first = sum(sizes), sum(block_s), block_s[0]
  # A model's first block compiles (jit): the JSON gives the rate without it.
  return {"records": n, "seconds": timed, "records_per_s": n / timed,
          "first_block_s": first,
          "records_per_s_after_first_block":
              (n - sizes[0]) / (timed - first) if len(sizes) > 1 else None,
          "load_s": load_s, "parse_s": parse_s,
          "peak_rss_mib": children.peak_rss_mib()}


def _measure_command(args: argparse.Namespace) -> dict[str, Any]:
  # The functions `paraflax score-paraphrases` and `paraflax beam-score`
  # call (paraflax/commands/).
  from paraflax.inference import score_paraphrases  # pylint: disable=g-import-not-at-top
  output = args.child_records + f".{args.child}.scored.jsonl"
  flags = dict(input=args.child_records, output=output, overwrite=True)
  if args.child in ("command_all", "beam_all"):
    flags.update(lm=args.child_lm,
                 classifier_workdir=args.classifier_workdir)
  run = score_paraphrases.score_file
  if args.child in BEAM:
    run = score_paraphrases.beam_score_file
    flags["runner"] = "DirectRunner"
  start = time.perf_counter()
  run(**flags)
  seconds = time.perf_counter() - start
  with open(output, "rb") as f:
    sha256 = hashlib.sha256(f.read()).hexdigest()
  with open(output, encoding="utf-8") as f:
    n = sum(1 for _ in f)
    f.seek(0)
    names = sorted(json.loads(f.readline())["scores"])
  os.remove(output)
  # The records, their output and the LM lie in the parent's temporary
  # folder, gone after the run: the result names them by file name.
  shown = {k: os.path.basename(v) if k in ("input", "output", "lm") else v
           for k, v in flags.items()}
  return {"records": n, "seconds": seconds, "records_per_s": n / seconds,
          "scores": names, "flags": shown, "sha256": sha256,
          "peak_rss_mib": children.peak_rss_mib()}


def _cycle(source: str, n: int, path: str) -> float:
  """Writes the first `n` records of `source` repeated, each pass under new
  ids (score-paraphrases refuses a repeated id and rank); returns how many
  times over the source that is."""
  with open(source, encoding="utf-8") as f:
    records = [json.loads(line) for line in f if line.strip()]
  ids = [r["id"] for r in records]
  # Integer ids move past the largest; others get the pass as a suffix.
  step = max(ids) + 1 if all(isinstance(i, int) for i in ids) else None
  with open(path, "w", encoding="utf-8") as f:
    for k in range(n):
      record, cycle = records[k % len(records)], k // len(records)
      if cycle:
        record = {**record, "id": record["id"] + cycle * step if step
                  else f"{record['id']}~{cycle}"}
      f.write(json.dumps(record) + "\n")
  return n / len(records)


def _train_lm(args: argparse.Namespace, tmp: str) -> dict[str, Any]:
  """A 3-gram on the --lm-text lines that are not a reference of --input."""
  # The function `paraflax train-lm` calls (paraflax/commands/).
  from paraflax.filtering import lm as lm_lib  # pylint: disable=g-import-not-at-top
  with open(args.input, encoding="utf-8") as f:
    references = {json.loads(line)["reference"] for line in f if line.strip()}
  opener = gzip.open if args.lm_text.endswith(".gz") else open
  with opener(args.lm_text, "rt", encoding="utf-8") as f:
    kept = [line for line in f if line.strip() not in references]
  text, lm = os.path.join(tmp, "lm.txt"), os.path.join(tmp, "refs.lm")
  with open(text, "w", encoding="utf-8") as f:
    f.writelines(kept)
  start = time.perf_counter()
  lm_lib.train_lm(text, lm, order=3)
  return {"path": lm, "order": 3,
          "text": children.portable_path(args.lm_text, "LM_TEXT"),
          "sentences": len(kept),
          "left_out_as_references": len(references),
          "train_s": time.perf_counter() - start,
          "bytes": os.path.getsize(lm)}


def _child(args: argparse.Namespace, name: str, records: str,
           lm: str) -> dict[str, Any]:
  argv = [os.path.abspath(__file__), "--input", args.input, "--child", name,
          "--child-records", records, "--child-lm", lm]
  if args.classifier_workdir:
    argv += ["--classifier-workdir", args.classifier_workdir]
  print(f"  {name} ...", file=sys.stderr, flush=True)
  return children.run_child(argv, num_devices=1)


def _names(args: argparse.Namespace) -> list[str]:
  optional = ["lm_ppl"] + (["ref_prob"] if args.classifier_workdir else [])
  return ["parse", *BASE, *optional, *COMMANDS,
          *(BEAM if args.beam else ())]


def _table(result: dict[str, Any]) -> str:
  rows = [f"{'N':>7} {'measure':>13} {'records/s':>10} {'s':>8} "
          f"{'peak RSS MiB':>12} {'50M proj. h':>11}"]
  for size in result["sizes"]:
    for name, r in size["measures"].items():
      rows.append(f"{size['records']:>7} {name:>13} {r['records_per_s']:>10.0f}"
                  f" {r['seconds']:>8.2f} {r['peak_rss_mib']:>12.0f} "
                  f"{r['paranmt_hours']:>11.1f}")
  return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
  args = _parse(argv)
  if args.child:
    measure = (_measure_command if args.child in (*COMMANDS, *BEAM)
               else _measure_scorer)
    print(json.dumps(measure(args)))
    return 0
  result: dict[str, Any] = {
      **children.run_facts(__file__, argv), "input": children.portable_path(args.input, "INPUT"),
      "classifier_workdir": args.classifier_workdir,
      "paranmt_records": PARANMT, "sizes": []}
  with tempfile.TemporaryDirectory() as tmp:
    result["lm"] = _train_lm(args, tmp)
    for n in args.sizes:
      records = os.path.join(tmp, f"records{n}.jsonl")
      size = {"records": n, "cycles_of_input": _cycle(args.input, n, records),
              "measures": {}}
      print(f"{n} records:", file=sys.stderr)
      for name in _names(args):
        r = _child(args, name, records, result["lm"]["path"])
        r["paranmt_hours"] = PARANMT / r["records_per_s"] / 3600
        size["measures"][name] = r
      for name, twin in BEAM.items():
        if name in size["measures"]:
          size["measures"][name]["same_bytes_as"] = {
              twin: size["measures"][name]["sha256"]
              == size["measures"][twin]["sha256"]}
      result["sizes"].append(size)
    result["lm"]["path"] = os.path.basename(result["lm"]["path"])  # was tmp
  args.output = args.output or (_BEAM_OUTPUT if args.beam else
                                _DEFAULT_OUTPUT)
  children.write_result(args.output, result)
  print(_table(result))
  return 0


if __name__ == "__main__":
  sys.exit(main())
