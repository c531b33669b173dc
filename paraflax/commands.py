"""Every `paraflax <command>`: its flags, its help, and the function it calls.

Data, not code: `cli.py` builds the parser from this table and calls
`target` ("module:function") with the parsed flags as keyword arguments.
The targets are the library's own functions, in the rooms they belong to.
This module imports nothing heavy, so `--help` answers at once.
"""
from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from paraflax import choices

Flag = tuple[tuple[str, ...], dict[str, Any]]
SETTING = "config."  # the argparse dest of a `setting` flag: config. + key


def flag(*names: str, **kwargs: Any) -> Flag:
  return names, kwargs


@dataclasses.dataclass(frozen=True)
class Command:
  target: str  # "module:function"
  help: str
  description: str
  flags: tuple[Flag, ...] = ()
  # Takes `--config FILE[:ARG]`, `--config.key=value` overrides and the
  # `setting` flags; the target gets the loaded ConfigDict as `config`.
  # True: --config is required; a path ("configs/mine.py", in the paraflax
  # checkout): the default --config.
  config: bool | str = False
  # "module:function" to call first, before the target's module is imported
  # (so before jax starts): process-wide settings that suit the command's
  # own process, which the library function leaves to its callers.
  prepare: str = ""
  # Runs jax programs: the CLI turns the compilation cache on first
  # (`paraflax.compile_cache`); False spares a command that never compiles
  # the import of jax.
  compiles: bool = True


def setting(name: str, key: str | None = None, **kwargs: Any) -> Flag:
  """`name VALUE`, a shorthand for `--config.<key>=VALUE` that argparse
  types and checks (`key`: by default the flag's name, `--a-b` -> `a_b`).
  It has no default of its own: unless it is given, the config's value
  stands; given, it wins over the file and over --config.<key>."""
  key = key or name.lstrip("-").replace("-", "_")
  if "choices" not in kwargs and "action" not in kwargs:
    kwargs["metavar"] = key.rpartition(".")[2].upper()
  kwargs["help"] = f"{kwargs.get('help', '')} [config: {key}]".lstrip()
  return flag(name, dest=SETTING + key, default=argparse.SUPPRESS, **kwargs)


WORKDIR = flag("--workdir", required=True)
STOP = flag(
    "--stop", choices=choices.STOP_RULES, default="exact",
    help="when a beam search ends: 'exact' (the true n best up to the "
    "maximum length; slow with length normalisation), 'k_finished' (once "
    "beam-many hypotheses have ended; faster, may miss a longer better one) "
    "or 'best_ended' (once the best candidate of a step has ended and "
    "--nbest have, as OpenNMT-py; fastest)")
LANGS = (
    flag("--src-lang", required=True,
         help="language of the first column / --src (e.g. de)"),
    flag("--tgt-lang", required=True,
         help="language of the second column / --tgt (e.g. en)"))
CSLS_K = flag("--k", type=int, default=10,
              help="csls: nearest neighbours per sentence, counted among the "
              "other side's sentences given (default: 10)")
BILINGUAL_WORKDIR = flag("--workdir", required=True,
                         help="a bilingual workdir")
DIM = flag("--dim", type=int, help="embedding dimension (e.g. 1024 for "
           "LASER); required with embedding files")
OVERWRITE = flag(
    "--overwrite", action="store_true",
    help="replace an output that holds the result of other settings or "
    "inputs (without it such a run stops and keeps it; a rerun with the same "
    "settings resumes or finds the output already written)")
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
FP16 = flag("--fp16", action="store_true",
            help="the embedding files hold float16")

_MINE_DESCRIPTION = (
    "Margin-based mining (Artetxe & Schwenk 2019) of two embedded corpora. "
    "Embeddings are LASER's raw N x d matrices (float32, or float16 with "
    "--fp16), or are computed from the text files with --workdir. Output: a "
    "TSV of score<TAB>src<TAB>tgt, by descending score; src and tgt are the "
    "sentences when --src-text/--tgt-text are given, else 0-based line "
    "numbers. Progress goes to stderr; finished k-NN blocks are kept in "
    "OUTPUT.parts/ until the TSV is written, so rerunning the same command "
    "after a crash resumes.")

CLUSTER = (  # one of several processes (hosts): training.distributed.join
    flag("--distributed", action="store_true",
         help="one of several processes (hosts) of one run: joins them "
         "with jax.distributed; on a TPU pod or under SLURM the peers are "
         "found by themselves, elsewhere give the three flags below (or "
         "their JAX_* environment variables); launch/local_processes.sh "
         "starts such a training run on one machine"),
    flag("--coordinator", metavar="HOST:PORT",
         help="process 0's address, the same for every process "
         "[env: JAX_COORDINATOR_ADDRESS]"),
    flag("--num-processes", type=int,
         help="how many processes the run has [env: JAX_NUM_PROCESSES]"),
    flag("--process-id", type=int,
         help="this process, 0 .. num-processes - 1 [env: JAX_PROCESS_ID]"),
    flag("--init-timeout", type=int, default=60, metavar="SECONDS",
         help="how long to wait for every process to join"),
    flag("--heartbeat-timeout", type=int, default=30, metavar="SECONDS",
         help="a process silent this long counts as dead, and the others "
         "stop with a message (rerun to resume)"),
)


MINE_FLAGS = (
    flag("--src-emb", help="source embeddings (LASER raw file)"),
    flag("--tgt-emb", help="target embeddings (LASER raw file)"),
    DIM, FP16,
    flag("--src-text", help="source sentences, one per embedding"),
    flag("--tgt-text", help="target sentences, one per embedding"),
    flag("--workdir", help="embed --src-text/--tgt-text with this workdir's "
         "encoder instead of reading embedding files (a bilingual workdir, "
         "or an English paraphrase one)"),
    flag("--src-lang", help="source language, with --workdir"),
    flag("--tgt-lang", help="target language, with --workdir"),
    setting("--margin", choices=choices.MARGINS,
            help="margin(cos, neighbourhood mean): a / b, a - b, or plain "
            "cosine a"),
    setting("--retrieval", choices=choices.RETRIEVALS,
            help="candidates: each source's best target (fwd), each "
            "target's best source (bwd), pairs chosen both ways "
            "(intersect), or both, greedily by score using each sentence "
            "once (max)"),
    setting("--k", type=int, help="neighbours per sentence"),
    setting("--threshold", type=float,
            help="keep pairs with score >= this (unset: all)"),
    setting("--dedup", action=argparse.BooleanOptionalAction,
            help="mine each distinct sentence once, then give every line "
            "that holds a mined sentence the pair and its score (so a "
            "repeated sentence can appear in several pairs, even with "
            "--retrieval max); --no-dedup mines lines as they are, "
            "duplicates competing for partners. Needs the text files; "
            "unset: on when they are given"),
    setting("--backend", choices=choices.KNN_BACKENDS,
            help="k-NN search: exact blocked search on the JAX devices, or "
            "faiss on the CPU"),
    setting("--faiss-index", choices=choices.FAISS_INDEXES,
            help="faiss: exact (flat, same neighbours as jax) or clustered "
            "(ivf: approximate, faster on big corpora)"),
    setting("--nlist", type=int,
            help="ivf clusters (unset: about 4 sqrt(corpus rows))"),
    setting("--nprobe", type=int,
            help="ivf clusters searched per query (nprobe >= nlist is "
            "exact)"),
    setting("--block", type=int,
            help="queries per k-NN block, the unit of progress and "
            "resumption; bounds device memory"),
    flag("--output", required=True, help="OUT.tsv"), OVERWRITE,
)

# XLA:CPU's large temporaries (a mining tile, a train step's [B x T, V]
# logits and their gradient) would page-fault afresh in every execution:
# one NMT train step 360 -> 300 ms on 2 cores.
KEEP_FREED_MEMORY = "paraflax.host:keep_freed_memory"

COMMANDS: dict[str, Command] = {
    "pipeline": Command(
        "paraflax.pipeline:run",
        "the whole method: bitext to GRAN + STS and to mined pairs, a report",
        "Runs the stages of a pipeline config (configs/pipeline.py:<preset>: "
        "tiny, gpu, pod): " + ", ".join(choices.PIPELINE_STAGES) + ". Each "
        "writes into WORKDIR/<stage>/ and ends with WORKDIR/<stage>/DONE.json; "
        "a rerun skips finished stages and resumes the unfinished one. "
        "WORKDIR/report.md: training curves, the STS and mining tables, mined "
        "pairs and the time of each stage.",
        (flag("--workdir", required=True, help="one folder per stage, and "
              "report.md; rerunning resumes"),
         flag("--until", choices=choices.PIPELINE_STAGES, metavar="STAGE",
              help="stop after this stage"),
         flag("--only", choices=choices.PIPELINE_STAGES, metavar="STAGE",
              help="run this stage only (the stages it needs must be "
              "finished)"),
         flag("--overwrite", action="store_true",
              help="start afresh over a workdir made by another config (its "
              "stages are removed)")),
        config=True, prepare=KEEP_FREED_MEMORY),
    "train": Command(
        "paraflax.recipes.train:train", "train a model from a config file",
        "Trains (or resumes) the experiment of a config file; override keys "
        "with --config.key=value.",
        (flag("--workdir", required=True,
              help="checkpoints, metrics and the vocabulary go here; "
              "rerunning resumes from the newest checkpoint"),
         *CLUSTER),
        config=True, prepare=KEEP_FREED_MEMORY),
    "embed": Command(
        "paraflax.recipes.embedders:embed_file",
        "embed sentences with a trained model",
        "One sentence per line in; a raw little-endian float32 N x d matrix "
        "out (LASER's format), same row order.",
        (WORKDIR, flag("--input", required=True),
         flag("--output", required=True),
         flag("--lang", help="the input's language: required with a "
              "bilingual workdir (picks its source or target encoder); "
              "optional with an English paraphrase workdir (must be en)"),
         OVERWRITE)),
    "export-words": Command(
        "paraflax.recipes.paraphrase:export_word_vectors",
        "write a paraphrase model's word vectors as a text file",
        "The word table of the best (else newest) checkpoint of a paraphrase "
        "workdir (e.g. configs/ppdb_words.py), in word2vec text format, for "
        "model.word_vectors of another config.",
        (WORKDIR, flag("--output", help="default: <workdir>/word_vectors.txt"))),
    "translate": Command(
        "paraflax.recipes.translation:translate_file",
        "translate with a trained NMT model",
        "One input line -> one output line (the 1-best), same order. Empty "
        "input lines give empty output lines; lines over data.max_len "
        "subwords are truncated; both are counted on stderr.",
        (WORKDIR, flag("--input", required=True),
         flag("--output", required=True),
         flag("--beam", type=int, default=5),
         flag("--alpha", type=float, default=None,
              help="length normalisation (default: the config's)"),
         flag("--batch-size", type=int, default=32), STOP, OVERWRITE)),
    "backtranslate": Command(
        "paraflax.recipes.translation:backtranslate",
        "back-translate bitext into paraphrase pairs",
        "Translates the non-English side of a bitext Task (or of --src/--ref "
        "files) and appends JSONL records {id, reference, translation, rank, "
        "cost, source}; rerunning the same command resumes.",
        (flag("--workdir", required=True, help="an NMT workdir"),
         flag("--output", required=True, help="OUT.jsonl (appended)"),
         flag("--beam", type=int, default=50),
         flag("--nbest", type=int, default=50),
         flag("--alpha", type=float, default=None),
         flag("--batch-size", type=int, default=16), STOP,
         flag("--task", help="bitext Task, e.g. bitext_multi30k_de_en"),
         flag("--split", default="train"),
         flag("--src", help="non-English file (instead of --task)"),
         flag("--ref", help="English file line-aligned with --src"),
         flag("--empty-lines", choices=choices.EMPTY_LINES, default="error",
              help="for --src/--ref: rows with an empty side"), OVERWRITE)),
    "pair-stats": Command(
        "paraflax.evaluation.pair_stats:report_file",
        "statistics and random examples of a back-translated corpus",
        "Length and cost statistics of the 1-best pairs of a `paraflax "
        "backtranslate` JSONL, and random examples (the same for the same "
        "--seed).",
        (flag("input", help="OUT.jsonl from paraflax backtranslate"),
         flag("--examples", type=int, default=10),
         flag("--seed", type=int, default=0),
         flag("--json", dest="json_path", help="also write the statistics here"),
         OVERWRITE),
        compiles=False),
    "export-pairs": Command(
        "paraflax.data.tasks:export_pairs",
        "write human English pairs as back-translation records",
        "Writes the train pairs of a paraphrase Task or Mixture (e.g. "
        "paraphrase_en_wikiauto) as JSONL records {id, reference, "
        "translation, rank 0, cost null}: sentence1 the reference, sentence2 "
        "the translation. Score them with score-paraphrases and train on "
        "data.task=backtranslated:SCORED.jsonl, so that the human pairs go "
        "through the filters of the back-translated ones.",
        (flag("--task", required=True, help="a paraphrase Task or Mixture "
              "(paraflax tasks)"),
         flag("--output", required=True, help="OUT.jsonl"),
         OVERWRITE)),
    "score-paraphrases": Command(
        "paraflax.recipes.score_paraphrases:score_file",
        "score back-translated paraphrase pairs for filtering",
        "Writes every record of a `paraflax backtranslate` JSONL unchanged "
        "plus a `scores` object: " + ", ".join(choices.PARAPHRASE_SCORES)
        + " (lowercased word tokens; translation against reference; "
        "ref_prob with --classifier-workdir, lm_ppl with --lm). One "
        "streaming pass; rerunning the same command resumes.",
        (flag("--input", required=True, help="BT.jsonl from paraflax "
              "backtranslate"),
         flag("--output", required=True, help="SCORED.jsonl"),
         flag("--classifier-workdir",
              help="a workdir of configs/ref_classifier.py: adds ref_prob, "
              "the probability that the translation is a reference (best "
              "checkpoint)"),
         flag("--lm", help="a KenLM model from `paraflax train-lm`: adds "
              "lm_ppl, the perplexity of the translation's tokens and </s>"),
         OVERWRITE)),
    "beam-score": Command(
        "paraflax.recipes.score_paraphrases:beam_score_file",
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
              "backtranslate (local, or gs:// for the workers to read)"),
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
    # Domain selection: Moore-Lewis subsampling and its
    # evaluation.
    "domain-data": Command(
        "paraflax.evaluation.domain_selection:write_domain_data",
        "the biomedical split and the general bitext of the domain "
        "evaluation",
        "Writes OUTPUT/DOMAIN.{train,dev,test}.en (the in-domain English of "
        "mono_en_domains, empty lines dropped: line i to dev when i % 10 "
        "== 9, to test when i % 10 == 0, else to train) and "
        "OUTPUT/general.{mul,en,langs}: every English-paired de/fr/cs "
        "bitext of the data folder concatenated, each English sentence once "
        "(its first pair kept), rows with an empty side dropped; "
        "general.langs names each row's language.",
        (flag("--domain", choices=choices.DOMAINS, default="biomed",
              help="biomed (27,490 biomedical sentences) or abc_science "
              "(ABC science news, lines that are not UTF-8 read as Latin-1; "
              "default: biomed)"),
         flag("--output", required=True, help="folder to write"),
         OVERWRITE),
        compiles=False),
    "select-domain": Command(
        "paraflax.domain.selection:select_domain",
        "Moore-Lewis cross-entropy-difference selection of a bitext",
        "An in-domain LM on --in-domain and a general LM on a random sample "
        "of as many sentences of --general-tgt (English), both KenLM "
        "n-gram LMs of train-lm's tokens; each other general pair gets "
        "diffCE = H_in - H_out (bits per token; lower = closer to the "
        "domain) and one of --bins equal bins, bin 1 the most in-domain. "
        "OUTPUT/ gets bin_<i>.<src-lang> and bin_<i>.en (line-aligned; "
        "bin_<i>.langs too for a mul source), "
        "scores.tsv (line, H_in, H_out, diffCE, bin; bin 0 = the general "
        "LM's sample), the two LMs, summary.json and summary.md; each bin is "
        "the Task selected:OUTPUT:<i> (paraflax tasks --select-dir). With "
        "random_bins (default), random_<i>.* hold the same sentences in a "
        "random order of --seed cut into bins of the same sizes, the Tasks "
        "selected:OUTPUT:r<i>: the same-size random control of any diffCE "
        "bins. The general files are streamed; rerunning the same command "
        "resumes.",
        (flag("--in-domain", required=True, help="TXT, one in-domain "
              "English sentence per line"),
         flag("--general-src", required=True, help="the general bitext's "
              "non-English side"),
         flag("--general-tgt", required=True, help="its English side, "
              "line-aligned"),
         flag("--src-lang", required=True, help="the non-English side's "
              "code (de, fr, cs; mul for several)"),
         flag("--general-langs", help="with --src-lang mul: the language "
              "code of each general pair, one a line (default: the .langs "
              "file beside --general-src); each bin then gets "
              "bin_<i>.langs, which paraflax pivot splits by"),
         setting("--bins", type=int), setting("--order", type=int),
         setting("--seed", type=int, help="of the general LM's sample and "
                 "of the random bins"),
         flag("--output", required=True, help="folder to write"),
         OVERWRITE),
        config="configs/domain.py",
        compiles=False),
    "eval-domain": Command(
        "paraflax.evaluation.domain_selection:evaluate",
        "in-domain perplexity of Moore-Lewis vs random vs n-gram-overlap "
        "selections",
        "For each size of eval_sizes, an eval_order-gram LM (3, the paper's; "
        "closed vocabulary: the in-domain words seen eval_min_count times) "
        "on the top-diffCE sentences of a select-domain folder, on as many "
        "random ones and on the ones with the most n-grams in the in-domain "
        "text, all drawn from the sentences outside the general LM's "
        "sample; their perplexity on --test. Writes OUTPUT/results.json, "
        "results.md and perplexity.png; rerunning resumes.",
        (flag("--select-dir", required=True,
              help="a paraflax select-domain output"),
         flag("--test", required=True, help="in-domain test text, one "
              "sentence per line"),
         setting("--eval-seed", type=int, help="of the random selection"),
         flag("--output", required=True, help="folder to write"),
         OVERWRITE),
        config="configs/domain.py",
        compiles=False),
    "tasks": Command(
        "paraflax.data.corpora:print_catalogue",
        "list the registered data Tasks and Mixtures",
        "Tasks and Mixtures a config can name in data.task (a Mixture "
        "there concatenates its Tasks), or Tasks to sample by rate in "
        "data.mixture, with their features and splits.",
        (flag("--select-dir", help="also the bin Tasks of a paraflax "
              "select-domain folder"),),
        compiles=False),
    "mine": Command(
        "paraflax.recipes.embedders:mine_files",
        "mine parallel sentences by margin score (LASER files)",
        _MINE_DESCRIPTION, MINE_FLAGS + CLUSTER, config="configs/mine.py",
        prepare=KEEP_FREED_MEMORY),
    "mining-set": Command(
        "paraflax.evaluation.mining_set:build_folder",
        "build a mining benchmark from the news test sets",
        "Hides --gold aligned pairs of newstest2012 (dev) or newstest2013 "
        "(test) among --distractors sentences per side from other news test "
        "sets, so that most sentences have no translation. Writes "
        "OUTPUT/src.txt, tgt.txt (non-English, English; one sentence per "
        "line), gold.tsv (0-based src_idx<TAB>tgt_idx) and a README with the "
        "recipe. The same arguments give the same files.",
        (flag("--lang", choices=choices.MINING_LANGS, required=True,
              help="the non-English language (paired with English)"),
         flag("--split", choices=choices.MINING_SPLITS, required=True,
              help="dev (to choose thresholds) or test"),
         flag("--output", required=True, help="folder to write"),
         flag("--gold", type=int, default=1000,
              help="gold pairs (default: 1000)"),
         flag("--distractors", type=int, default=4000,
              help="sentences without translation, per side (default: "
              "4000)"),
         flag("--seed", type=int, default=0), OVERWRITE),
        compiles=False),
    "mining-eval": Command(
        "paraflax.evaluation.mining:evaluate_folders",
        "mining P/R/F1 on a dev and a test benchmark",
        "Mines both benchmarks (from `paraflax mining-set`) with every "
        "margin x retrieval strategy, picks the F1-optimal threshold on dev "
        "and applies it to test. Prints precision / recall / F1 x 100 (dev "
        "at its optimum, test at the dev threshold, test with no "
        "threshold); embeddings are LASER raw files, row i = line i of the "
        "folder's src.txt / tgt.txt.",
        (flag("--dev", required=True, help="dev benchmark folder"),
         flag("--test", required=True, help="test benchmark folder"),
         *(flag(f"--{split}-{side}-emb", required=True,
                help=f"embeddings of the {split} folder's {side}.txt")
           for split in ("dev", "test") for side in ("src", "tgt")),
         flag("--dim", type=int, required=True,
              help="embedding dimension (e.g. 1024 for LASER)"),
         FP16,
         flag("--k", type=int, default=4,
              help="neighbours per sentence (default: 4)"),
         flag("--output", help="also write the table here as JSON"),
         OVERWRITE)),
    "score-pairs": Command(
        "paraflax.recipes.scoring:score_file",
        "score sentence pairs with a bilingual workdir",
        "One source<TAB>target pair per line in; one float per line out, "
        "same order, higher = more likely a translation. mlp needs "
        "`paraflax train-mlp` on the workdir first; csls compares each "
        "sentence with its --k nearest neighbours among all the file's other "
        "side.",
        (BILINGUAL_WORKDIR, flag("--input", required=True, help="PAIRS.tsv"),
         flag("--output", required=True), *LANGS,
         flag("--similarity", choices=choices.SIMILARITIES, default="cosine",
              help="(default: cosine)"), CSLS_K, OVERWRITE)),
    "align-eval": Command(
        "paraflax.recipes.scoring:align_eval",
        "sentence alignment recovery error of a bilingual workdir",
        "Shuffles the English side of two line-aligned files, gives every "
        "sentence its nearest neighbour on the other side under each "
        "similarity, and prints the share (%) not matched with their "
        "translation, xx->en, en->xx and their mean.",
        (BILINGUAL_WORKDIR, flag("--src", required=True),
         flag("--tgt", required=True, help="line-aligned with --src"), *LANGS,
         flag("--similarity", choices=choices.SIMILARITIES, action="append",
              help="repeat for several (default: cosine, euclidean, csls, "
              "and mlp once trained)"), CSLS_K,
         flag("--seed", type=int, default=0, help="of the shuffle"),
         flag("--output", help="also write the rows here as JSON"),
         OVERWRITE)),
    "train-mlp": Command(
        "paraflax.recipes.scoring:train_mlp_for_workdir",
        "train the MLP similarity of a bilingual workdir",
        "Positives: newstest_train_pool pairs; negatives: the "
        "--worst-fraction lowest-cosine pairs of the ParaCrawl v3 sample "
        "(labels unused) or random pairs; configs/mlp_similarity.py, whose "
        "keys these flags set. Trains afresh into WORKDIR/mlp_similarity/ "
        "(orbax checkpoints: the lowest held-out loss is used) and writes "
        "WORKDIR/mlp_similarity.json.",
        (BILINGUAL_WORKDIR,
         setting("--negatives", choices=choices.MLP_NEGATIVES),
         setting("--worst-fraction", type=float),
         setting("--epochs", type=int),
         setting("--seed", type=int)),
        config="configs/mlp_similarity.py"),
    "eval-bilingual": Command(
        "paraflax.recipes.scoring:eval_bilingual",
        "alignment recovery and ParaCrawl tables of a bilingual workdir",
        "Alignment recovery on newstest2012 and the Multi30k test sets, "
        "ParaCrawl v3/v6 AUC and precision at 25% beside the bundled "
        "filters, and cosine vs MLP score plots; trains the MLP similarity "
        "first if the workdir has none. Writes WORKDIR/bilingual_eval.json "
        "and WORKDIR/paracrawl_*.png.",
        (BILINGUAL_WORKDIR,
         flag("--k", type=int, default=10, help="csls neighbours"),
         flag("--seed", type=int, default=0, help="of the shuffle"))),
    "eval": Command(
        "paraflax.recipes.evaluate:evaluate",
        "run the evaluators of a trained workdir's config",
        "Runs the evaluators its config names (config.evals: STS, dev BLEU, "
        "alignment accuracy, ...) on the workdir's best checkpoint, prints "
        "their tables and writes them to <workdir>/evals.json.",
        (WORKDIR, flag("--only", action="append",
                       help="an evaluator of config.evals; repeat for "
                       "several (default: all)"))),
    "sweep": Command(
        "paraflax.recipes.sweep:sweep",
        "train and evaluate every point of a sweep config",
        "Each point of a sweep config (configs/sweeps/: a base config and a "
        "grid of --config.key=value overrides) is trained in "
        "WORKDIR/<point> and evaluated by its config's evals on the best "
        "checkpoint; then WORKDIR/results.json, results.md (one row per "
        "point: overrides, the selected dev metric, the test metrics) and "
        "results.png. Rerunning skips finished points and resumes the "
        "unfinished one; --config.key=value here sets the sweep config's "
        "keys (e.g. --config.max_pairs=24000).",
        (flag("--workdir", required=True,
              help="one folder per point, and the results"),
         flag("--worker", type=int, default=None,
              help="train only the points k with k %% WORKERS == WORKER "
              "and write no table (one process per host or device); then "
              "run without --worker, or with --report-only, for the table"),
         flag("--workers", type=int, default=1,
              help="how many workers split the points (default: 1)"),
         flag("--dry-run", action="store_true",
              help="print the points and their workdirs; train nothing"),
         flag("--report-only", action="store_true",
              help="write the table from the finished points; train "
              "nothing"),
         flag("--overwrite", action="store_true",
              help="start afresh over a workdir that holds another sweep "
              "(its points are removed); give it to one process only")),
        config=True, prepare=KEEP_FREED_MEMORY),
    "eval-sts": Command(
        "paraflax.recipes.evaluate:eval_sts", "STS table of a trained model",
        "Prints the STS table and writes it to <workdir>/sts.json.",
        (WORKDIR,)),
    # Domain-adapted paraphrasing: pivot tables, MonoDS, PPDB.
    "pivot": Command(
        "paraflax.domain.pivot:build_table",
        "pivot paraphrases from word-aligned bitext",
        "Aligns the --bitext pairs of each language together (one corpus "
        "per language) with eflomal in both directions (grow-diag-"
        "final-and), extracts the phrase pairs consistent with the alignment "
        "(pivot.max_phrase_len words a side), p(f|e) and p(e|f) by relative "
        "frequency, and writes TABLE: `e1 ||| e2 ||| p(e2|e1)` with p(e2|e1) "
        "= sum_f p(e2|f) p(f|e1) averaged over the pivot languages (de, fr, "
        "cs) that hold e1, sorted by e1 then p. Blocks of pivot.block_pairs "
        "pairs are kept in TABLE.parts/: rerunning the same command resumes. "
        "Also TABLE.summary.json (pairs and phrase pairs per second).",
        (flag("--bitext", nargs="+", required=True, action="extend",
              help="a bitext Task (bitext_multi30k_de_en[:split], or a bin "
              "selected:SEL:<i>, or its random control selected:SEL:r<i>), "
              "a file prefix P with P.en and P.de|fr|cs "
              "(SEL/bin_1), or with P.mul and P.langs (a bin of a mul "
              "source: split by language), "
              "or a folder of such pairs; repeatable"),
         flag("--output", required=True, help="TABLE"),
         setting("--max-phrase-len", key="pivot.max_phrase_len", type=int),
         OVERWRITE),
        config="configs/domain_pivot.py",
        compiles=False),
    "monods": Command(
        "paraflax.domain.monods:rerank",
        "rerank a paraphrase table by monolingual similarity (LSH)",
        "Streams --corpus once: each occurrence of a table phrase adds its "
        "left and right word as features to online LSH signatures (Van "
        "Durme & Lall 2010: a Gaussian pool indexed by a hash of the "
        "feature, --bits bits, jitted sums split over the devices by bits); "
        "MonoDS = cos(pi * hamming / bits). RERANKED: every pair as `e1 ||| "
        "e2 ||| score ||| p=P monods=M`, score = (1 - w) log p + w log "
        "max(M, monods.floor), w = monods.weight; sorted by e1 then score. "
        "Also RERANKED.summary.json (events per second). With "
        "--distributed, several processes share the bits (each streams the "
        "corpus; process 0 writes).",
        (flag("--corpus", nargs="+", required=True, action="extend",
              help="English text, one sentence per line (gzipped or not), "
              "or a monolingual Task (mono_en_brown); repeatable"),
         flag("--table", required=True, dest="table_path",
              help="TABLE of paraflax pivot"),
         flag("--output", required=True, help="RERANKED"),
         setting("--bits", key="monods.bits", type=int,
                 help="signature bits, a multiple of 8"),
         setting("--weight", key="monods.weight", type=float,
                 help="weight of log MonoDS against log p(e2|e1)"),
         OVERWRITE, *CLUSTER),
        config="configs/domain_pivot.py"),
    "eval-ppdb": Command(
        "paraflax.evaluation.ppdb:evaluate_file",
        "agreement of a paraphrase table's words with PPDB",
        "For each single word e1 of TABLE that PPDB's lexical pairs know, "
        "its single-word paraphrases ranked by each of the table's scores "
        "(the score column and every name=value feature): precision of the "
        "top 1 and top 5 against PPDB (a hit is a pair PPDB lists, either "
        "way round). Writes OUT.json and OUT.md with --examples words and "
        "their top paraphrases; --coverage adds the share of a text's 1- to "
        "4-grams that are e1 of the table.",
        (flag("--table", required=True, dest="table_path",
              help="TABLE or RERANKED"),
         flag("--output", required=True, help="OUT prefix (.json, .md)"),
         flag("--ppdb", help="PPDB pairs (word<TAB>word, gzipped or not; "
              "default: ppdb_lexical in the data folder)"),
         flag("--examples", type=int, default=20,
              help="words shown with their top paraphrases (default: 20)"),
         flag("--words", nargs="+", dest="words_shown", help="show these words instead"),
         flag("--coverage", nargs="+", dest="coverage_texts", help="test text(s): coverage of "
              "their 1- to 4-grams by the table"),
         OVERWRITE),
        compiles=False),
}
