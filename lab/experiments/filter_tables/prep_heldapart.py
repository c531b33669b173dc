"""Source/reference files of the reference classifier's own back-translations
(held apart): Multi30k train lines 15,001-25,000, after prep.py's
10,000 back-translated and 5,000 LM lines, so that the classifier that
scores NAME.bt.jsonl never saw one of its ids: usage prep_heldapart.py NAME
(multi30k_de_en, multi30k_fr_en or multi30k_cs_en)."""
import sys

from prep import pairs, write

FIRST, N = 15000, 10000  # prep.py: lines 1-10,000 back-translated, 10,001-15,000 the LM's
name = sys.argv[1]
ex = pairs(name)
part = ex[FIRST:FIRST + N]
write(f"{name}.clf.src", part, "source")
write(f"{name}.clf.ref", part, "target")
print(name, len(ex), "lines; classifier lines", FIRST + 1, "-", FIRST + len(part))
