r"""Paraphrastic sentence embeddings (the encoders of Wieting & Gimpel 2017)
at 2-core scale, in paraflax's setting: an English encoder trained with the
margin loss and hardest in-megabatch negatives (a megabatch of 40
mini-batches, from Wieting & Gimpel 2018; Wieting et al. 2017 take them
from the mini-batch: configs/papers/wieting2017.py) on the 19,432 human
English pairs of `paraphrase_en_human`, words from random init; the
argument is the encoder: avg, lstmavg or gran.

Command:
  paraflax train --config configs/paraphrase.py:gran --workdir runs/gran
  paraflax eval-sts --workdir runs/gran
Time (train and eval-sts) and result (STS12-15 mean / STSb test, Pearson
x 100) of the runs kept in lab/results/runs/sts_encoders/ (avg and lstmavg
as configs/avg.py and configs/lstmavg.py, the same settings), on
{sts_encoders/avg.hardware=AMD EPYC, 2 cores}:
  avg {sts_encoders/avg.time=58 s (1 min 35 s of CPU), fresh clone, cold caches},
  {sts_encoders/avg.sts12_15=54.06} / {sts_encoders/avg.stsb_test=59.35};
  lstmavg {sts_encoders/lstmavg.time=2 min 26 s (4 min 5 s of CPU), fresh clone, caches warm from the steps before it, in one clone after 4 min 13 s of other runs' steps},
  {sts_encoders/lstmavg.sts12_15=51.85} / {sts_encoders/lstmavg.stsb_test=55.66};
  gran {runs/sts_encoders/gran-random.about.json:time:str=3 min 2 s (5 min 6 s of CPU), fresh clone, caches warm from the steps before it, in one clone after 1 min 11 s of other runs' steps},
  {sts_encoders/gran-random.sts12_15=53.48} / {sts_encoders/gran-random.stsb_test=58.97} (docs/paraphrase-embeddings.md has each run's table).
  configs/gran.py is the better GRAN.
Docs: docs/paraphrase-embeddings.md.
"""
import ml_collections

from configs import common

ENCODERS = ("avg", "lstmavg", "gran")


def get_config(encoder: str) -> ml_collections.ConfigDict:
  if encoder not in ENCODERS:
    raise ValueError(f"encoder {encoder!r}: use one of {', '.join(ENCODERS)}.")
  c = ml_collections.ConfigDict()
  c.recipe = "paraphrase"
  c.seed = 0
  # Batch 100 and margin 0.4 as Wieting et al. 2017; megabatch 40 and
  # Adam 1e-3 paraflax's choice (the paper's negatives come from the
  # mini-batch: configs/papers/wieting2017.py). Steps: a megabatch (4,000
  # pairs, each encoder at its length_groups below) costs LSTM-avg
  # {train_throughput.intel-xeon-2core.json:results/model=lstmavg,length_groups=8/median_call_s:duration=20 s},
  # GRAN {train_throughput.intel-xeon-2core.json:results/model=gran,length_groups=8/median_call_s:duration=24 s}
  # and Avg {train_throughput.intel-xeon-2core.json:results/model=avg,length_groups=1/median_call_s:duration=1.1 s}
  # on 2 cores of an Intel Xeon (lab/benchmarks/README.md), so LSTM-avg and
  # GRAN get 12 megabatches (480 updates, ~2.5 passes over the 19.4k
  # pairs); Avg 50.
  steps, every = (2000, 400) if encoder == "avg" else (480, 160)
  c.train_steps = steps  # optimizer updates; a multiple of megabatch
  c.batch_size = 100
  c.megabatch = 40  # mini-batches whose sentences supply the negatives
  # Each embedding in the step sorts its sentences by length and runs them
  # in this many groups, each padded only to its own longest (a multiple of
  # 8 words): the same embeddings, negatives and updates as padding all to
  # the longest (1), with fewer padded steps (mean length 21 of max_len 40
  # here), but the groups run one after another, and each update's loss
  # embeds 400 sentences: 50 a group at 8. Pairs/s at 1, 2, 4 and 8 groups
  # on 2 idle cores of an Intel Xeon (lab/performance.md): GRAN
  # {train_throughput.intel-xeon-2core.json:results/model=gran,length_groups=1/pairs_per_s:,.0f=181}, {train_throughput.intel-xeon-2core.json:results/model=gran,length_groups=2/pairs_per_s:,.0f=208},
  # {train_throughput.intel-xeon-2core.json:results/model=gran,length_groups=4/pairs_per_s:,.0f=200}, {train_throughput.intel-xeon-2core.json:results/model=gran,length_groups=8/pairs_per_s:,.0f=166};
  # LSTM-avg {train_throughput.intel-xeon-2core.json:results/model=lstmavg,length_groups=1/pairs_per_s:,.0f=244}, {train_throughput.intel-xeon-2core.json:results/model=lstmavg,length_groups=2/pairs_per_s:,.0f=257},
  # {train_throughput.intel-xeon-2core.json:results/model=lstmavg,length_groups=4/pairs_per_s:,.0f=250}, {train_throughput.intel-xeon-2core.json:results/model=lstmavg,length_groups=8/pairs_per_s:,.0f=202}:
  # there `--config.length_groups=2` is as fast as any for both; 8 stays
  # the default, the step every kept GRAN and LSTM-avg run reruns with.
  # Groups save Avg's cheap mean little: {train_throughput.intel-xeon-2core.json:results/model=avg,length_groups=1/pairs_per_s:,.0f=3,640} padded,
  # {train_throughput.intel-xeon-2core.json:results/model=avg,length_groups=2/pairs_per_s:,.0f=3,932}, {train_throughput.intel-xeon-2core.json:results/model=avg,length_groups=4/pairs_per_s:,.0f=3,690} and {train_throughput.intel-xeon-2core.json:results/model=avg,length_groups=8/pairs_per_s:,.0f=3,395} at 2, 4 and 8 groups; it keeps 1, the
  # step its kept runs trained with.
  c.length_groups = 1 if encoder == "avg" else 8

  c.data = ml_collections.ConfigDict()
  c.data.task = "paraphrase_en_human"  # seqio Task or Mixture of pairs
  # Or Tasks sampled by rate, as a seqio Mixture with rates does (data.task
  # then ""): each example from member m with probability rate_m / sum of
  # rates, e.g. (("paraphrase_en_human", 0.95),
  # ("paraphrase_en_ppdb_lexical", 0.05)). () reads data.task; a Mixture
  # named there is its members concatenated (paraphrase_en_human).
  c.data.mixture = ()
  c.data.split = "train"
  c.data.max_len = 40  # words; longer sentences are truncated (and counted)
  c.data.vocab_min_count = 1
  c.data.vocab_max_size = 0  # 0: no limit
  # True (with model.word_vectors): the file's words that the pairs lack
  # join the vocabulary after the pairs' words, so that test words training
  # never saw keep their vectors instead of becoming <unk> (configs/gran.py).
  c.data.vocab_from_vectors = False
  # With data.task=backtranslated:SCORED.jsonl (paraflax score-paraphrases):
  # None, dict(score=NAME, lo=X, hi=Y) (lo <= score <= hi) or
  # dict(score="random"); then exactly max_pairs pairs, drawn by the seed
  # (0: all). See paraflax/data/filters.py.
  c.data.filter = None
  c.data.max_pairs = 0
  # A folder of `paraflax cache-task` (seqio's Beam cache of that Task):
  # the pairs are read from it instead of filtered again; "" reads the file.
  c.data.cache_dir = ""
  # The training pairs split into this many parts, each process of a run
  # reading and caching only its own (a multiple of the process count and
  # a divisor of batch_size; the megabatches are the same for any process
  # count, padded to max_len; the vocabulary counted on part 0; no
  # data.cache_dir); 1: every process reads all of them
  # (docs/scaling-out.md).
  c.data.parts = 1

  c.model = ml_collections.ConfigDict()
  c.model.name = encoder
  c.model.word_dim = 300
  if encoder != "avg":
    c.model.hidden = 300  # LSTM state
  c.model.word_vectors = ""  # GloVe/word2vec text file; "" = random init

  c.loss = ml_collections.ConfigDict()
  # max(0, margin - cos(s1, s2) + cos(s1, t1)) + the same for s2, t2.
  c.loss.margin = 0.4
  c.loss.sampling = "max"  # max | mix | rand
  c.loss.scramble = 0.0  # probability of shuffling a sentence's words
  c.loss.lambda_w = 0.0  # L2 pull of word vectors to their initial values
  c.loss.lambda_c = 0.0  # L2 on composition parameters

  c.optimizer = ml_collections.ConfigDict()
  c.optimizer.learning_rate = 1e-3  # Adam
  # How the rate moves (paraflax/training/optimizers.py): constant |
  # linear_decay | cosine, after warmup_steps rising from 0, down to
  # end_fraction x learning_rate at train_steps.
  c.optimizer.schedule = "constant"
  c.optimizer.warmup_steps = 0
  c.optimizer.end_fraction = 0.0

  # Evaluators (paraflax/evaluation/evaluators.py) by name: the train loop
  # runs those in_training every eval_every steps, `paraflax eval` all.
  c.evals = ml_collections.ConfigDict({
      "sts": {"type": "sts", "sets": ("STSb.dev-tuning",)},
      "sts_all": {"type": "sts", "in_training": False},  # every STS set
  })
  c.select = "sts/STSb.dev-tuning/pearson"  # picks the best checkpoint
  c.update(common.loop(eval_every=every, log_every=40,
                       checkpoint_every=every))
  return c
