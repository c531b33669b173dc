r"""PPDB agreement of a MonoDS-reranked table at other weights w, from its
p= and monods= columns, without rerunning `paraflax monods`: the score
monods writes is (1 - w) log p + w log max(monods, floor)
(paraflax/domain/monods.py), so every w ranks the same candidates again.
The weight is chosen on the evaluation words themselves (PPDB's lexical
list holds no held-out words): a sweep to read, not a tuning.

Command (writes the sweep with the run's command, commit, hardware, load
and seconds, by children.write_result), after the kept run
`domain/monods-general`'s commands have made the table (`lab/run.py
monods_weights.general-256.intel-xeon-2core.json` runs them first):
  .venv/bin/python lab/benchmarks/monods_weights.py \
      --table runs/pivot/general.monods256.txt \
      --output lab/results/monods_weights.general-256.intel-xeon-2core.json
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import time

import numpy as np

import children  # lab/benchmarks/children.py, beside this script

_PIVOT_CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "configs", "domain_pivot.py")
WEIGHTS = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)


def reweighted(entry, weight: float, floor: float):
  """`entry` scored as monods scores it at `weight` (from its features,
  written to 6 significant digits)."""
  from paraflax.domain import monods  # pylint: disable=g-import-not-at-top
  score = monods.combined_score(entry.features["p"], entry.features["monods"],
                                weight, floor)
  return dataclasses.replace(entry, score=float(score))


def sweep(table_path: str, weights=WEIGHTS, gold=None) -> dict:
  """P@1 and P@5 x 100 of each weight over the table's PPDB words (`gold`:
  word -> PPDB paraphrases; default the data folder's lexical list)."""
  from paraflax import config  # pylint: disable=g-import-not-at-top
  from paraflax.domain import table  # pylint: disable=g-import-not-at-top
  from paraflax.evaluation import ppdb  # pylint: disable=g-import-not-at-top
  floor = config.load(_PIVOT_CONFIG).monods.floor
  gold = gold if gold is not None else ppdb.load_ppdb()
  start = time.perf_counter()
  cands, e1s, _ = ppdb.candidates(table.iter_table(table_path), gold)
  read_s = time.perf_counter() - start
  rows = []
  for w in weights:
    scored = {e1: [reweighted(e, w, floor) for e in es]
              for e1, es in cands.items()}
    p = ppdb.precision(scored, gold, ppdb.SCORE)
    rows.append({"weight": w, **{k: 100 * v for k, v in p.items()}})
  # The table's own score column, for the row of the weight it was made at.
  written = {k: 100 * v for k, v in ppdb.precision(cands, gold,
                                                   ppdb.SCORE).items()}
  return {"table": table_path, "floor": floor, "words": len(cands),
          "table_e1": len(e1s), "read_s": read_s, "rows": rows,
          "written_score": written}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--table", required=True,
                      help="a `paraflax monods` RERANKED table")
  parser.add_argument("--weights", type=float, nargs="+",
                      default=list(WEIGHTS))
  parser.add_argument("--output", required=True)
  args = parser.parse_args()
  result = children.run_facts(__file__, None)
  result["sweep"] = sweep(args.table, tuple(args.weights))
  for row in result["sweep"]["rows"]:
    print(f"w = {row['weight']:<5} P@1 {row['p@1']:.1f}  P@5 {row['p@5']:.1f}")
  children.write_result(args.output, result)


if __name__ == "__main__":
  main()
