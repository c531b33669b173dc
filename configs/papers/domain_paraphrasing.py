r"""The domain-adapted paraphrasing paper's selection and pivot settings:
Moore-Lewis selection with in-domain and general LMs (dH(s) = H_in(s) -
H_out(s) per word, lower is closer; the paper's text states the opposite
direction, lab/fidelity.md), the general corpus sorted into equal bins;
pivot paraphrases p(e2|e1) = sum_f p(e2|f) p(f|e1) through French, the
paper's pivot language (pivot.languages), reranked by LSH MonoDS
signatures. The paper states no LM order, phrase length or signature
size: the 3-gram LMs, phrases of up to 4 words and 256 bits here are
paraflax's choice, and so are MonoDS's weight 0.5 and the pivot pruning
(20 pivots per phrase, 50 paraphrases per pivot, p(e2|e1) >= 1e-4).
The argument picks the block: select (`paraflax select-domain`) or pivot
(`paraflax pivot`, `paraflax monods`).

Command:
  paraflax select-domain --config configs/papers/domain_paraphrasing.py:select \
      --in-domain D/biomed.train.en --general-src D/general.mul \
      --general-tgt D/general.en --src-lang mul --output D/select
  paraflax eval-domain --select-dir D/select --test D/biomed.test.en --output D/eval
Time and result, on
{runs/paper_presets/domain-paraphrasing-select.about.json:hardware:str=Intel Xeon, 2 cores}:
select-domain and eval-domain together
{runs/paper_presets/domain-paraphrasing-select.about.json:time:str=15 s (15 s of CPU), peak 267 MiB, fresh clone, cold caches}; top diffCE /
random test perplexity {paper_presets/domain-paraphrasing-select.ratio_2000=0.514} at 2,000 sentences,
{paper_presets/domain-paraphrasing-select.ratio_32000=0.792} at 32,000, against {headline/domain-selection.ratio_2000=0.505} and
{headline/domain-selection.ratio_32000=0.799} for configs/domain.py's 2-gram LMs (chosen on the dev text; lab/fidelity.md).
The pivot block reads only the French-English pairs of the bitexts it is
given (`paraflax pivot --bitext bitext_multi30k_fr_en --bitext
bitext_newstest_pool_fr_en ...`).
Still differs from the paper, because of data or compute: the general
corpus is the bundled bitext (95,442 pairs), the in-domain text 27.5k
biomedical sentences, not the paper's corpora; MonoDS is computed on the
Brown corpus, not a web-scale English corpus.
Docs: lab/fidelity.md.
"""
import ml_collections

from configs import base

BLOCKS = {"select": "domain.py", "pivot": "domain_pivot.py"}


def get_config(block: str) -> ml_collections.ConfigDict:
  if block not in BLOCKS:
    raise ValueError(f"block {block!r}: use one of {', '.join(BLOCKS)}.")
  c = base.load(BLOCKS[block])
  if block == "select":
    c.order = 3  # both selection LMs; paraflax's choice
  else:
    c.pivot.languages = ("fr",)  # the paper pivots through French
    c.pivot.max_phrase_len = 4  # paraflax's choice
    c.monods.bits = 256  # paraflax's choice
  c.lock()
  return c
