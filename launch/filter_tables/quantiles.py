"""The 1-best score quantiles (10 % / 50 % / 90 %) of scored files, as the
README's table: usage quantiles.py NAME... (reads NAME.scored.jsonl)."""
import json, sys
import numpy as np
SCORES = ["length", "cost", "overlap_1", "bleu", "lm_ppl", "ref_prob"]
print("| 1-best pairs | " + " | ".join(SCORES) + " |\n|---|" + "---|" * len(SCORES))
for name in sys.argv[1:]:
  best = [r["scores"] for r in map(json.loads, open(f"{name}.scored.jsonl")) if r.get("rank", 0) == 0]
  cells = []
  for s in SCORES:
    v = [b[s] for b in best if b.get(s) is not None]
    cells.append(" / ".join(f"{q:.3g}" for q in np.quantile(v, [0.1, 0.5, 0.9])) if v else "-")
  print(f"| {name} ({len(best)}) | " + " | ".join(cells) + " |")
