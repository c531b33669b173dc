"""The train commands: training from a config, sweeps of configs, and what a
trained model exports."""
from __future__ import annotations

from paraflax.commands.base import (
    CLUSTER, Command, KEEP_FREED_MEMORY, WORKDIR, flag)

TITLE = "train"

COMMANDS: dict[str, Command] = {
    "train": Command(
        "paraflax.recipes.train:train", "train a model from a config file",
        "Trains (or resumes) the experiment of a config file; override keys "
        "with --config.key=value.",
        (flag("--workdir", required=True,
              help="checkpoints, metrics and the vocabulary go here; "
              "rerunning resumes from the newest checkpoint"),
         *CLUSTER),
        config=True, prepare=KEEP_FREED_MEMORY,
        kept="The newest checkpoint in the workdir is kept"),
    "sweep": Command(
        "paraflax.inference.sweep:sweep",
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
    "export-words": Command(
        "paraflax.inference.embedders:export_word_vectors",
        "write a paraphrase model's word vectors as a text file",
        "The word table of the best (else newest) checkpoint of a paraphrase "
        "workdir (e.g. configs/ppdb_words.py), in word2vec text format, for "
        "model.word_vectors of another config.",
        (WORKDIR,
         flag("--output", help="default: <workdir>/word_vectors.txt"))),
}
