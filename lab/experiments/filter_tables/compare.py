"""Two sweeps of the same grid side by side, point by point (STSb dev, STSb
test, STS12-15 mean; the selected point of each marked *): usage compare.py
LABEL_A=SWEEP_DIR_A LABEL_B=SWEEP_DIR_B (e.g. Avg=.../length_avg GRAN=.../length_gran)."""
import json, sys
TEST, STS = "sts_all/STSb.test/pearson", "sts_all/semeval_2012_2015/mean_pearson"

sweeps = [arg.split("=", 1) for arg in sys.argv[1:]]
points = {label: {p["name"]: p for p in json.load(open(f"{d}/results.json"))["points"]} for label, d in sweeps}
best = {label: max((p for p in pts.values() if p["status"] == "finished"), key=lambda p: p["selected"], default=None)
        for label, pts in points.items()}
head = " | ".join(f"{l} dev / test / STS12-15" for l, _ in sweeps)
print(f"| point | {head} |\n|---|" + "---|" * len(sweeps))
for name in points[sweeps[0][0]]:
  cells = []
  for label, _ in sweeps:
    p = points[label].get(name)
    if p is None or p["status"] != "finished":
      cells.append("kept < N pairs" if p and p["status"].startswith("failed") else "not run"); continue
    mark = "*" if p is best[label] else ""
    cells.append(f"{mark}{100*p['selected']:.2f} / {100*p['columns'][TEST]:.2f} / {100*p['columns'][STS]:.2f}")
  print(f"| {name} | " + " | ".join(cells) + " |")
