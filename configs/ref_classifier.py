r"""Reference-vs-translation classifier (Wieting et al. 2017): Avg or an
LSTM (mean of its states) over the lowercased word tokens and a softmax
layer tell a human reference (1) from a back-translation (0). Its
probability of "reference" is the `ref_prob` of score-paraphrases. The
argument is the model: avg or lstm.

Data: a back-translation JSONL with n-best lists, split by id into
train / dev / test (data.dev_fraction, data.test_fraction, by the seed).
Negatives: a translation of the reference's n-best list, drawn at random
(data.negative="random") or the one the current model finds most
reference-like ("hardest").

Command:
  paraflax backtranslate --workdir runs/nmt_de --task bitext_multi30k_de_en \
    --output bt.jsonl --beam 5 --nbest 5
  paraflax train --config configs/ref_classifier.py:avg --workdir runs/refclf \
    --config.data.input=bt.jsonl
  paraflax eval --workdir runs/refclf          # dev and test accuracy
  paraflax score-paraphrases --input bt.jsonl --output bt.scored.jsonl \
    --classifier-workdir runs/refclf
Time and result: 10,000 Multi30k de-en pairs back-translated (beam 5,
5-best) by configs/nmt.py:de's 6,000-step NMT, 8,000 train ids, 2,000
steps, random negatives (lab/results/runs/config_runs/, made by
lab/experiments/filter_tables/classifiers.sh), on
{config_runs/refclf-avg-random.hardware=Intel Xeon, 2 cores}:
  the back-translation, then avg on hardest negatives:
    {config_runs/refclf-avg-hardest.time=2 min 25 s (3 min 38 s of CPU), peak 1,205 MiB, fresh clone, caches warm from the steps before it, after its needs (headline/nmt-de: 58 min 46 s)}.
  avg, test accuracy {config_runs/refclf-avg-random.test_accuracy=63.7} %, on the finished
    back-translation: {config_runs/refclf-avg-random.time=54 s (1 min 14 s of CPU), peak 1,198 MiB, fresh clone, caches warm from the steps before it, in one clone after runs/config_runs/refclf-avg-hardest.json, whose steps it found done, after its needs (headline/nmt-de: 58 min 46 s)}.
  lstm, test accuracy {config_runs/refclf-lstm-random.test_accuracy=64.4} %, on the finished
    back-translation: {config_runs/refclf-lstm-random.time=8 min 21 s (14 min 45 s of CPU), peak 1,777 MiB, fresh clone, caches warm from the steps before it, in one clone after runs/config_runs/refclf-avg-hardest.json, whose steps it found done, after its needs (headline/nmt-de: 58 min 46 s)}.
On the back-translations of the same NMT at step 1,500 (newstest2013 BLEU
{config_runs/nmt-de-1500.bleu=6.24}) the avg reaches {config_runs/refclf-avg-random-nmt1500.test_accuracy=75.2} %: a better NMT's translations
are harder to tell apart (lab/results/runs/config_runs/refclf-avg-random-nmt1500.json).
Docs: docs/filtering.md.
"""
import ml_collections

from configs import common

MODELS = {"avg": "avg", "lstm": "lstmavg"}  # argument -> encoders.ENCODERS


def get_config(model: str) -> ml_collections.ConfigDict:
  if model not in MODELS:
    raise ValueError(f"model {model!r}: use one of {', '.join(MODELS)}.")
  c = ml_collections.ConfigDict()
  c.recipe = "ref_classifier"
  c.seed = 0
  c.train_steps = 2000  # optimizer updates, one per batch of ids
  c.batch_size = 100  # ids per update: 100 references, 100 translations

  c.data = ml_collections.ConfigDict()
  c.data.input = ""  # BT.jsonl (paraflax backtranslate --nbest N); required
  c.data.negative = "random"  # random | hardest
  c.data.dev_fraction = 0.1  # of the ids
  c.data.test_fraction = 0.1
  c.data.max_len = 40  # words; longer sentences are truncated (and counted)
  c.data.vocab_min_count = 1
  c.data.vocab_max_size = 0  # 0: no limit

  c.model = ml_collections.ConfigDict()
  c.model.name = MODELS[model]
  c.model.word_dim = 300
  if model != "avg":
    c.model.hidden = 300  # LSTM state

  c.loss = ml_collections.ConfigDict()
  c.loss.lambda_w = 1e-5  # L2 penalty on the word embeddings

  c.optimizer = ml_collections.ConfigDict()
  c.optimizer.learning_rate = 1e-3  # Adam

  # Accuracy (%) on the reference and best-ranked translation of each id.
  c.evals = ml_collections.ConfigDict({
      "dev": {"type": "accuracy", "split": "dev"},
      "test": {"type": "accuracy", "split": "test", "in_training": False},
  })
  c.select = "dev/accuracy"  # picks the best checkpoint
  c.update(common.loop(eval_every=200, log_every=50, checkpoint_every=200))
  return c
