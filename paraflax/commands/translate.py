"""The translate and back-translate commands: NMT decoding, and back-
translation into paraphrase pairs."""
from __future__ import annotations

from paraflax import choices
from paraflax.commands.base import Command, OVERWRITE, WORKDIR, flag

TITLE = "translate and back-translate"

STOP = flag(
    "--stop", choices=choices.STOP_RULES, default="exact",
    help="when a beam search ends: 'exact' (the true n best up to the "
    "maximum length; slow with length normalisation), 'k_finished' (once "
    "beam-many hypotheses have ended; faster, may miss a longer better one) "
    "or 'best_ended' (once the best candidate of a step has ended and "
    "--nbest have, as OpenNMT-py; fastest)")

COMMANDS: dict[str, Command] = {
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
         flag("--json", dest="json_path",
              help="also write the statistics here"),
         OVERWRITE),
        compiles=False),
}
