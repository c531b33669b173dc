"""Source/reference files of the reference classifier's own back-translations
(issue 11, held apart): Multi30k de-en train lines 15,001-25,000, after
prep.py's 10,000 back-translated and 5,000 LM lines, so that the classifier
that scores multi30k_de_en.bt.jsonl never saw one of its ids."""
import paraflax

FIRST, N = 15000, 10000  # prep.py: lines 1-10,000 back-translated, 10,001-15,000 the LM's
ex = [e for e in paraflax.examples("bitext_multi30k_de_en", "train")
      if e["source"].strip() and e["target"].strip()]
part = ex[FIRST:FIRST + N]
with open("multi30k_de_en.clf.src", "w") as f: f.writelines(e["source"].replace("\n", " ") + "\n" for e in part)
with open("multi30k_de_en.clf.ref", "w") as f: f.writelines(e["target"].replace("\n", " ") + "\n" for e in part)
print("multi30k_de_en", len(ex), "lines; classifier lines", FIRST + 1, "-", FIRST + len(part))
