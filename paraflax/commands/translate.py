"""The translate and back-translate commands: NMT decoding, and back-
translation into paraphrase pairs."""
from __future__ import annotations

from paraflax import choices
from paraflax.commands.base import CLUSTER, Command, OVERWRITE, WORKDIR, flag

TITLE = "translate and back-translate"

STOP = flag(
    "--stop", choices=choices.STOP_RULES, default="exact",
    help="when a beam search ends: 'exact' (the true n best up to the "
    "maximum length; slow with length normalisation), 'k_finished' (once "
    "beam-many hypotheses have ended; faster, may miss a longer better one) "
    "or 'best_ended' (once the best candidate of a step has ended and "
    "--nbest have, as OpenNMT-py; fastest)")
MAX_LEN = flag(
    "--max-len", type=int, default=None, metavar="SUBWORDS",
    help="sources longer than this many subwords (with EOS) are cut to it; "
    "the cut ones are counted (default: the model's data.max_len, the "
    "longest it trained on)")

COMMANDS: dict[str, Command] = {
    "translate": Command(
        "paraflax.inference.translation:translate_file",
        "translate with a trained NMT model",
        "One input line -> one output line (the 1-best), same order. Empty "
        "input lines give empty output lines; lines over data.max_len "
        "subwords are truncated; both are counted on stderr.",
        (WORKDIR, flag("--input", required=True),
         flag("--output", required=True),
         flag("--beam", type=int, default=5),
         flag("--alpha", type=float, default=None,
              help="length normalisation (default: the config's)"),
         flag("--batch-size", type=int, default=32), STOP, MAX_LEN,
         OVERWRITE)),
    "backtranslate": Command(
        "paraflax.inference.translation:backtranslate",
        "back-translate bitext into paraphrase pairs",
        "Translates the non-English side of a bitext Task (or of --src/--ref "
        "files) and appends JSONL records {id, reference, translation, rank, "
        "cost, source}; rerunning the same command resumes. Inputs stream "
        "in length-sorted windows over all local devices; globs give one "
        "output shard per file pair (OUT-00000-of-000NN.jsonl, or "
        "OUT/part-...jsonl for a folder), each resumed alone; with "
        "--distributed each process decodes shards i = its id mod the "
        "process count.",
        (flag("--workdir", required=True, help="an NMT workdir"),
         flag("--output", required=True,
              help="OUT.jsonl (appended), or a folder OUT/ for shards"),
         flag("--beam", type=int, default=50),
         flag("--nbest", type=int, default=50),
         flag("--alpha", type=float, default=None),
         flag("--batch-size", type=int, default=16), STOP, MAX_LEN,
         flag("--task", help="bitext Task, e.g. bitext_multi30k_de_en"),
         flag("--split", help="the split of a catalogued --task NAME "
              "(default: train); a data spec of files names its rows itself"),
         flag("--src", help="non-English file or glob (instead of --task); "
              "a glob's sorted files are input shards"),
         flag("--ref", help="English file or glob line-aligned with --src"),
         flag("--empty-lines", choices=choices.EMPTY_LINES, default="error",
              help="for --src/--ref: rows with an empty side"),
         flag("--shards", type=int, default=0,
              help="output shards of one input (a Task or one file pair), "
              "row i to shard i mod N (default: one per input file pair)"),
         flag("--window", type=int, default=100_000,
              help="rows read and length-sorted together; memory is bounded "
              "by it, not by the input"),
         OVERWRITE, *CLUSTER),
        kept="The records of finished batches are kept in OUTPUT",
        needs=(("--split", "--task"), ("--empty-lines", "--src"))),
    "pair-stats": Command(
        "paraflax.evaluation.pair_stats:report_file",
        "statistics and random examples of a back-translated corpus",
        "Length, cost and score statistics of the 1-best pairs of a "
        "`paraflax backtranslate` JSONL (or of its `paraflax "
        "score-paraphrases` output: each score's too), and random examples "
        "(the same for the same --seed). --json also holds the 1, 10, 25, "
        "75, 90 and 99th percentiles.",
        (flag("input", help="OUT.jsonl from paraflax backtranslate or "
              "score-paraphrases, or its shards (a glob, a folder)"),
         flag("--examples", type=int, default=10),
         flag("--seed", type=int, default=0),
         flag("--json", dest="json_path",
              help="also write the statistics here"),
         OVERWRITE),
        compiles=False),
}
