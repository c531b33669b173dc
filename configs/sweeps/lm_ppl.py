r"""Language-model filter (the paper's section 5.5): the pairs whose
translation has a perplexity of at most 10, 15, 20, 25, 30, 40, 50, 75,
100, 200 or 500 under the 3-gram LM of the references (`lm_ppl`, scored
with `paraflax score-paraphrases --lm`); the argument is the encoder (avg,
lstmavg, gran).

Why these bounds: perplexity has no fixed scale, so the grid follows the
measured distribution. On the 10,000 1-best Multi30k de-en translations of
a 1,500-step de-en NMT under a 3-gram of the 18,994 other Multi30k train
captions, the quantiles were 10 % 8.8, 25 % 13.2, 50 % 22.4, 75 % 40.5,
90 % 75, 99 % 275: the bounds keep from about 13 % (10) to 99.7 % (500) of
the pairs, dense where most of them lie. A stronger NMT or another LM moves
the distribution: set --config.points or copy this file.

Command (scale and overrides: configs/sweeps/common.py):
  paraflax sweep --config configs/sweeps/lm_ppl.py:gran --workdir runs/sweep_lm_ppl_gran \
    --config.scored=runs/bt.scored.jsonl [--config.max_pairs=24000]
Time: 11 points; GRAN ~2.5 min each on 2 CPU cores at N = 2,000. A bound
that keeps fewer than N pairs fails alone (the table says so).
Docs: docs/filtering.md, docs/configs.md (sweeps).
"""
from configs import common

UPPER = (10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 75.0, 100.0, 200.0, 500.0)


def get_config(arg: str):
  encoder, _ = common.encoder_and_rest(arg)
  return common.sweep(encoder, points=[common.bounded("lm_ppl", 0.0, hi)
                                       for hi in UPPER])
