r"""X -> English attention NMT (Wieting, Mallinson & Gimpel 2017 back-translate
with it): bidirectional GRU encoder, GRU decoder with additive attention
and input feeding, sentencepiece subwords, on all shared bitext of the
pair; dev BLEU on newstest2013 (first 500 lines, beam 4) picks the best
checkpoint. X, the argument, is any language code: de, fr and cs train on
the bundled bitext; any other names its data (docs/your-data.md):
  paraflax train --config configs/nmt.py:ru --workdir runs/nmt_ru \
    --config.data.train=tsv:ru-en.train.tsv --config.data.dev=tsv:ru-en.dev.tsv

Command (for fr and cs, replace de):
  paraflax train --config configs/nmt.py:de --workdir runs/nmt_de
  paraflax eval --workdir runs/nmt_de --only dev_all
  paraflax translate --workdir runs/nmt_de --input F --output OUT --beam 5
Time and result (6,000 steps; newstest2013 BLEU, all 3,000 lines, beam 5):
  de: {headline/nmt-de.time=52 min 25 s (1 h 29 min of CPU), peak 5,391 MiB, fresh clone, cold caches}
      on {headline/nmt-de.hardware=Intel Xeon, 2 cores},
      {headline/nmt-de.bleu=12.92} at step {headline/nmt-de.step=6,000} (the run kept as
      lab/results/runs/headline/nmt-de);
      {headline/nmt-de-epyc.time=30 min 40 s (52 min 5 s of CPU), fresh clone, cold caches}
      on {headline/nmt-de-epyc.hardware=AMD EPYC, 2 cores},
      {headline/nmt-de-epyc.bleu=12.66} at step {headline/nmt-de-epyc.step=6,000} (kept as
      lab/results/runs/headline/nmt-de-epyc);
      {h100.train_time=4 min} on one NVIDIA H100, {h100.nmt_de.bleu=13.01} at step
      {h100.nmt_de.step=6,000} (dev flat from step 4,000;
      lab/results/gpu_session.de-en.nvidia-h100/);
  fr: {config_runs/nmt-fr.time=42 min 27 s (1 h 11 min of CPU), peak 4,586 MiB, fresh clone, cold caches}
      on {config_runs/nmt-fr.hardware=Intel Xeon, 2 cores}, {config_runs/nmt-fr.bleu=10.02} at step {config_runs/nmt-fr.step=5,000} (dev {config_runs/nmt-fr.dev_bleu=14.17}; the run kept as
      lab/results/runs/config_runs/nmt-fr);
  cs: {config_runs/nmt-cs.time=45 min 11 s (1 h 16 min of CPU), peak 4,861 MiB, fresh clone, cold caches}
      on {config_runs/nmt-cs.hardware=Intel Xeon, 2 cores}, {config_runs/nmt-cs.bleu=9.26} at step {config_runs/nmt-cs.step=6,000} (dev {config_runs/nmt-cs.dev_bleu=9.04}; the run kept as
      lab/results/runs/config_runs/nmt-cs).
The paper's decoder (attention before the update, no input feeding) is
`--config.model.input_feeding=false`; the paper's sizes (620 / 1000) are
`--config.model.emb_dim=620 --config.model.hidden=1000`.
Docs: docs/nmt-backtranslation.md.
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

  c.lang = lang  # the source language, translated into English
  c.data = common.bitext_data(lang)  # all lang-en bitext, max_len 64
  # Windows of 64 batches are sorted by this length before they are cut
  # into batches: "longer" (the longer side, which the padded width
  # follows) or "target" (the target side). An epoch of the de-en batches
  # sorted by the longer side has
  # {batch_padding.nmt-de.json:longer_saves/slots:pct=28.5} % fewer slots and
  # {batch_padding.nmt-de.json:longer_saves/padded_slots:pct=67.2} % fewer
  # padded ones (lab/benchmarks/batch_padding.py).
  c.data.sort_by = "longer"
  # The training pairs split into this many parts, each process of a run
  # reading and caching only its own (a multiple of the process count and
  # a divisor of batch_size; the batches are the same for any process
  # count, padded to max_len); 1: every process reads all of them
  # (docs/scaling-out.md).
  c.data.parts = 1
  # joint: one sentencepiece model for both sides. character_coverage: the
  # share of the text's characters that get pieces of their own (1.0:
  # all; 0.9995 for scripts of thousands of characters, such as Japanese
  # or Chinese, whose rarest characters become unknown).
  c.vocab = ml_collections.ConfigDict(
      {"joint": True, "size": 8000, "model_type": "unigram",
       "character_coverage": 1.0})

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
  # decoder (False, the paper's), and ends its outputs
  # (docs/nmt-backtranslation.md).
  c.model.input_feeding = True
  # The decoder's start state: "mean_tanh", tanh(W mean(encoder states)); or
  # "final", ReLU(W [final forward; final backward]) (OpenNMT's bridge; no
  # gain measured alone).
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
  # input otherwise keeps its decode phase stepping to max_output. Fr-en
  # at its best step, all of newstest2013, beam 5: BLEU {config_runs/nmt-fr.bleu=10.02} with
  # 1.5 + 10, {config_runs/nmt-fr-nolimit.bleu=10.02} without (`paraflax eval --decode
  # max_output_ratio=0`: lab/results/runs/config_runs/nmt-fr-nolimit);
  # {config_runs/nmt-fr.cut=0.33} % of outputs cut at the limit, {config_runs/nmt-fr-nolimit.cut=0.27} % at max_output
  # without it.
  # Workdirs made before it keep ratio 0 (recipes/workdir.py).
  c.decode.max_output_ratio = 1.5
  c.decode.max_output_plus = 10

  # Evaluators (paraflax/evaluation/evaluators.py) by name: the train loop
  # runs those in_training every eval_every steps, `paraflax eval` all.
  c.evals = ml_collections.ConfigDict({
      # BLEU of the first 500 dev pairs during training; all of them after.
      "dev": {"type": "bleu", "data": "", "sentences": 500, "beam": 4},
      "dev_all": {"type": "bleu", "data": "", "beam": 5,
                  "in_training": False},
  })
  c.select = "dev/bleu"  # picks the best checkpoint
  c.update(common.loop(eval_every=1000, log_every=100, checkpoint_every=500))
  return c
