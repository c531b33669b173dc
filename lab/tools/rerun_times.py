"""Writes the time of each run that `lab/run.py --keep` kept (its sidecar's
`time`, which configs and docs quote) from that rerun's record, as
rerun_tables.time_text states it: the span, and whether the clone's caches
were cold when it began or warm from the steps before it there.

    python lab/tools/rerun_times.py            # write what differs
    python lab/tools/rerun_times.py --check    # exit 1 when one differs

A sidecar belongs to the kept record of its commit and machine; a run
kept otherwise since (by hand, or on another machine) keeps its time.
Then `python lab/tools/render_tables.py` renders the quoted times.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys
from collections.abc import Iterator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collect_result  # pylint: disable=wrong-import-position
import rerun_tables  # pylint: disable=wrong-import-position
import run_needs  # pylint: disable=wrong-import-position
import run_results  # pylint: disable=wrong-import-position


def stale() -> Iterator[tuple[str, dict, str]]:
  """(run "TABLE/RUN", its sidecar, the time its kept record states) for
  each sidecar whose time is not that."""
  for path in sorted(glob.glob(os.path.join(run_results.RERUNS, "*",
                                            "*.json"))):
    with open(path, encoding="utf-8") as f:
      record = json.load(f)
    if not record["kept_now"]:
      continue
    ref = run_needs.ref(record["rerun_of"])
    about = run_results.load(ref).about
    if (about.get("commit"), about["hardware"]) != (record["commit"],
                                                    record["machine"]):
      continue
    text = rerun_tables.time_text(record)
    if about["time"] != text:
      yield ref, about, text


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--check", action="store_true",
                      help="write nothing; exit 1 when a time differs")
  args = parser.parse_args(argv)
  differ = list(stale())
  for ref, about, text in differ:
    print(f"{ref}: {about['time']!r}\n  -> {text!r}")
    if not args.check:
      table, run = ref.split("/")
      collect_result.write_about(table, run, {**about, "time": text})
  if args.check and differ:
    print(f"rerun_times: {len(differ)} kept times differ from their "
          "records; run python lab/tools/rerun_times.py", file=sys.stderr)
    return 1
  return 0


if __name__ == "__main__":
  sys.exit(main())
