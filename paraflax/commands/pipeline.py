"""The pipeline commands: the whole method in one command."""
from __future__ import annotations

from paraflax import choices
from paraflax.commands.base import Command, KEEP_FREED_MEMORY, flag

TITLE = "pipeline"

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
        config=True, prepare=KEEP_FREED_MEMORY,
        kept="Finished stages are kept (WORKDIR/<stage>/DONE.json) and the "
        "unfinished one resumes from what it saved"),
}
