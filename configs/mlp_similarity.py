r"""MLP similarity of a bilingual workdir (Kim et al. 2019): a classifier on
[source; target] embeddings (2 hidden ReLU layers of 512), newstest_train_pool
pairs as positives against the 60 % lowest-cosine pairs of the ParaCrawl v3
sample (labels unused), or the paper's bands; Adam, the held-out loss picks the
best checkpoint.

The paper's main runs take the worst-scored lines of the whole noisy
corpus (`--negatives band --config.band_cut=1.0`:
configs/papers/kim2019_mlp.py); its Table 5 the x%-worst bands
(`--config.band_cut=0.6`, its best row) and random lines (`--negatives
random`): configs/papers/kim2019_table5.py; the grid beside this default:
lab/fidelity.md.

Command (--negatives, --worst-fraction, --epochs and --seed set those keys
and win over this file and --config.key=value; the run goes to
W/mlp_similarity/, its encoders are W's; `paraflax eval-bilingual` trains it
first if the workdir has none):
  paraflax train-mlp --workdir runs/bi_de_en [--negatives random]
Time and result on the fr-en model of 2,000 steps (configs/bilingual.py:fr),
on {config_runs/mlp-fr-worst.hardware=Intel Xeon, 2 cores}: {config_runs/mlp-fr-worst.time=1 min 56 s (3 min 11 s of CPU), peak 2,337 MiB, fresh clone, caches warm from the steps before it, in one clone after runs/mining/bilingual-fr.json, whose steps it found done}
(lab/results/runs/config_runs/mlp-fr-worst.json): alignment recovery
error {config_runs/mlp-fr-worst.mlp.align=99.6-100.0} %, chance: news positives against web negatives teach it
which pairs look like news; ParaCrawl ROC-AUC x 100 v3 / v6
{config_runs/mlp-fr-worst.mlp.v3=48.3} / {config_runs/mlp-fr-worst.mlp.v6=59.9} (cosine {config_runs/mlp-fr-worst.cosine.v3=46.1} / {config_runs/mlp-fr-worst.cosine.v6=49.3}, CSLS {config_runs/mlp-fr-worst.csls.v3=50.8} / {config_runs/mlp-fr-worst.csls.v6=50.9}). The positives re-paired
(`--negatives shuffled`, mlp-fr-shuffled.json): alignment error
{config_runs/mlp-fr-shuffled.mlp.align=81.8-93.4} % (CSLS {config_runs/mlp-fr-shuffled.csls.align=7.9-85.5} %), ParaCrawl {config_runs/mlp-fr-shuffled.mlp.v3=58.4} / {config_runs/mlp-fr-shuffled.mlp.v6=49.7}.
Docs: docs/bilingual.md.
"""
import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.recipe = "mlp_similarity"
  c.seed = 0  # parameters, negatives, held-out split and batch order

  # Data specs (docs/your-data.md) of the positives and of the noisy corpus
  # the negatives come from; "": for de, fr and cs the bundled
  # newstest_train_pool bitext and ParaCrawl v3 sample (labels unused).
  c.positives = ""
  c.noisy = ""

  c.hidden = 512
  c.layers = 2
  # worst: the bottom worst_fraction of the noisy corpus by cosine. The
  # paper's (Kim et al. 2019, Table 5): band (its "x%-worst": the last
  # negatives_count lines of the top band_cut by cosine) or random (lines of
  # the noisy corpus); shuffled: the positives re-paired.
  c.negatives = "worst"  # worst | band | random | shuffled
  c.worst_fraction = 0.6  # of the noisy corpus, for negatives="worst"
  c.band_cut = 0.6  # Table 5's x (1.0: the main runs'), negatives="band"
  # Lines for band and random; 0: as many as the positives (at most the
  # cut, or the noisy corpus).
  c.negatives_count = 0
  c.batch_size = 128
  c.learning_rate = 1e-3
  # Passes over the training examples; the run adds train_steps (epochs x
  # batches per epoch) and dim (the embedding size) once they are embedded.
  c.epochs = 10
  # Share of the examples whose loss picks the best checkpoint; 0 keeps the
  # last state.
  c.heldout_fraction = 0.1

  # The train loop's keys, in optimizer steps (de-en: ~180 per epoch).
  c.eval_every = 100
  c.log_every = 50
  # train-mlp starts afresh every run (it embeds the examples again
  # anyway), so only the final state is saved for resuming.
  c.checkpoint = ml_collections.ConfigDict({"every": 0, "keep": 1})
  # One device: the head is small, and its parameters then do not depend on
  # how many devices are visible.
  c.mesh = ml_collections.ConfigDict({"num_devices": 1})
  c.partitioning = ml_collections.ConfigDict(
      {"rules": ((".*", "replicate"),)})
  return c
