r"""Kim et al. 2019 (bilingual sentence embeddings via autoencoding), X-en
(the argument: de, fr or cs, or any code with --config.data.train=SPEC):
1-layer BiLSTM encoders of 512 units a direction, max-pooled; one shared
attention-free LSTM decoder whose initial state is the sentence embedding
itself (Eq. 3: model.decoder_start="embedding", no bridge, nothing fed at
later steps); translation and autoencoding 1:1 per batch; Adam at 1e-3.

Command:
  paraflax train --config configs/papers/kim2019.py:de --workdir runs/k19_de
  paraflax eval-bilingual --workdir runs/k19_de
Time and result (cut to Multi30k de-en, 64-unit layers, 2,000 pieces and
200 steps by experiments/paper_fidelity/bilingual_cut.py; AMD EPYC, 2
cores shared with other jobs): 3 min 18 s with `paraflax eval`, dev
alignment accuracy 1.5 %, as configs/bilingual.py:de cut alike (3 min
36 s, 1.0 %): both still at chance
(docs/fidelity.md). This preset's decoder start, with configs/bilingual.py's
embedding fed at every step, at configs/pipeline.py:tiny's bilingual
settings (Multi30k, 64-unit layers, 2,000 pieces, learning rate 6e-3) for
4,000 steps: 30 min on the same shared cores, dev alignment accuracy
78.1 %, Multi30k 2016 alignment error 18.2 % (cosine) and 9.0 % (CSLS);
the command and the MLP table on it: docs/fidelity.md. At full size a
step does about 4x the work of configs/bilingual.py's (41 min per 2,000
steps on 2 idle cores; an estimate, not measured): train it on an
accelerator.
Still differs from the paper, because of data or compute:
  - the data: the bundled de-en bitext (Multi30k, newstest pool, a 10k WMT
    sample), not WMT 2018's full parallel data and monolingual news;
  - steps: 2,000 batches of 32 pairs by default (the paper trains to
    convergence; --config.train_steps=N);
  - vocabulary: one joint sentencepiece model of 8,000 pieces (the
    paper's subword units and their count are not matched).
Docs: docs/fidelity.md.
"""
import ml_collections

from configs import base


def get_config(lang: str) -> ml_collections.ConfigDict:
  c = base.load(f"bilingual.py:{lang}")
  c.model.word_dim = 512
  c.model.hidden = 512  # per direction: embeddings of 1,024, as the decoder
  c.model.feed_embedding = False
  c.model.decoder_start = "embedding"
  c.optimizer.learning_rate = 1e-3  # Adam
  c.lock()
  return c
