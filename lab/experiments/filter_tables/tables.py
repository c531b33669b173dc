"""Markdown filter tables (the paper's shape) from sweeps/<name>/<score>_<enc>/results.json."""
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import run_tables  # lab/tools/run_tables.py
FILTERS = ["random", "length", "cost", "overlap_1", "bleu", "lm_ppl", "ref_prob",
           "overlap_1 ranges", "bleu ranges"]
# sweeps.sh names overlap.py:avg (overlap_1) "overlap"; the ranges grids
# (overlap.py:avg,SCORE,ranges) live in <SCORE>_ranges_<enc>.
DIRS = {"overlap_1": "overlap", "overlap_1 ranges": "overlap_1_ranges",
        "bleu ranges": "bleu_ranges"}
TEST, STS = "sts_all/STSb.test/pearson", "sts_all/semeval_2012_2015/mean_pearson"

def table(name, enc="avg"):
  rows = [f"| filter | best setting (dev) | STSb dev | STSb test | STS12-15 mean | points run / failed / grid |",
          "|---|---|---:|---:|---:|---|"]
  for f in FILTERS:
    path = f"sweeps/{name}/{DIRS.get(f, f)}_{enc}/results.json"
    if not os.path.exists(path):
      rows.append(f"| {f} | not run | | | | |"); continue
    pts = json.load(open(path))["points"]
    done = [p for p in pts if p["status"] == "finished"]
    failed = [p for p in pts if p["status"].startswith("failed")]
    count = f"{len(done)} / {len(failed)} / {len(pts)}"
    if not done:
      rows.append(f"| {f} | none kept N pairs | | | | {count} |"); continue
    if f == "random":
      dev = sum(p["selected"] for p in done) / len(done)
      m = lambda k: run_tables.seeds_mean(pts, k)
      rng = lambda k: f"{100*min(p['columns'][k] for p in done):.2f}-{100*max(p['columns'][k] for p in done):.2f}"
      rows.append(f"| random (mean of {len(done)} seeds; range) | - | {100*dev:.2f} | {100*m(TEST):.2f} ({rng(TEST)}) | {100*m(STS):.2f} ({rng(STS)}) | {count} |")
      continue
    b = run_tables.best_point(pts)
    setting = "[{:g}, {:g}]".format(*run_tables.bounds(b))
    rows.append(f"| {f} | {setting} | {100*b['selected']:.2f} | {100*b['columns'][TEST]:.2f} | {100*b['columns'][STS]:.2f} | {count} |")
  return "\n".join(rows)


def cell(name, f, enc="avg"):
  path = f"sweeps/{name}/{DIRS.get(f, f)}_{enc}/results.json"
  if not os.path.exists(path):
    return "n/a (no NMT cost)" if (name, f) == ("wikiauto", "cost") else "not run"
  # The docs' table computes its cells from the kept sweeps the same way.
  return run_tables.filter_cell(json.load(open(path))["points"], f == "random")

def paired(names):
  """The paper's Tables 5-7 shape: filter x {Avg, GRAN}, one column pair per file."""
  out = ["| filter | " + " | ".join(f"{n} Avg | {n} GRAN" for n in names) + " |",
         "|---|" + "---|---|" * len(names)]
  for f in FILTERS:
    out.append(f"| {f} | " + " | ".join(f"{cell(n, f)} | {cell(n, f, 'gran')}" for n in names) + " |")
  return "\n".join(out)

def combined(names):
  out = ["| filter | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
  for f in FILTERS:
    out.append(f"| {f} | " + " | ".join(cell(n, f) for n in names) + " |")
  return "\n".join(out)

if sys.argv[1] in ("--combined", "--paired"):
  print((combined if sys.argv[1] == "--combined" else paired)(sys.argv[2:])); sys.exit()
for name in sys.argv[1:]:
  print(f"\n{name}\n"); print(table(name))
