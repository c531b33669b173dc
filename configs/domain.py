r"""Moore-Lewis cross-entropy-difference selection (Moore & Lewis 2010) of a
general bitext by an in-domain English text, and its evaluation (the
perplexity curve of the paper's Figure 3). The input and output files are
flags.

Commands (the flags --bins, --order and --seed set these keys too):
  paraflax domain-data --output D
  paraflax select-domain --in-domain D/biomed.train.en \
      --general-src D/general.mul --general-tgt D/general.en --src-lang mul \
      --output D/select
  paraflax eval-domain --select-dir D/select --test D/biomed.test.en \
      --output D/eval
Time: the three commands {runs/headline/domain-selection.about.json:time:str=14 s (14 s of CPU), peak 305 MiB, fresh clone, cold caches}
on {runs/headline/domain-selection.about.json:hardware:str=Intel Xeon, 2 cores}
(95,442 general pairs); select-domain alone runs
{domain_throughput.intel-xeon-2core.json:sizes/sentences=1000000/measures/command/sentences_per_s:,.0f=35,938}
pairs/s at 1M pairs on 2 idle Intel Xeon cores (lab/benchmarks/README.md).
Result (biomedical test perplexity at 2,000 selected sentences): top
diffCE {headline/domain-selection.moore_lewis_2000=730.3},
random {headline/domain-selection.random_2000=1444.8}
({headline/domain-selection.ratio_2000=0.505} of it),
n-gram overlap {headline/domain-selection.ngram_overlap_2000=988.3}.
The selection LMs' order 2 and min_count 2 were chosen on the dev text
(D/biomed.dev.en as --test; lab/results/runs/domain_settings/): order 2
gave {domain_settings/dev-m2-o2.ratio_2000=0.503} of random at 2,000,
order 3 {domain_settings/dev-m2-o3.ratio_2000=0.512},
order 4 {domain_settings/dev-m2-o4.ratio_2000=0.515}. The paper states no order; `--order 3` gives
3-gram selection LMs (configs/papers/domain_paraphrasing.py:select).
Docs: docs/domain.md.
"""
import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  # n-gram order of both selection LMs: 2, chosen on the dev text (the
  # header gives the ratios); the curve's LMs keep 3 (eval_order).
  c.order = 2
  c.bins = 8  # equal-size bins of the selectable general sentences
  c.seed = 0  # which general sentences train the general LM
  # Also the same selectable sentences in a random order of the seed, cut
  # into bins of the same sizes (random_<i>.*, Tasks selected:SEL:r<i>):
  # the same-size random control of any set of diffCE bins.
  c.random_bins = True
  c.block = 10000  # sentences scored per unit of progress and resumption
  c.memory = "1G"  # lmplz's and build_binary's sorting memory
  c.discount_fallback = False  # lmplz --discount_fallback (tiny corpora)
  # The LMs' closed vocabulary: tokens seen this often in the in-domain
  # text, the rest read as one <oov> word (Moore & Lewis 2010); 0: open.
  c.min_count = 2
  # eval-domain: selected general sentences per point of the curve.
  c.eval_sizes = (2000, 4000, 8000, 16000, 32000)
  # The curve's LMs, fixed whatever the selection's settings, so that
  # selections compare on the same events: the seed's 3-grams, the
  # vocabulary of the in-domain words seen twice (Moore & Lewis 2010).
  c.eval_order = 3
  c.eval_min_count = 2
  # The curve's LMs estimated with lmplz --vocab_pad at the closed
  # vocabulary's size: each vocabulary word an LM never saw gets its own
  # share of probability; False: <unk> is one event for all of them
  # (docs/domain.md gives the curve both ways).
  c.eval_vocab_pad = True
  c.eval_seed = 0  # of the random selection
  c.overlap_order = 3  # n-gram overlap selection: n-grams up to this n
  return c
