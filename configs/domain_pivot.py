r"""Pivot paraphrases (Bannard & Callison-Burch 2005) reranked by monolingual
distributional similarity from online LSH signatures (Van Durme & Lall
2010). The keys are read by paraflax/domain/pivot.py and
paraflax/domain/pivot_table.py (`pivot`) and paraflax/domain/monods.py
(`monods`); the files are flags.

Commands:
  paraflax pivot --bitext bitext_multi30k_de_en bitext_newstest_pool_de_en \
      --bitext ... --output runs/pivot/table.txt
  paraflax monods --corpus mono_en_brown --table runs/pivot/table.txt \
      --bits 256 --output runs/pivot/reranked.txt
  paraflax eval-ppdb --table runs/pivot/reranked.txt --output runs/pivot/ppdb
Result (the general table of seven de/fr/cs-en bitexts, docs/domain.md's
commands, each run aligning a table of its own:
{domain/pivot-general.lines=15,681,798} paraphrase pairs in the `pivot` run;
P@1 of pivoting alone spans {domain.general_pivot_p1_range=38.6-38.8} over three runs;
on {headline/pivot-monods.hardware=Intel Xeon, 2 cores} in
{headline/pivot-monods.time=7 min 19 s (8 min 46 s of CPU), peak 2,073 MiB, fresh clone, cold caches}): PPDB agreement P@1 / P@5
{headline/pivot-monods.p.p1=38.8} / {headline/pivot-monods.p.p5=23.9} by p(e2|e1),
{headline/pivot-monods.score.p1=40.2} / {headline/pivot-monods.score.p5=24.5} reranked with MonoDS
(B = 256, w = 0.5).
Docs: docs/domain.md.
"""
import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.pivot = ml_collections.ConfigDict()
  # The pivot languages read from the bitexts given, e.g. ("fr",) (the
  # domain paraphrasing paper's French); (): every language of them.
  c.pivot.languages = ()
  c.pivot.max_phrase_len = 4  # words a side of an extracted phrase pair
  c.pivot.max_sentence_words = 80  # longer pairs are skipped (as Moses)
  c.pivot.block_pairs = 100_000  # sentence pairs aligned together, one part
  c.pivot.align_iterations = 1.0  # eflomal's iterations, x its default
  # The pruning below and monods.weight are paraflax's choice (the
  # domain paraphrasing paper states none).
  c.pivot.max_pivots = 20  # foreign phrases f kept per e1, by p(f|e1)
  c.pivot.max_back = 50  # English phrases e2 kept per f, by p(e2|f)
  c.pivot.max_paraphrases = 50  # e2 written per e1, by p(e2|e1)
  c.pivot.min_prob = 1e-4  # e2 with a lower p(e2|e1) are not written
  # Phrases per bucket of the table step (e1 of a sparse product, f of
  # p(e2|f)): its memory, whatever the bitext's size.
  c.pivot.rows_per_block = 20_000

  c.monods = ml_collections.ConfigDict()
  c.monods.bits = 256  # signature bits b; a multiple of 8 (packed bytes)
  c.monods.pool_bits = 16  # the Gaussian pool holds 2**pool_bits values
  c.monods.chunk_events = 8192  # (phrase, feature) events per device step
  c.monods.seed = 0  # the pool and the per-bit hashes
  # Reranking score: (1 - weight) * log p(e2|e1) + weight * log cos, cos
  # floored at `floor`; weight 1 ranks by MonoDS alone, 0 by p alone.
  c.monods.weight = 0.5
  c.monods.floor = 0.01
  c.mesh = ml_collections.ConfigDict()
  c.mesh.num_devices = -1  # -1: every visible device
  return c
