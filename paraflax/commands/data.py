"""The data commands: the data Tasks, and the benchmarks built from them."""
from __future__ import annotations

from paraflax import choices
from paraflax.commands.base import Command, OVERWRITE, flag

TITLE = "data"

COMMANDS: dict[str, Command] = {
    "tasks": Command(
        "paraflax.data.listing:print_catalogue",
        "list the registered data Tasks and Mixtures",
        "Tasks and Mixtures a config can name in data.task (a Mixture "
        "there concatenates its Tasks), or Tasks to sample by rate in "
        "data.mixture, with their features and splits. With --data, what "
        "each data spec of your own names: its Task, files and rows, and "
        "its first pairs (docs/your-data.md).",
        (flag("--select-dir", help="also the bin Tasks of a paraflax "
              "select-domain folder"),
         flag("--data", action="append", default=[], metavar="SPEC",
              help="a data spec to check and show (tsv:GLOB[:COLUMNS], "
              "lines:SRC_GLOB,EN_GLOB, tfds:NAME/CONFIG[:SPLIT], "
              "backtranslated:FILE.jsonl, selected:FOLDER:BIN); "
              "repeatable")),
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
    "mining-set": Command(
        "paraflax.evaluation.mining_set:build_folder",
        "build a mining benchmark: news sets, any bitext, or BUCC files",
        "Hides --gold aligned pairs among --distractors sentences per side "
        "without a translation on the other: from the bundled news sets "
        "(--lang, --split: pairs of newstest2012 for dev, newstest2013 for "
        "test, distractors from other news test sets), from any bitext "
        "(--data SPEC: gold pairs and distractors from disjoint rows), or "
        "read from BUCC's files (--bucc). Writes OUTPUT/src.txt, tgt.txt "
        "(non-English, English; one sentence per line), gold.tsv (0-based "
        "src_idx<TAB>tgt_idx) and a README with the recipe. The same "
        "arguments give the same files.",
        (flag("--lang", choices=choices.MINING_LANGS,
              help="the bundled news sets: the non-English language"),
         flag("--split", choices=choices.MINING_SPLITS,
              help="with --lang: dev (to choose thresholds) or test"),
         flag("--data", metavar="SPEC", help="any bitext, a data spec "
              "(tsv:GLOB, lines:SRC,EN, tfds:..., docs/your-data.md)"),
         flag("--bucc", nargs=3, metavar=("SRC", "EN", "GOLD"),
              help="BUCC's files: ID<TAB>sentence per side, and "
              "src_id<TAB>tgt_id gold pairs"),
         flag("--output", required=True, help="folder to write"),
         flag("--gold", type=int, default=1000,
              help="gold pairs (default: 1000)"),
         flag("--distractors", type=int, default=4000,
              help="sentences without translation, per side (default: "
              "4000)"),
         flag("--seed", type=int, default=0), OVERWRITE),
        compiles=False),
}
