"""The 1-best score quantiles (10 % / 50 % / 90 %) of scored files, as the
README's table, and how many 1-best translations copy the reference (the
same string; `overlap_1` = 1): usage quantiles.py NAME... (reads
NAME.scored.jsonl)."""
import json, sys
import numpy as np
SCORES = ["length", "cost", "overlap_1", "bleu", "lm_ppl", "ref_prob"]
print("| 1-best pairs | " + " | ".join(SCORES) + " | copies | overlap_1 = 1 |\n|---|"
      + "---|" * (len(SCORES) + 2))
for name in sys.argv[1:]:
  best = [r for r in map(json.loads, open(f"{name}.scored.jsonl")) if r.get("rank", 0) == 0]
  cells = []
  for s in SCORES:
    v = [b["scores"][s] for b in best if b["scores"].get(s) is not None]
    cells.append(" / ".join(f"{q:.3g}" for q in np.quantile(v, [0.1, 0.5, 0.9])) if v else "-")
  for n in (sum(b["translation"] == b["reference"] for b in best),
            sum(b["scores"]["overlap_1"] == 1 for b in best)):
    cells.append(f"{n:,} ({100 * n / len(best):.1f} %)")
  print(f"| {name} ({len(best):,}) | " + " | ".join(cells) + " |")
