"""Source/reference files of the filter tables (bt = back-translated, held = LM/held-out refs)."""
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


def pairs(name: str) -> list[dict]:
  """The train split's pairs of bitext_NAME with both sides non-empty."""
  return [e for e in paraflax.examples("bitext_" + name, "train")
          if e["source"].strip() and e["target"].strip()]


def write(path: str, examples: list[dict], side: str) -> None:
  """One line per example: its `side` ("source" or "target")."""
  with open(path, "w") as f:
    f.writelines(e[side].replace("\n", " ") + "\n" for e in examples)


if __name__ == "__main__":
  for name in sys.argv[1:] or PLAN:  # default: every file
    n_bt, n_held, shuffle = PLAN[name]
    ex = pairs(name)
    if shuffle:
      random.Random(0).shuffle(ex)
    bt, held = ex[:n_bt], ex[n_bt:n_bt + n_held]
    write(f"{name}.src", bt, "source")
    write(f"{name}.ref", bt, "target")
    write(f"{name}.held.en", held, "target")
    print(name, len(ex), len(bt), len(held))
