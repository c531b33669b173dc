"""The data commands: the data Tasks, and the benchmarks built from them."""
from __future__ import annotations

from paraflax import choices
from paraflax.commands.base import Command, OVERWRITE, flag

TITLE = "data"

COMMANDS: dict[str, Command] = {
    "tasks": Command(
        "paraflax.data.corpora:print_catalogue",
        "list the registered data Tasks and Mixtures",
        "Tasks and Mixtures a config can name in data.task (a Mixture "
        "there concatenates its Tasks), or Tasks to sample by rate in "
        "data.mixture, with their features and splits.",
        (flag("--select-dir", help="also the bin Tasks of a paraflax "
              "select-domain folder"),),
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
}
