r"""Kim et al. 2019 (bilingual sentence embeddings via autoencoding), X-en
(the argument: de, fr or cs, or any code with --config.data.train=SPEC),
as the paper trains: 1-layer BiLSTM encoders of 512 units a direction,
max-pooled; one shared attention-free LSTM decoder whose initial state is
the sentence embedding itself (Eq. 3: model.decoder_start="embedding", no
bridge, nothing fed at later steps); translation and autoencoding 1:1 per
batch, the non-English side autoencoded (direction="en_xx": English
translated into X, X into itself); SGD at learning rate 1.0, multiplied
by 0.9 every 50k updates after 100k (optimizer.schedule="step_decay"),
batches of 120 pairs, 800k updates; the text lowercased
(vocab.lowercase: subword models that case-fold what they encode) and
pairs of at most 60 tokens a side (data.max_words); a sentencepiece BPE
model of 20k pieces. Paraflax's choice where the paper states none: one
joint BPE model for both languages, clipping the gradient norm at 1.0,
512-d subword embeddings, data.max_len 128 subwords (so that the 60-token
limit decides), dev evaluations every 10k updates.
The MLP similarity as the paper's main runs train it:
configs/papers/kim2019_mlp.py; its Table 5: configs/papers/kim2019_table5.py.

Command:
  paraflax train --config configs/papers/kim2019.py:de --workdir runs/k19_de
  paraflax eval-bilingual --workdir runs/k19_de
Time and result of this preset's model and decoder start with
configs/bilingual.py's training (Adam at 1e-3, batches of 32, unigram
pieces, cased text, English autoencoded), cut to Multi30k de-en, 64-unit
layers, 2,000 pieces and {paper_presets/bilingual-kim2019.step=200} steps
(lab/results/runs/paper_presets/, on {paper_presets/bilingual-kim2019.hardware=AMD EPYC, 2 cores}):
  this preset: {paper_presets/bilingual-kim2019.time=42 s (57 s of CPU), fresh clone, caches warm from the steps before it, in one clone after 1 min 31 s of other runs' steps} with `paraflax eval`,
    dev alignment accuracy {paper_presets/bilingual-kim2019.dev_align=1.0} %;
  configs/bilingual.py:de cut alike: {paper_presets/bilingual-default.time=47 s (1 min 3 s of CPU), fresh clone, caches warm from the steps before it, in one clone after 44 s of other runs' steps},
    dev alignment accuracy {paper_presets/bilingual-default.dev_align=1.0} %;
both still at chance
(lab/fidelity.md). This preset as it stands, cut alike but with its own
batches of 120, for 3,000 updates beside configs/bilingual.py:de's 3,000
(`python lab/experiments/paper_fidelity/bilingual_cut.py OUT kim2019
default --steps 3000 --own-batch`; 2 idle cores of an Intel Xeon):
{kim_equal_steps.kim2019.time=11 min 37 s}, Multi30k 2016 alignment error
{kim_equal_steps.kim2019.cosine=99.6} % (cosine), still at chance, where the
default reaches {kim_equal_steps.default.cosine=83.7} % in
{kim_equal_steps.default.time=3 min 34 s} (lab/fidelity.md):
SGD at 1.0 is slow to start on the cut model. This preset's decoder
start, with configs/bilingual.py's embedding fed at every step, at
configs/pipeline.py:tiny's bilingual settings (Multi30k, 64-unit layers,
2,000 pieces, learning rate 6e-3) for 4,000 steps: {config_runs/bilingual-captions.time=5 min 55 s (8 min 25 s of CPU), peak 1,873 MiB, fresh clone, cold caches} on
{config_runs/bilingual-captions.hardware=Intel Xeon, 2 cores}, dev alignment accuracy {config_runs/bilingual-captions.dev_align=79.2} %
(lab/results/runs/config_runs/bilingual-captions.json). It is the encoder
of the MLP table: Multi30k 2016 alignment error
{mlp_negatives.multi30k.intel-xeon-2core.json:rows/selection=cosine,n=1000/align_error:.1f=18.0} % (cosine) and
{mlp_negatives.multi30k.intel-xeon-2core.json:rows/selection=csls,n=1000/align_error:.1f=9.4} % (CSLS;
lab/results/mlp_negatives.multi30k.intel-xeon-2core.json); the command and
the MLP table on it: lab/fidelity.md. At full size a step does several
times the work of configs/bilingual.py's (not measured: 512-unit encoder
layers against 256, a decoder of 1,024 units against 256, 20k pieces
against 8k, 120 pairs against 32; configs/bilingual.py:de's 2,000 steps
take
{config_runs/bilingual-de.time=21 min 46 s (36 min 47 s of CPU), peak 5,380 MiB, fresh clone, cold caches} on
{config_runs/bilingual-de.hardware=Intel Xeon, 2 cores}): train it on an
accelerator.
Still differs from the paper, because of data or compute:
  - the data: the bundled de-en bitext (Multi30k, newstest pool, a 10k WMT
    sample), not WMT 2018's full parallel data; none of the paper's 100M
    monolingual German news sentences (not bundled: a mono_de_* Task in
    data.mono_tasks adds such text to the autoencoded side);
  - the word embeddings start random: the paper's fastText vectors mapped
    by MUSE are not bundled (`--config.word_vectors.de=FILE
    --config.word_vectors.en=FILE`, fastText's .vec text format with
    model.word_dim numbers a word, start the subwords that spell a word
    whole);
  - 800k updates of 120 pairs take an accelerator (a CPU runs
    --config.train_steps=N).
Docs: lab/fidelity.md.
"""
import ml_collections

from configs import base


def get_config(lang: str) -> ml_collections.ConfigDict:
  c = base.load(f"bilingual.py:{lang}")
  c.model.word_dim = 512
  c.model.hidden = 512  # per direction: embeddings of 1,024, as the decoder
  c.model.feed_embedding = False
  c.model.decoder_start = "embedding"
  c.direction = "en_xx"  # X (German for de) autoencoded
  c.batch_size = 120
  c.train_steps = 800_000
  c.optimizer = ml_collections.ConfigDict({
      "name": "sgd", "learning_rate": 1.0, "schedule": "step_decay",
      "decay_start": 100_000, "decay_every": 50_000, "decay_rate": 0.9,
      "clip_norm": 1.0})  # the clipping: paraflax's choice
  c.data.max_words = 60  # tokens a side
  c.data.max_len = 128  # subwords, above what 60 tokens take
  c.vocab.model_type = "bpe"
  c.vocab.size = 20_000
  c.vocab.lowercase = True
  c.eval_every = 10_000
  c.checkpoint.every = 10_000
  c.lock()
  return c
