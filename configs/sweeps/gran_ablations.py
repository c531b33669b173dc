r"""The comparisons behind configs/gran.py's settings: that config with one
setting varied, on seeds 0 and 1, each point's best STSb.dev-tuning
checkpoint evaluated on STS. The argument names the setting:

  scramble  loss.scramble 0, 0.3, 0.5
  margin    loss.margin 0.4, 0.6, 0.8, 1.0
  mixture   PPDB's one-word pairs' share of the examples 0, 0.025, 0.05, 0.15
  batch     batches of 25, 50 and 100 pairs, each seeing 64,000 pairs
            (2,560, 1,280 and 640 updates) and 100 at 960 updates
  words     the PPDB words of configs/ppdb_words.py at its learning rate,
            1e-2 (runs/ppdb_words), and at 1e-3 (runs/ppdb_words_lr1e-3)

Command (after configs/gran.py's first two, which write the PPDB words;
`words` also needs them at 1e-3, which
lab/experiments/gran_ablations/ablations.sh writes):
  paraflax sweep --config configs/sweeps/gran_ablations.py:margin \
    --workdir runs/gran_margin
Time: each point is a configs/gran.py run (its header gives the time of
one on 2 AMD EPYC cores), for each point of a setting; `--worker i --workers
n` spreads the points over hosts (paraflax sweep --help).
"""
import ml_collections

# PPDB's one-word pairs as a share of the examples; 0: the human pairs alone.
_LEXICAL = (0.0, 0.025, 0.05, 0.15)


def _mixture(share: float) -> tuple[str, ...]:
  if not share:
    return ("data.task=paraphrase_en_human", "data.mixture=()")
  return ("data.task=", f"data.mixture=(('paraphrase_en_human', "
          f"{1 - share!r}), ('paraphrase_en_ppdb_lexical', {share!r}))")


# configs/ppdb_words.py's words at each learning rate (ablations.sh).
WORDS = {"1e-2": "runs/ppdb_words", "1e-3": "runs/ppdb_words_lr1e-3"}

SETTINGS = {
    "scramble": [(f"loss.scramble={p}",) for p in (0.0, 0.3, 0.5)],
    "margin": [(f"loss.margin={m}",) for m in (0.4, 0.6, 0.8, 1.0)],
    "mixture": [_mixture(s) for s in _LEXICAL],
    "batch": [("batch_size=25", "train_steps=2560", "eval_every=640"),
              ("batch_size=50", "train_steps=1280", "eval_every=320"),
              ("batch_size=100", "train_steps=640", "eval_every=160"),
              ("batch_size=100", "train_steps=960", "eval_every=160")],
    "words": [(f"model.word_vectors={w}/word_vectors.txt",)
              for w in WORDS.values()],
}


def get_config(arg: str) -> ml_collections.ConfigDict:
  if arg not in SETTINGS:
    raise ValueError(f"setting {arg!r}: use one of {', '.join(SETTINGS)} "
                     "(configs/sweeps/gran_ablations.py:<setting>).")
  c = ml_collections.ConfigDict()
  c.base = "configs/gran.py"
  c.settings = ml_collections.ConfigDict()
  c.overrides = ()
  c.points = ()
  c.axes = (tuple(SETTINGS[arg]), ("seed=0", "seed=1"))
  c.columns = ("sts_all/STSb.test/pearson",
               "sts_all/semeval_2012_2015/mean_pearson")
  return c
