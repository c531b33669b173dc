r"""Each stage of the back-translation pipeline at growing sizes: rate and
peak memory of back-translation, scoring and filtering (in-process and on
Apache Beam's DirectRunner), so that memory can be seen flat (or not) in
the number of records and the rates projected to ParaNMT's 50M pairs.

Command (writes lab/results/stage_scale.<hardware>.json, the
hardware from /proc/cpuinfo's model name and the core count, whole, by
children.write_result after each measurement, with the run's facts; one
command makes the whole file):
  .venv/bin/python lab/benchmarks/stage_scale.py --nmt-workdir runs/tiny/nmt \
    --bt-sizes 10000 100000 --sizes 100000 1000000
The streamed Task to 10^7 records, from a back-translation of 10^5 rows:
  .venv/bin/python lab/benchmarks/stage_scale.py \
    --nmt-workdir runs/tiny/nmt --stages backtranslate filter filter_stream \
    --bt-sizes 100000 --batch-size 256 --sizes 100000 1000000 10000000 \
    --tmp SCRATCH --output lab/results/stage_scale.filtered-1e7.<hardware>.json
Each of the lab's stage_scale files keeps its exact command in
lab/results/manifest.json; `python lab/run.py FILE` reruns one.
The stages after `backtranslate` read --tmp's bt.jsonl, the records of
the last back-translation size: without `backtranslate` in --stages,
--tmp is a folder that holds one.

Data: the Multi30k train pairs (de-en), repeated in file order to reach
each back-translation size; the back-translation records of the largest
back-translation run, repeated in file order to reach each scoring size
(the JSON says how many times over). The NMT is any `configs/nmt.py:de`
workdir (a tiny one serves: memory does not depend on the model's
quality; its rate is the tiny model's, per device).

Every measurement runs in its own child process (children.py): its peak
RSS (`ru_maxrss`) is that stage's alone, timed from the call of the
function its command calls to the return.
  backtranslate   paraflax backtranslate --src --ref (streamed in windows
                  of --window rows; beam --beam, 1-best, stop best_ended)
  score           paraflax score-paraphrases (the base scores)
  filter          the records of the seqio Task backtranslated:SCORED
                  with data.filter={"score": "overlap_1", "lo": 0.2,
                  "hi": 0.8}, streamed through seqio's dataset (what
                  seqio's readers of the Task get)
  filter_stream   the same records as `paraflax train` reads them (the
                  file streamed, no seqio)
The scored input of the filter stages past the records' size is the
scored records repeated (ids made unique): the base scores are each a
function of its record alone.
  beam_score      paraflax beam-score on the DirectRunner, with
                  --filtered-output and the same filter
"""
from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import sys
import tempfile
import time
from typing import Any

import children  # lab/benchmarks/children.py, beside this script

_HERE = os.path.dirname(os.path.abspath(__file__))
_DATA = os.environ.get("PARAFLAX_DATA_DIR",
                       os.path.join(_HERE, "..", "..", "..", "shared", "data"))
_BITEXT = [os.path.join(_DATA, "multi30k_task1", f"train.{l}.gz")
           for l in ("de", "en")]
FILTER = {"score": "overlap_1", "lo": 0.2, "hi": 0.8}
STAGES = ("backtranslate", "score", "filter", "filter_stream", "beam_score")
FILTERS = ("filter", "filter_stream")


def _parse(argv: list[str] | None) -> argparse.Namespace:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--nmt-workdir", required=True)
  parser.add_argument("--bt-sizes", type=int, nargs="+",
                      default=[10_000, 100_000])
  parser.add_argument("--sizes", type=int, nargs="+",
                      default=[100_000, 1_000_000])
  parser.add_argument("--beam-sizes", type=int, nargs="+", default=None,
                      help="beam_score sizes (default: --sizes)")
  parser.add_argument("--stages", nargs="+", choices=STAGES, default=STAGES)
  parser.add_argument("--beam", type=int, default=2)
  parser.add_argument("--batch-size", type=int, default=64)
  parser.add_argument("--window", type=int, default=10_000)
  parser.add_argument("--devices", type=int, default=1)
  parser.add_argument("--tmp", default=None, help="scratch folder")
  parser.add_argument("--output", default=os.path.join(
      os.path.dirname(_HERE), "results", f"stage_scale.{children.hardware()}.json"))
  parser.add_argument("--child", help=argparse.SUPPRESS)
  parser.add_argument("--child-input", help=argparse.SUPPRESS)
  parser.add_argument("--child-output", help=argparse.SUPPRESS)
  return parser.parse_args(argv)


def _lines(path: str) -> list[str]:
  with gzip.open(path, "rt", encoding="utf-8") as f:
    return f.read().splitlines()


def _repeat(lines: list[str], n: int, path: str) -> float:
  """The first `n` of `lines` repeated, one a line; how many times over."""
  with open(path, "w", encoding="utf-8") as f:
    for line in itertools.islice(itertools.cycle(lines), n):
      f.write(line + "\n")
  return n / len(lines)


def _measure(args: argparse.Namespace) -> dict[str, Any]:
  """In the child: one stage over `--child-input`."""
  stage, source, out = args.child, args.child_input, args.child_output
  start = time.perf_counter()
  if stage == "backtranslate":
    from paraflax.inference import translation  # pylint: disable=g-import-not-at-top
    records = translation.backtranslate(
        args.nmt_workdir, out, src=source + ".de", ref=source + ".en",
        beam=args.beam, nbest=1, batch_size=args.batch_size,
        stop="best_ended", window=args.window, overwrite=True)
    n = records
  elif stage == "score":
    from paraflax.inference import score_paraphrases  # pylint: disable=g-import-not-at-top
    n = score_paraphrases.score_file(source, out, overwrite=True)
  elif stage in FILTERS:
    from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
    name = tasks.register_backtranslated(source, FILTER)
    read = tasks.iter_task if stage == "filter" else tasks.iter_examples
    n = sum(len(chunk) for chunk in read(name, "train"))
  else:
    from paraflax.inference import score_paraphrases  # pylint: disable=g-import-not-at-top
    score_paraphrases.beam_score_file(
        source, out, runner="DirectRunner", filtered_output=out + ".kept",
        filter=f"{FILTER['score']},{FILTER['lo']},{FILTER['hi']}",
        overwrite=True)
    with open(source, "rb") as f:
      n = sum(1 for _ in f)
  seconds = time.perf_counter() - start
  return {"records": n, "seconds": seconds, "records_per_s": n / seconds,
          "peak_rss_mib": children.peak_rss_mib()}


def _child(args: argparse.Namespace, stage: str, source: str, out: str
           ) -> dict[str, Any]:
  argv = [os.path.abspath(__file__), "--nmt-workdir", args.nmt_workdir,
          "--beam", str(args.beam), "--batch-size", str(args.batch_size),
          "--window", str(args.window), "--child", stage, "--child-input",
          source, "--child-output", out]
  print(f"  {stage} {source} ...", file=sys.stderr, flush=True)
  return children.run_child(argv, num_devices=args.devices)


def _renumbered(lines: list[str], n: int, path: str) -> None:
  """The first `n` of `lines` repeated, their ids made unique again (the
  n-best key (id, rank) is checked)."""
  with open(path + ".tmp", "w", encoding="utf-8") as f:
    for i, line in enumerate(itertools.islice(itertools.cycle(lines), n)):
      record = json.loads(line)
      record["id"] = i
      f.write(json.dumps(record, ensure_ascii=False) + "\n")
  os.replace(path + ".tmp", path)  # whole or not there: a rerun reuses it


def _scored(args: argparse.Namespace, tmp: str, base_records: list[str],
            n: int) -> str:
  """The scored records of size `n`: scored by a child up to the records'
  size, past it the scored records of that size repeated."""
  scored = os.path.join(tmp, f"scored{n}.jsonl")
  if os.path.exists(scored):
    return scored
  if n <= len(base_records):
    source = os.path.join(tmp, f"records{n}.jsonl")
    _renumbered(base_records, n, source)
    _child(args, "score", source, scored)
    os.remove(source)
    return scored
  base = _scored(args, tmp, base_records, len(base_records))
  with open(base, encoding="utf-8") as f:
    _renumbered([l.rstrip("\n") for l in f], n, scored)
  return scored


def main(argv: list[str] | None = None) -> None:
  args = _parse(argv)
  if args.child:
    print(json.dumps(_measure(args)))
    return
  # Checked before a scratch folder is made: a refused run leaves none.
  given = os.path.join(args.tmp or "", "bt.jsonl")
  if "backtranslate" not in args.stages and not (
      args.tmp and os.path.exists(given)):
    raise SystemExit(
        f"stage_scale: {given} not found: the stages after backtranslate "
        "read the records of a back-translation run; add backtranslate to "
        "--stages (with --bt-sizes) or give --tmp a folder that holds bt.jsonl")
  tmp = args.tmp or tempfile.mkdtemp(prefix="stage_scale-")
  records = os.path.join(tmp, "bt.jsonl")
  os.makedirs(tmp, exist_ok=True)
  result = {**children.run_facts(__file__, argv),
            "nmt_workdir": args.nmt_workdir, "beam": args.beam,
            "batch_size": args.batch_size, "window": args.window,
            "devices": args.devices, "filter": FILTER, "stages": {}}
  sides = [_lines(p) for p in _BITEXT]
  if "backtranslate" in args.stages:
    for n in args.bt_sizes:
      base = os.path.join(tmp, f"bitext{n}")
      cycles = [_repeat(side, n, f"{base}.{lang}")
                for side, lang in zip(sides, ("de", "en"))][0]
      row = _child(args, "backtranslate", base, f"{base}.bt.jsonl")
      row["cycles_of_input"] = cycles
      result["stages"].setdefault("backtranslate", {})[str(n)] = row
      os.replace(f"{base}.bt.jsonl", records)
      for lang in ("de", "en"):
        os.remove(f"{base}.{lang}")
      children.write_result(args.output, result)
  for stage in ("score", *FILTERS, "beam_score"):
    if stage not in args.stages:
      continue
    with open(records, encoding="utf-8") as f:
      base_records = [l.rstrip("\n") for l in f]
    sizes = args.beam_sizes if stage == "beam_score" and args.beam_sizes \
        else args.sizes
    for n in sizes:
      source = os.path.join(tmp, f"records{n}.jsonl")
      if stage in FILTERS:
        row = _child(args, stage, _scored(args, tmp, base_records, n), "")
      else:
        _renumbered(base_records, n, source)
        row = _child(args, stage, source,
                     os.path.join(tmp, f"scored{n}.jsonl")
                     if stage == "score" else source + ".beam.jsonl")
      row["cycles_of_input"] = n / len(base_records)
      result["stages"].setdefault(stage, {})[str(n)] = row
      children.write_result(args.output, result)
      for path in (source, source + ".beam.jsonl", source + ".beam.jsonl.kept"):
        for extra in (path, path + ".meta.json"):
          if os.path.exists(extra):
            os.remove(extra)
  print(json.dumps({s: {n: (round(r["records_per_s"], 1),
                            round(r["peak_rss_mib"], 1))
                        for n, r in v.items()}
                    for s, v in result["stages"].items()}, indent=1))


if __name__ == "__main__":
  main()
