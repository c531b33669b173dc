"""Rows read and peak memory of each process of an NMT run whose corpus is
split into `data.parts`, over several process counts on one machine (8 CPU
devices in all, launch/local_processes.sh, the processes sharing the
workdir): what each host of a pod reads of its own shards.

    python lab/benchmarks/pod_shards.py --work OUT \\
        --output lab/results/pod_shards.intel-xeon-2core.json

The corpus is the 9,999 OpenNMT WMT de-en pairs of the data folder written
as 8 gzipped TSV shards (a pod's sharded corpus); each run takes two
updates of a 24-unit model. A run is PARTS:PROCESSES (--runs; default the
parts 4 over 1, 2 and 4 processes, and 1 part over 4). Per process: its
peak RSS (/usr/bin/time) and the parts and pairs it read and encoded (the
files of other parts are not opened); per run, its logged losses. The
result is written by children.write_result, with the command, commit,
hardware and load.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import children  # lab/benchmarks/children.py, beside this script

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_DEVICES = 8
_SHARDS = 8
# Two updates of a small NMT: the run exists to read its parts.
_SETTINGS = ("--config.vocab.size=600", "--config.model.emb_dim=24",
             "--config.model.hidden=24", "--config.model.attention_dim=24",
             "--config.batch_size=32", "--config.data.max_len=32",
             "--config.data.width_multiple=32", "--config.train_steps=2",
             "--config.log_every=1", "--config.eval_every=1000",
             "--config.checkpoint.every=1000",
             "--config.evals.dev.sentences=4")
_READ = re.compile(r"\btrain(?: part (\d+) of \d+)?: \d+ of (\d+) pairs")
_PEAK = re.compile(r"peak_rss_kb=(\d+)")


def write_shards(data: str, out: str) -> int:
  """The corpus as _SHARDS gzipped TSV files in `out`; its pair count."""
  def read(name: str) -> list[str]:
    with gzip.open(os.path.join(data, name), "rt", encoding="utf-8") as f:
      return f.read().splitlines()
  # OpenNMT's source side is English: German first, English second.
  pairs = [(de.strip(), en.strip()) for en, de in
           zip(read("src-train.txt.gz"), read("tgt-train.txt.gz"))
           if de.strip() and en.strip() and "\t" not in de + en]
  os.makedirs(out, exist_ok=True)
  for k in range(_SHARDS):
    with gzip.open(os.path.join(out, f"part-{k:02d}.tsv.gz"), "wt",
                   encoding="utf-8") as f:
      f.writelines(f"{s}\t{t}\n" for s, t in pairs[k::_SHARDS])
  return len(pairs)


def timed_paraflax(work: str) -> str:
  """A `paraflax` in `work` that runs this checkout's under /usr/bin/time,
  which prints the process's peak RSS at its end."""
  timed = os.path.join(work, "paraflax_timed")
  with open(timed, "w", encoding="utf-8") as f:
    f.write("#!/bin/bash\nexec /usr/bin/time -f 'peak_rss_kb=%M' "
            f"{shlex.quote(os.path.join(_ROOT, '.venv', 'bin', 'paraflax'))}"
            ' "$@"\n')
  os.chmod(timed, 0o755)
  return timed


def run(parts: int, processes: int, shards: str, work: str,
        timed: str) -> dict:
  """One run of launch/local_processes.sh with `timed` as its paraflax; its
  processes' rows."""
  workdir = os.path.join(work, f"p{processes}.parts{parts}")
  for path in (workdir, workdir + ".logs"):
    shutil.rmtree(path, ignore_errors=True)
  subprocess.run(
      ["launch/local_processes.sh", str(processes),
       str(_DEVICES // processes), "configs/nmt.py:de", workdir,
       f"--config.data.train=('tsv:{shards}/*.tsv.gz',)",
       f"--config.data.parts={parts}", *_SETTINGS],
      # Its stderr names a failed process's log.
      cwd=_ROOT, env=dict(os.environ, PARAFLAX=timed), check=True,
      stdout=subprocess.DEVNULL)
  rows = []
  for i in range(processes):
    with open(os.path.join(workdir + ".logs", f"process_{i}.log"),
              encoding="utf-8") as f:
      log = f.read()
    # The reader's line for each part it encodes ("train part 1 of 4: S of
    # M pairs are longer than ..."); a process that loads another's cache
    # writes none.
    read = _READ.findall(log)
    rows.append({"process": i,
                 "peak_rss_mib": round(int(_PEAK.findall(log)[-1]) / 1024),
                 "parts_encoded": [int(part or 0) for part, _ in read],
                 "pairs_read": sum(int(n) for _, n in read)})
  with open(os.path.join(workdir, "metrics.jsonl"), encoding="utf-8") as f:
    losses = [r["loss"] for r in map(json.loads, f) if "loss" in r]
  return {"parts": parts, "processes": processes, "per_process": rows,
          "losses": losses}


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--work", required=True,
                      help="scratch folder for the shards and workdirs")
  parser.add_argument("--runs", nargs="+", default=["4:1", "4:2", "4:4",
                                                    "1:4"],
                      help="PARTS:PROCESSES of each run")
  parser.add_argument("--output", help="the result JSON")
  args = parser.parse_args(argv)
  data = os.path.join(os.environ.get("PARAFLAX_DATA_DIR") or os.path.join(
      os.path.dirname(_ROOT), "shared", "data"), "opennmt_wmt_ende_10k")
  work = os.path.abspath(args.work)
  shards = os.path.join(work, "shards")
  pairs = write_shards(data, shards)
  print(f"{pairs} pairs in {_SHARDS} shards", file=sys.stderr)
  timed = timed_paraflax(work)
  runs = []
  for spec in args.runs:
    parts, processes = map(int, spec.split(":"))
    runs.append(run(parts, processes, shards, work, timed))
    print(json.dumps(runs[-1]), file=sys.stderr)
  report = {**children.run_facts(__file__, argv), "pairs": pairs,
            "shards": _SHARDS, "devices": _DEVICES, "runs": runs}
  if args.output:
    children.write_result(args.output, report)


if __name__ == "__main__":
  main()
