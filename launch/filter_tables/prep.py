"""Source/reference files for issue 11 (bt = back-translated, held = LM/held-out refs)."""
import random
import sys
import paraflax

PLAN = {  # task: (n back-translated, n held-out refs, shuffle)
  "multi30k_de_en": (10000, 5000, False),
  "multi30k_fr_en": (10000, 5000, False),
  "newstest_pool_de_en": (5000, 5000, True),
  "newstest_pool_fr_en": (5000, 2000, True),
  "multi30k_cs_en": (10000, 5000, False),
  "newstest_pool_cs_en": (5000, 5000, True),
  "opennmt_wmt_de_en": (5000, 5000, True),  # 9,999 non-empty pairs
}
for name in sys.argv[1:] or PLAN:  # default: every file
  n_bt, n_held, shuffle = PLAN[name]
  ex = paraflax.examples("bitext_" + name, "train")
  ex = [e for e in ex if e["source"].strip() and e["target"].strip()]
  if shuffle:
    random.Random(0).shuffle(ex)
  bt, held = ex[:n_bt], ex[n_bt:n_bt + n_held]
  with open(f"{name}.src", "w") as f: f.writelines(e["source"].replace("\n", " ") + "\n" for e in bt)
  with open(f"{name}.ref", "w") as f: f.writelines(e["target"].replace("\n", " ") + "\n" for e in bt)
  with open(f"{name}.held.en", "w") as f: f.writelines(e["target"].replace("\n", " ") + "\n" for e in held)
  print(name, len(ex), len(bt), len(held))
