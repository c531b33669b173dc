r"""Wieting, Mallinson & Gimpel 2017 (back-translated paraphrases), section
4's sentence encoders as the paper trains them: Avg, LSTM-avg or GRAN (the
argument) with the margin loss, margin 0.4, t1 and t2 the hardest negatives
of the mini-batch ("For simplicity we use the mini-batch for this set"),
batches of 100, no regularisers (lambda_w = lambda_c = 0, as the paper
fixes them); Adam at 1e-3 and 300-d words and LSTM states are paraflax's
choice. The paper's filters: translation cost per token of the
translation is the score `cost_token` (configs/sweeps/cost.py:gran,token),
its overlap / BLEU and LM grids the `:paper` points of
configs/sweeps/overlap.py and lm_ppl.py, trained as this preset.

Command:
  paraflax train --config configs/papers/wieting2017.py:gran --workdir runs/w17_gran
  paraflax eval-sts --workdir runs/w17_gran
Time and result (Avg cut to 400 updates, `--config.train_steps=400
--config.eval_every=200 --config.checkpoint.every=200`; the runs kept in
lab/results/runs/paper_presets/, on
{paper_presets/avg-wieting2017.hardware=AMD EPYC, 2 cores}):
  this preset: {paper_presets/avg-wieting2017.time=20 s (26 s of CPU), fresh clone, caches warm from the steps before it, in one clone after 24 s of other runs' steps} for both commands,
    STS12-15 mean {paper_presets/avg-wieting2017.sts12_15=52.99},
    STSb test {paper_presets/avg-wieting2017.stsb_test=57.91};
  against {paper_presets/avg-default.time=24 s (33 s of CPU), fresh clone, cold caches},
    STS12-15 mean {paper_presets/avg-default.sts12_15=53.70},
    STSb test {paper_presets/avg-default.stsb_test=58.89} for
configs/paraphrase.py:avg (the same encoder with in-megabatch negatives)
cut alike; configs/gran.py is the tuned GRAN (lab/fidelity.md).
Still differs from the paper, because of data or compute:
  - the pairs: the 19,432 human English pairs of paraphrase_en_human, not
    the paper's back-translated CzEng / Europarl pairs (point data.task at
    `backtranslated:SCORED.jsonl` of `paraflax score-paraphrases` for them);
  - the words start random: PARAGRAM-SL999 vectors are not bundled (set
    model.word_vectors to a GloVe-format file of them);
  - steps: 480 updates for LSTM-avg and GRAN, 2,000 for Avg (the paper
    trains for epochs over far more pairs).
Docs: lab/fidelity.md.
"""
import ml_collections

from configs import base

ENCODERS = ("avg", "lstmavg", "gran")


def get_config(encoder: str) -> ml_collections.ConfigDict:
  if encoder not in ENCODERS:
    raise ValueError(f"encoder {encoder!r}: use one of {', '.join(ENCODERS)}.")
  c = base.load(f"paraphrase.py:{encoder}")
  c.megabatch = 1  # negatives from the mini-batch itself
  c.batch_size = 100
  c.loss.margin = 0.4
  c.loss.sampling = "max"  # the most similar other sentence
  c.loss.scramble = 0.0
  c.loss.lambda_w = 0.0
  c.loss.lambda_c = 0.0
  c.optimizer.learning_rate = 1e-3  # Adam
  c.optimizer.schedule = "constant"
  c.model.word_dim = 300
  if encoder != "avg":
    c.model.hidden = 300
  c.lock()
  return c
