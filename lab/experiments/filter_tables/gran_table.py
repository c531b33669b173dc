"""The GRAN rows: sweeps/<data>/gran_best/results.json (random seed 0 vs the best Avg length point)."""
import json, os
TEST, STS = "sts_all/STSb.test/pearson", "sts_all/semeval_2012_2015/mean_pearson"
print("| GRAN | point | STSb dev | STSb test | STS12-15 mean |\n|---|---|---:|---:|---:|")
for name in ("multi30k_de_en", "newstest_pool_de_en", "wikiauto"):
  path = f"sweeps/{name}/gran_best/results.json"
  if not os.path.exists(path): continue
  for p in json.load(open(path))["points"]:
    if p["status"] != "finished":
      print(f"| {name} | {p['name']} | {p['status'][:40]} | | |"); continue
    print(f"| {name} | {p['name']} | {100*p['selected']:.2f} | {100*p['columns'][TEST]:.2f} | {100*p['columns'][STS]:.2f} |")
