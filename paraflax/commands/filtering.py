"""The filter commands: the scores of back-translated pairs, the filters built
on them, and their analyses."""
from __future__ import annotations

from paraflax import choices
from paraflax.commands.base import Command, OVERWRITE, flag

TITLE = "filter"

BEAM_RUNNER = (
    flag("--runner", default="DirectRunner",
         help="the Apache Beam runner (default: DirectRunner, this machine)"),
    flag("--pipeline-option", dest="pipeline_options", action="append",
         default=[], metavar="--KEY=VALUE",
         help="a Beam pipeline option, repeatable, e.g. "
         "--pipeline-option=--project=P (give it with '=')"))
PAIR_FILTER = (  # the filtered Task of data.task=backtranslated:SCORED
    flag("--filter", help="SCORE,LO,HI (lo <= score <= hi) or random, as "
         "data.filter"),
    flag("--max-pairs", type=int, default=0, help="exactly this many pairs "
         "drawn by --seed, as data.max_pairs (default: 0, all)"),
    flag("--seed", type=int, default=0, help="the draw's seed, as the "
         "config's seed (default: 0)"))

COMMANDS: dict[str, Command] = {
    "noise-bitext": Command(
        "paraflax.filtering.noise:noise_bitext",
        "inject Khayrallah & Koehn (2018) noise into a clean bitext",
        "Reads the train splits of --corpus (default: the de-en newstest "
        "pool and WMT sample), replaces a share of the lines by each kind "
        "of noise (misaligned, untranslated, wrong_language, short, "
        "misordered; disjoint lines drawn by --seed) and writes OUTPUT "
        "(source<TAB>target), OUTPUT.labels (clean or the kind, per line) "
        "and OUTPUT.json (rates and counts). The same flags give the same "
        "files: a rerun finds them written, other flags are refused unless "
        "--overwrite.",
        (flag("--output", required=True, help="NOISY.tsv"),
         flag("--corpus", nargs="+",
              default=["bitext_newstest_pool_de_en",
                       "bitext_opennmt_wmt_de_en"],
              help="clean bitext, concatenated: data specs (a catalogued "
              "name, `paraflax tasks`, or tsv:, lines:, tfds:)"),
         flag("--third", default="bitext_multi30k_fr_en",
              help="the bitext (a data spec) whose source side gives "
              "wrong_language targets"),
         flag("--rate", action="append", default=[], metavar="KIND=RATE",
              help="share of all lines given this noise, repeatable "
              "(default: 0.1 of each kind)"),
         flag("--seed", type=int, default=0,
              help="which lines get which noise (default: 0)"),
         OVERWRITE)),
    "score-paraphrases": Command(
        "paraflax.inference.score_paraphrases:score_file",
        "score back-translated paraphrase pairs for filtering",
        "Writes every record of a `paraflax backtranslate` JSONL unchanged "
        "plus a `scores` object: " + ", ".join(choices.PARAPHRASE_SCORES)
        + " (lowercased word tokens; translation against reference; "
        "ref_prob with --classifier-workdir, lm_ppl with --lm). One "
        "streaming pass; rerunning the same command resumes.",
        (flag("--input", required=True, help="BT.jsonl from paraflax "
              "backtranslate, or its shards (a glob, a folder)"),
         flag("--output", required=True, help="SCORED.jsonl"),
         flag("--classifier-workdir",
              help="a workdir of configs/ref_classifier.py: adds ref_prob, "
              "the probability that the translation is a reference (best "
              "checkpoint)"),
         flag("--lm", help="a KenLM model from `paraflax train-lm`: adds "
              "lm_ppl, the perplexity of the translation's tokens and </s>"),
         OVERWRITE)),
    "beam-score": Command(
        "paraflax.inference.score_paraphrases:beam_score_file",
        "score-paraphrases (and a filter) as an Apache Beam pipeline",
        "The bytes of score-paraphrases, computed by an Apache Beam "
        "pipeline (DirectRunner by default; DataflowRunner, FlinkRunner, "
        "SparkRunner with their --pipeline-option flags): blocks of records "
        "scored in parallel, each written whole to --parts, then "
        "concatenated in order. With --filtered-output, also the scored "
        "records of exactly the pairs the Task backtranslated:OUTPUT with "
        "data.filter=--filter and data.max_pairs=--max-pairs (seed --seed) "
        "trains on. A rerun of a killed run redoes only missing blocks.",
        (flag("--input", required=True, help="BT.jsonl from paraflax "
              "backtranslate (local, or gs:// for the workers to read), or "
              "its local shards (a glob, a folder)"),
         flag("--output", required=True, help="SCORED.jsonl"),
         flag("--classifier-workdir", help="as score-paraphrases: adds "
              "ref_prob (each worker loads the checkpoint)"),
         flag("--lm", help="as score-paraphrases: adds lm_ppl (each worker "
              "loads the LM)"),
         *BEAM_RUNNER,
         flag("--parts", help="the folder of the blocks' files until the "
              "end (default: OUTPUT.parts; a gs:// folder on Dataflow)"),
         flag("--filtered-output", help="FILTERED.jsonl: the scored records "
              "of the pairs the filtered Task keeps, in file order"),
         *PAIR_FILTER,
         OVERWRITE)),
    "cache-task": Command(
        "paraflax.data.task_cache:cache_task",
        "cache a filtered paraphrase Task with seqio's Beam caching",
        "Runs seqio's own Task caching (seqio.scripts.cache_tasks_main) as "
        "an Apache Beam pipeline over the Task backtranslated:SCORED.jsonl "
        "with data.filter=--filter, data.max_pairs=--max-pairs and the seed "
        "--seed: the kept pairs, as TFRecord shards in OUTPUT/<task>/. A "
        "paraphrase config with data.cache_dir=OUTPUT (and the same data "
        "settings) trains on the cache: the same pairs in the same order.",
        (flag("--task", required=True, help="backtranslated:SCORED.jsonl"),
         flag("--output", required=True, help="the cache folder "
              "(data.cache_dir)"),
         *PAIR_FILTER,
         *BEAM_RUNNER,
         flag("--shards", type=int, default=8, help="TFRecord shards of "
              "the cache (default: 8)"),
         OVERWRITE),
        compiles=False),
    "train-lm": Command(
        "paraflax.filtering.lm:train_lm",
        "train an n-gram LM (KenLM lmplz) for the lm_ppl score",
        "Estimates a modified Kneser-Ney n-gram LM with KenLM's lmplz on "
        "the lowercased word tokens the paraphrase models use (one sentence "
        "per line in; empty lines dropped) and writes it whole (binary: "
        "KenLM's probing format; arpa: text). lmplz and build_binary come "
        "from launch/build_kenlm.sh. A rerun with the same input and "
        "settings does nothing.",
        (flag("--input", required=True, help="TXT, one sentence per line"),
         flag("--output", required=True, help="the LM file"),
         flag("--order", type=int, default=3, help="n-gram order "
              "(default: 3, the paper's)"),
         flag("--format", choices=choices.LM_FORMATS, default="binary",
              help="(default: binary, which loads fastest)"),
         flag("--memory", default="1G", help="lmplz's and build_binary's "
              "memory for sorting (-S; default: 1G)"),
         flag("--discount-fallback", action="store_true",
              help="lmplz --discount_fallback: default discounts where the "
              "counts of counts cannot estimate them (tiny corpora)"),
         OVERWRITE),
        compiles=False),
    "analyze-backtranslations": Command(
        "paraflax.filtering.analysis:analyze_file",
        "entropy, repetition and ref_prob analyses of back-translations",
        "On the 1-best pairs of a `paraflax score-paraphrases` JSONL (or a "
        "`paraflax backtranslate` one), in lowercased word tokens: unigram "
        "and trigram entropy and repetition rates of references and "
        "translations and their difference (the paper's Table 9); with "
        "ref_prob (scored with --classifier-workdir), its Pearson and "
        "Spearman correlation with the translation's repetition rates, "
        "average IDF (Wikipedia counts of the data folder's word_freq/) and "
        "length (Table 10), and the --examples most and least "
        "reference-like translations (Table 11).",
        (flag("--input", required=True, help="SCORED.jsonl"),
         flag("--output", help="also write the tables here as JSON"),
         flag("--examples", type=int, default=5,
              help="translations shown at each end of ref_prob (default: "
              "5)"), OVERWRITE),
        compiles=False),
}
