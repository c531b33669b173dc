"""The block every filtering sweep shares; not a sweep config itself.

Sweep configs import it as `from configs import common` (the loader makes
`configs` the folder of the file it loads: here, configs/sweeps/).

Scale: N = `max_pairs` pairs per point (2,000 here, small enough for GRAN
on 2 CPU cores: on 2 cores of an Intel Xeon its train step runs
{train_throughput.intel-xeon-2core.json:results/model=gran,length_groups=8/updates_per_s:.1f=1.7} steps/s
and Avg's {train_throughput.intel-xeon-2core.json:results/model=avg,length_groups=1/updates_per_s:.0f=36},
lab/performance.md; the paper: 24,000) and PASSES passes over them
(train_steps = N * PASSES / batch, rounded down to whole megabatches: 160
at N = 2,000, 1,920 at 24,000). `--config.max_pairs=24000`
on the sweep command line runs the paper's N, steps following, unchanged;
`--config.scored=PATH` names the scored JSONL (`paraflax
score-paraphrases`).

Base: configs/paraphrase.py's encoder (negatives from a megabatch of 40,
paraflax's choice), or with `paper` (the `:paper` points of overlap.py and
lm_ppl.py) configs/papers/wieting2017.py's: Wieting et al. 2017's
training, mini-batches of 100 that supply their own negatives, margin
0.4 (train_steps = N * PASSES / 100: 160 at N = 2,000).
"""
import ml_collections

ENCODERS = ("avg", "lstmavg", "gran")
PASSES = 8
_BATCH, _MEGABATCH = 100, 40  # configs/paraphrase.py's
PAPER = "paper"  # the last part of an argument that asks for the paper's grid
EVERY = 40  # steps between dev evaluations and checkpoints: one megabatch


def encoder_and_rest(arg: str) -> tuple[str, list[str]]:
  """"gran" or "gran,overlap_2" -> ("gran", ["overlap_2"])."""
  encoder, *rest = arg.split(",")
  if encoder not in ENCODERS:
    raise ValueError(f"encoder {encoder!r}: use one of {', '.join(ENCODERS)}"
                     " (configs/sweeps/<grid>.py:<encoder>).")
  return encoder, rest


def bounded(score: str, lo: float, hi: float) -> str:
  """The override of one filter point."""
  return f"data.filter={dict(score=score, lo=lo, hi=hi)!r}"


def sweep(encoder: str, points=(), axes=(), paper: bool = False
          ) -> ml_collections.ConfigDict:
  """A sweep of the paraphrase recipe over a scored back-translation file;
  `paper`: on configs/papers/wieting2017.py's training (megabatch 1)."""
  megabatch = 1 if paper else _MEGABATCH
  c = ml_collections.ConfigDict()
  c.base = (f"configs/papers/wieting2017.py:{encoder}" if paper
            else f"configs/paraphrase.py:{encoder}")
  c.scored = "runs/bt.scored.jsonl"  # from paraflax score-paraphrases
  c.max_pairs = 2000  # N: every point trains on exactly N filtered pairs
  # Keys of the base config every point sets; follow scored and max_pairs.
  c.settings = ml_collections.ConfigDict()
  c.settings.data = ml_collections.ConfigDict()
  c.settings.data.task = "backtranslated:" + c.get_ref("scored")
  c.settings.data.max_pairs = c.get_ref("max_pairs")
  c.settings.train_steps = (c.get_ref("max_pairs") * PASSES
                            // (_BATCH * megabatch) * megabatch)
  c.settings.eval_every = EVERY
  c.settings.checkpoint = ml_collections.ConfigDict({"every": EVERY})
  c.overrides = ()  # "key=value" every point sets before its own
  c.points = tuple(points)
  c.axes = tuple(axes)
  # The best STSb.dev-tuning checkpoint (config.select) is evaluated on:
  c.columns = ("sts_all/STSb.test/pearson",
               "sts_all/semeval_2012_2015/mean_pearson",
               "sts_all/SICK.train/pearson")
  return c
