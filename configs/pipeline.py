r"""The whole method in one command (`paraflax pipeline`):
de-en bitext -> NMT -> back-translation -> scores and the filter -> GRAN on
the filtered pairs -> STS; bitext -> bilingual encoders -> a mining
benchmark -> P/R/F1 and mined pairs; then W/report.md. The argument is the
preset: tiny, gpu or pod.

Each stage block holds the keys that stage uses; a `settings` block is
applied to the stage's own config file (configs/nmt.py:<lang>,
configs/ppdb_words.py, configs/paraphrase.py:gran,
configs/bilingual.py:<lang>, configs/mine.py) as `--config.<key>=<value>`
would be, so a key that file lacks stops the run before anything is
written.

Command:
  paraflax pipeline --config configs/pipeline.py:tiny --workdir runs/pipe
  (gpu: configs/pipeline.py:gpu on one accelerator host; pod: on a
  single-host TPU pod slice)
Time (tiny), a fresh clone with cold caches (lab/benchmarks/newcomer.py
main; the README's table, from lab/results/newcomer.main.*.json):
{newcomer.main.amd-epyc-2core.json:steps/3/wall_s:duration=3 min 11 s} for the
pipeline ({newcomer.main.amd-epyc-2core.json:wall_s:duration=5 min 18 s} with the
install and KenLM's build) on 2 idle cores of an AMD EPYC (Zen 5);
{newcomer.main.intel-xeon-2core.json:steps/3/wall_s:duration=4 min 31 s}
({newcomer.main.intel-xeon-2core.json:wall_s:duration=6 min 49 s}) on 2
idle cores of an Intel Xeon (Rocket Lake);
{newcomer.main-emerald-rapids.intel-xeon-2core.json:steps/3/wall_s:duration=3 min 40 s}
({newcomer.main-emerald-rapids.intel-xeon-2core.json:wall_s:duration=6 min 8 s}) on 2
idle cores of an Intel Xeon (Emerald Rapids).
Result (tiny, lab/results/runs/pipeline_tiny/tiny.json): NMT dev BLEU
{runs/pipeline_tiny/tiny.json:nmt/best:.2f=28.76} on Multi30k validation
({pipeline_tiny/tiny.nmt_steps=2,400} steps);
{pipeline_tiny/tiny.kept_pairs=1,553} 1-best pairs kept by the overlap_1
filter; GRAN STS12-15 mean {pipeline_tiny/tiny.sts12_15=53.33}, STSb test
{pipeline_tiny/tiny.stsb_test=57.91}; bilingual dev alignment accuracy
{runs/pipeline_tiny/tiny.json:bilingual/best:.1f=55.0} %; mining Multi30k
test captions (300 gold pairs among 350 distractors a side): F1
{runs/pipeline_tiny/tiny.json:mining/test/f1:pct=51.0} at the dev
threshold, {pipeline_tiny/tiny.shown_correct=9} of the
{pipeline_tiny/tiny.shown=10} best-scored pairs correct. The tiny preset shows
every stage working, not the papers' numbers; gpu has the configs' own
sizes.
Time (gpu, pod): projections from measured per-device rates, not runs of
these presets (docs/scaling-out.md, "At ParaNMT's size"). On one H100:
the NMT's 6,000 steps about {gpu.nmt_projection=3 min} and the bilingual
model's 20,000 about {gpu.bilingual_projection=15 min} ({h100.nmt_de.last_step=7,600} and
{h100.bi_de.last_step=5,250} steps in {h100.train_time=4 min} measured, the two sharing the GPU);
back-translating the 29,000 sentences at beam 50, 50-best, exact stop
about {gpu.bt_beam50_projection=16 min} ({h100.bt_wmt.rate=208} sentences/s at beam 5 on the H100, from its
session's WMT back-translation log; beam 50 exact {decode.beam50_slowdown=6.9}x slower than beam 5
on 2 AMD EPYC cores: lab/results/nmt_vs_opennmt.trained.amd-epyc-2core.json); scoring the 1.45M records about
{gpu.score_projection=2 min} (the scores but lm_ppl at
{scoring_throughput.intel-xeon-2core.json:sizes/records=100000/measures/command_base/records_per_s:,.0f=11,961}
records/s over 100,000 records on 2 idle Intel Xeon cores). The pod preset's batch sizes and its `seconds_per_unit` of nmt,
backtranslate, words, gran and bilingual are projected from `paraflax
compile` for v5e:2x4 (lower bounds), lab/results/compile_pipeline_pod.json
(lab/benchmarks/compile_pipeline_pod.py: each stage's program at the
preset's own settings, a roofline step over its updates or sentences;
tests/test_compile.py pins them to that file): every batch fills the 8
chips (13 to 100 rows a chip) and fits (the largest, gran's,
{compile_pipeline_pod.json:rows/stage=gran/memory_bytes_per_chip/total:gib=3.2} of
{compile_pipeline_pod.json:rows/stage=gran/hbm_bytes_per_chip:gib=14.9} GiB a chip);
its back-translation of 29,000 sentences at beam 50 projects to
{compile_pipeline_pod.backtranslate_s=26 s}, nothing of it measured on a TPU. A fresh
run compiles the NMT step once per batch width: at data.width_multiple=8
(7 widths) an H200 reached step 56 after {h200.width8.step56=3 min 50 s} and step 1,000 after
{h200.width8.step1000=6 min 50 s} (lab/results/gpu_scale.pipeline-width8.nvidia-h200/); gpu
and pod set 32 (2 widths), for training and decoding. A run of this
preset on one H200 (lab/benchmarks/gpu/scale.sh's pipeline phase, its
log in lab/results/gpu_scale.pipeline.nvidia-h200/) reached NMT step 1
after {h200.preset.step1=1 min 10 s}, step 34 after {h200.preset.step34=1 min 53 s} and step 1,000 after
{h200.preset.step1000=2 min 10 s}; the dev evaluation at step 1,000 then took {h200.preset.dev_eval=1 min 29 s}; the beam-50
back-translation's first 64 sentences came {h200.preset.bt64=1 min 10 s} after it started (the
search compiling), 576 of its 600 by {h200.preset.bt576=1 min 11 s} (docs/scaling-out.md).
PARAFLAX_COMPILATION_CACHE keeps the compiled steps for a rerun. Of the gpu preset's `seconds_per_unit` (the
time-left estimate), nmt's 0.05 allows for the evaluations: that run's
steps take {h200.preset.nmt_step_s=0.036} s each over 6,000 (step 34 reached, both widths
compiled, then the rate of steps 34-1,000) before them;
the others are guesses.
Docs: docs/pipeline.md.
"""
import ml_collections

PRESETS = ("tiny", "gpu", "pod")
STAGES = ("nmt", "backtranslate", "score", "words", "gran", "sts",
          "bilingual", "mining", "report")


def _tiny() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.preset = "tiny"
  c.lang = "de"
  c.stages = STAGES  # the stages this pipeline runs, in this order
  # The bitext of every stage, as data specs (docs/your-data.md): the NMT
  # and the bilingual encoders train on `train` and are selected on `dev`;
  # back-translation reads `train`'s first spec. Another pair is
  # --config.lang=ru --config.data.train=tsv:ru-en.tsv
  # --config.data.dev=tsv:ru-en.dev.tsv (and mining.dev / mining.test).
  # Tiny: Multi30k captions, its validation set the dev set.
  c.data = ml_collections.ConfigDict({
      "train": ("bitext_multi30k_de_en",),
      "dev": "bitext_multi30k_de_en:validation"})
  # nmt: an existing X->en NMT workdir ("" trains one into W/nmt).
  c.nmt = ml_collections.ConfigDict({"workdir": "", "settings": {
      # allow_dev_overlap: True trains on data.train even where it holds
      # pairs of data.dev (the pipeline refuses them by default).
      "train_steps": 2400, "batch_size": 32,
      "data": {"max_len": 32, "allow_dev_overlap": False},
      # character_coverage 0.9995 suits scripts of thousands of characters
      # (Japanese, Chinese); the plan says when the size cannot hold them.
      "vocab": {"size": 2000, "character_coverage": 1.0},
      "model": {"emb_dim": 64, "hidden": 64, "attention_dim": 64},
      "decode": {"max_output": 40},
      "evals": {"dev": {"sentences": 100, "beam": 2}},
      "eval_every": 600, "log_every": 100, "checkpoint": {"every": 600},
      "mesh": {"num_devices": 1}}})
  # backtranslate: the first `sentences` rows of data.train's first spec
  # whose non-English side is translated; the n-best lists as configured.
  c.backtranslate = ml_collections.ConfigDict({
      "sentences": 3000, "beam": 4, "nbest": 4, "batch_size": 64,
      "stop": "best_ended"})
  # score: length, cost, overlap, bleu; lm: "references" adds lm_ppl, a
  # 3-gram KenLM of the back-translated sentences' English references.
  c.score = ml_collections.ConfigDict({"lm": "references", "lm_order": 3})
  # The filtered Task the GRAN trains on (data/filters.py): the 1-best pairs
  # with lo <= score <= hi, then exactly max_pairs of them (0: all).
  c.filter = ml_collections.ConfigDict(
      {"score": "overlap_1", "lo": 0.1, "hi": 0.7})
  c.max_pairs = 0
  # words: PARAGRAM vectors trained on PPDB's lexical pairs; the GRAN starts
  # from them, with their vocabulary and word_dim (leave the stage out of
  # `stages` for random words).
  c.words = ml_collections.ConfigDict({"settings": {
      "train_steps": 800, "batch_size": 100, "megabatch": 40,
      "model": {"word_dim": 100},
      "eval_every": 400, "log_every": 40, "checkpoint": {"every": 400},
      "mesh": {"num_devices": 1}}})
  c.gran = ml_collections.ConfigDict({"settings": {
      "train_steps": 160, "batch_size": 50, "megabatch": 4,
      "model": {"word_dim": 100, "hidden": 100},
      "data": {"max_len": 30},
      "eval_every": 80, "log_every": 20, "checkpoint": {"every": 80},
      "mesh": {"num_devices": 1}}})
  # bilingual: an existing bilingual workdir of lang-en ("" trains one
  # into W/bilingual).
  c.bilingual = ml_collections.ConfigDict({"workdir": "", "settings": {
      "train_steps": 600, "batch_size": 32,
      "data": {"max_len": 32, "allow_dev_overlap": False},
      "vocab": {"size": 2000, "character_coverage": 1.0},
      # The decoder starts from the embedding itself, and a high learning
      # rate: aligned enough in 600 steps to mine captions.
      "model": {"word_dim": 64, "hidden": 64,
                "decoder_start": "embedding"},
      "optimizer": {"learning_rate": 6e-3},
      "eval": {"sentences": 200},
      "evals": {"dev": {"sentences": 200}},
      "eval_every": 300, "log_every": 50, "checkpoint": {"every": 300},
      "mesh": {"num_devices": 1}}})
  # mining: a dev and a test benchmark of `gold` pairs among `distractors`
  # sentences a side (`paraflax mining-set`): of the bitext `dev` and
  # `test` name (data specs), or, where they are "", of the bundled news
  # sets of de, fr or cs; P/R/F1 of every margin x retrieval
  # (`mining-eval`), and the test set mined with the settings of
  # configs/mine.py below; `sample` mined pairs in the report. Tiny:
  # Multi30k captions, the domain its small encoders train on (they find
  # almost no news pair): 300 gold pairs among 350 distractors a side, from
  # disjoint rows of the validation (dev) and test_2016_flickr (test) sets.
  c.mining = ml_collections.ConfigDict({
      "dev": "bitext_multi30k_de_en:validation",
      "test": "bitext_multi30k_de_en:test_2016_flickr",
      "gold": 300, "distractors": 350, "seed": 0, "sample": 10,
      "settings": {"k": 4, "margin": "ratio", "retrieval": "max"}})
  # Seconds per unit of work on this preset's hardware (units: train steps,
  # sentences back-translated, records scored, benchmark sentences, one for
  # sts and report): the time-left estimate before a stage has measured
  # its own rate (paraflax/pipeline/progress.py); set from a tiny run on
  # 2 idle CPU cores, compilation included.
  c.seconds_per_unit = ml_collections.ConfigDict({
      "nmt": 0.030, "backtranslate": 0.005, "score": 0.0001, "words": 0.028,
      "gran": 0.11, "sts": 4.0, "bilingual": 0.11, "mining": 0.0007,
      "report": 1.0})
  return c


def _gpu(c: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
  """One accelerator host: the step counts of the experiment configs."""
  c.preset = "gpu"
  # Batch widths 32 and 64: 2 compiled steps instead of 8.
  c.nmt.settings = {"train_steps": 6000, "eval_every": 1000,
                    "checkpoint": {"every": 500}, "mesh": {"num_devices": -1},
                    "data": {"width_multiple": 32,
                             "allow_dev_overlap": False},
                    "vocab": {"size": 8000, "character_coverage": 1.0}}
  c.backtranslate = {"sentences": 29000, "beam": 50, "nbest": 50,
                     "batch_size": 64, "stop": "exact"}
  c.max_pairs = 24000
  c.words.settings = {"mesh": {"num_devices": -1}}  # configs/ppdb_words.py
  c.gran.settings = {"train_steps": 1920, "eval_every": 160,
                     "checkpoint": {"every": 160},
                     "mesh": {"num_devices": -1}}
  c.bilingual.settings = {"train_steps": 20000, "eval_every": 1000,
                          "checkpoint": {"every": 1000},
                          "mesh": {"num_devices": -1},
                          "data": {"width_multiple": 32,
                                   "allow_dev_overlap": False},
                          "vocab": {"size": 8000, "character_coverage": 1.0}}
  # Dev on news, and the bundled news sets of `lang` to mine.
  c.data.dev = "bitext_newstest_dev_de_en:newstest2013"
  c.mining.dev, c.mining.test = "", ""
  c.mining.gold, c.mining.distractors = 1000, 4000
  # nmt: agrees with an H200 run of this preset's NMT (header); the others
  # are guesses.
  c.seconds_per_unit = {"nmt": 0.05, "backtranslate": 0.05, "score": 0.0005,
                        "words": 0.02, "gran": 0.1, "sts": 10.0,
                        "bilingual": 0.05, "mining": 0.002, "report": 3.0}
  return c


def _pod(c: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
  """A pod slice: the gpu preset with 8x the batch over every device of
  every host (`mesh.num_devices = -1`), the steps cut to a quarter."""
  c = _gpu(c)
  c.preset = "pod"
  c.nmt.settings.batch_size, c.nmt.settings.train_steps = 512, 1500
  c.gran.settings.batch_size, c.gran.settings.train_steps = 800, 480
  c.bilingual.settings.batch_size = 256
  c.bilingual.settings.train_steps = 5000
  c.backtranslate.batch_size = 512
  # nmt, backtranslate, words, gran, bilingual: projected from `paraflax
  # compile` for v5e:2x4 (lower bounds), lab/results/compile_pipeline_pod.json
  # (seconds a train step's update, a sentence back-translated); score,
  # sts, mining and report: guesses, not measured.
  c.seconds_per_unit = {"nmt": 0.00475, "backtranslate": 0.000904,
                        "score": 0.0005, "words": 0.00105, "gran": 0.0064,
                        "sts": 10.0, "bilingual": 0.0102, "mining": 0.001,
                        "report": 3.0}
  return c


def get_config(preset: str) -> ml_collections.ConfigDict:
  if preset not in PRESETS:
    raise ValueError(f"preset {preset!r}: use one of {', '.join(PRESETS)}.")
  make = {"tiny": lambda c: c, "gpu": _gpu, "pod": _pod}[preset]
  return make(_tiny())
