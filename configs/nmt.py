r"""X -> English attention NMT (GRU, additive attention) on all shared bitext
of the pair, dev BLEU on newstest2013 (first 500 lines during training);
X, the argument, is de, fr or cs.

Command (for fr and cs, replace de):
  paraflax train --config configs/nmt.py:de --workdir runs/nmt_de_en
  paraflax translate --workdir runs/nmt_de_en --input F --output OUT --beam 5
With input feeding (the default since issue 17; 2 CPU cores shared by other
runs, 2026-11-23; batches then sorted by target length, since issue 14 by
the longer side: same widths, other batches), de at 1,500 steps: dev 0.39 / 3.38 / 6.56 at 500 / 1000 /
1500; newstest2013 6.45 (length ratio 0.97), where OpenNMT-py 3.0.4 on the
same data reaches 4.99 (README, "What the NMT learns per step"); fr: dev
0.93 / 3.53 / 6.64, newstest2013 4.85; cs: dev 0.42 / 2.05 / 3.12,
newstest2013 3.85.
The config's own 6,000 steps, de (session 12, README "The config's own
6,000 steps"): dev 14.20, newstest2013 12.66 after about 41 minutes on 2
CPU cores (AMD EPYC); 13.01 after 4 minutes on an NVIDIA H100 (README "On
a GPU"), where dev BLEU is flat from step 4,000; fr: dev 15.02 at step
5,000, newstest2013 10.63 (32 minutes, same CPU); cs (session 13): dev
8.96 at step 6,000, still rising, newstest2013 9.15 (about 33 minutes of
training, same CPU).
Measured on 2 CPU cores (2026-11-21) with the decoder of before issue 17
(--config.model.input_feeding=false), runs cut at 2000 of 6000 steps
(--config.train_steps=2000 --config.eval_every=500). Dev BLEU (first 500
lines, beam 4) at steps 500 / 1000 / 1500 / 2000, still rising; BLEU on all
of newstest2013, beam 5
(nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0). Not converged.
  de: 2,429 s; dev 0.14 / 0.39 / 1.24 / 3.09; newstest2013 3.16.
  fr: 2,663 s, with other jobs on the same cores part of the time;
      dev 0.62 / 1.57 / 3.12 / 4.88; newstest2013 4.0.
  cs: 3,179 s, with other jobs on the same cores most of the time;
      dev 0.22 / 0.40 / 0.88 / 1.49; newstest2013 1.9.
"""
import ml_collections
from ml_collections import config_dict

from configs import common


def get_config(lang: str) -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.recipe = "nmt"
  c.seed = 0
  c.train_steps = 6000
  c.batch_size = 64  # sentence pairs

  c.data = common.bitext_data(lang)  # all lang-en bitext, max_len 64
  # Windows of 64 batches are sorted by this length before they are cut
  # into batches: "longer" (the longer side, which the padded width
  # follows: 29 % fewer padded slots, issue 14) or "target" (before issue
  # 14; the README's BLEU figures were trained so).
  c.data.sort_by = "longer"
  # joint: one sentencepiece model for both sides.
  c.vocab = ml_collections.ConfigDict(
      {"joint": True, "size": 8000, "model_type": "unigram"})

  # The paper used 620 / 1000; these sizes train on 2 CPU cores.
  c.model = ml_collections.ConfigDict()
  c.model.emb_dim = 256
  c.model.hidden = 256
  # Units of each encoder direction; None: model.hidden. OpenNMT-py's brnn
  # splits hidden over the two directions (hidden // 2, e.g. 128).
  c.model.encoder_hidden = config_dict.placeholder(int)
  c.model.attention_dim = 256
  c.model.cell = "gru"  # gru | lstm
  # input_feeding (OpenNMT-py's `rnn` decoder, input_feed 1): the RNN first,
  # then attention with its new state, the attentional vector fed back at
  # the next step. It learns far more per step than the Bahdanau / Sennrich
  # decoder (False, the paper's), and ends its outputs (issue 17, README).
  c.model.input_feeding = True
  # The decoder's start state: "mean_tanh", tanh(W mean(encoder states)); or
  # "final", ReLU(W [final forward; final backward]) (OpenNMT's bridge; no
  # gain measured alone, issue 17).
  c.model.bridge = "mean_tanh"

  c.loss = ml_collections.ConfigDict()
  c.loss.label_smoothing = 0.1
  # The summed loss over "tokens" of the batch, or over its "sentences"
  # (OpenNMT-py's default normalization: sents; no gain measured alone).
  c.loss.normalize = "tokens"

  c.optimizer = ml_collections.ConfigDict(  # Adam
      {"learning_rate": 1e-3, "clip_norm": 1.0})

  c.decode = ml_collections.ConfigDict()
  c.decode.alpha = 0.6  # length normalisation ((5 + |Y|) / 6) ** alpha
  c.decode.max_output = 100  # subwords
  # An input's output stops at ceil(max_output_ratio * source subwords) +
  # max_output_plus subwords (EOS counted on both sides), at most
  # max_output (fairseq's max_len_a / max_len_b); ratio 0 is off. A looping
  # input otherwise keeps its decode phase stepping to max_output. De-en at
  # step 1,500, all of newstest2013, beam 5: BLEU 6.448 with 1.5 + 10 as
  # without (6.448), and faster; 0.57 % of outputs cut against 0.43 %
  # (issue 14). Workdirs made before it keep ratio 0 (recipes/workdir.py).
  c.decode.max_output_ratio = 1.5
  c.decode.max_output_plus = 10

  # Evaluators (paraflax/evaluation/evaluators.py) by name: the train loop
  # runs those in_training every eval_every steps, `paraflax eval` all.
  c.evals = ml_collections.ConfigDict({
      # BLEU of the first 500 dev pairs during training; all of them after.
      "dev": {"type": "bleu", "task": c.data.dev_task,
              "split": c.data.dev_split, "sentences": 500, "beam": 4},
      "dev_all": {"type": "bleu", "task": c.data.dev_task,
                  "split": c.data.dev_split, "beam": 5,
                  "in_training": False},
  })
  c.select = "dev/bleu"  # picks the best checkpoint
  c.update(common.loop(eval_every=1000, log_every=100, checkpoint_every=500))
  return c
