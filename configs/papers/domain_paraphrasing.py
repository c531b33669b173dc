r"""The domain-adapted paraphrasing paper's selection and pivot settings:
Moore-Lewis selection with 3-gram in-domain and general LMs (dH(s) =
H_in(s) - H_out(s) per word, lower is closer; the paper's text states the
opposite direction, docs/fidelity.md), the general corpus sorted into
equal bins; pivot paraphrases p(e2|e1) = sum_f p(e2|f) p(f|e1) from phrase
pairs of up to 4 words, reranked by LSH MonoDS signatures of 256 bits.
The argument picks the block: select (`paraflax select-domain`) or pivot
(`paraflax pivot`, `paraflax monods`).

Command:
  paraflax select-domain --config configs/papers/domain_paraphrasing.py:select \
      --in-domain D/biomed.train.en --general-src D/general.mul \
      --general-tgt D/general.en --src-lang mul --output D/select
  paraflax eval-domain --select-dir D/select --test D/biomed.test.en --output D/eval
Time and result (AMD EPYC, 2 cores shared with other jobs): select-domain
108 s, eval-domain 272 s; top diffCE / random test perplexity 0.503 at
2,000 sentences, 0.794 at 32,000, against 0.495 and 0.800 for
configs/domain.py's 2-gram LMs (chosen on the dev text; docs/fidelity.md).
Still differs from the paper, because of data or compute: the general
corpus is the bundled bitext (95,442 pairs), the in-domain text 27.5k
biomedical sentences, not the paper's corpora; MonoDS is computed on the
Brown corpus, not a web-scale English corpus.
Docs: docs/fidelity.md.
"""
import ml_collections

from configs import base

BLOCKS = {"select": "domain.py", "pivot": "domain_pivot.py"}


def get_config(block: str) -> ml_collections.ConfigDict:
  if block not in BLOCKS:
    raise ValueError(f"block {block!r}: use one of {', '.join(BLOCKS)}.")
  c = base.load(BLOCKS[block])
  if block == "select":
    c.order = 3  # both selection LMs
  else:
    c.pivot.max_phrase_len = 4
    c.monods.bits = 256
  c.lock()
  return c
