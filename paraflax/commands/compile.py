"""`paraflax compile`: a config checked against a topology before booking."""
from __future__ import annotations

from paraflax.commands.base import Command, flag

TITLE = "check before booking"

COMMANDS: dict[str, Command] = {
    "compile": Command(
        "paraflax.aot.compile:compile_config",
        "compile a config's programs for a TPU topology: memory, FLOPs, "
        "collectives and step time per chip",
        "Builds what the real command would run from the config alone (no "
        "parameters materialised, no data read) on a mesh of the "
        "topology's devices with the config's partitioning rules, compiles "
        "it with libtpu's compile-only client (pip install -e '.[tpu]'; no "
        "TPU needed) and prints, per program: memory per chip against the "
        "chip's HBM, FLOPs and HBM bytes per step (loops counted as they "
        "run), every collective with its bytes, and a roofline step time "
        "from the chip's public peak figures. Exits 2 when a program does "
        "not fit, naming what to change.",
        (flag("--topology", required=True,
              help="KIND:AxB[xC] (v5e:2x2, v5e:16x16, v4:2x2x1, v5p:2x2x1, "
              "v6e:4x4), or 'local' for this host's own devices"),
         flag("--program", default="train",
              choices=("train", "translate", "backtranslate", "embed",
                       "mine", "monods"),
              help="the recipe's train step (default), the NMT's beam "
              "search, an encoder's embedding, one query block of k-NN "
              "both ways, or one chunk of LSH events"),
         flag("--json", dest="json_path", metavar="FILE",
              help="also write the figures as JSON"),
         flag("--width", default="max",
              help="the padded width to compile: max (default: the most "
              "memory), all (each width the run pads to), or one of them"),
         flag("--batch-size", type=int, default=None,
              help="rows of a search or embedding batch (default 64; "
              "embed 256); training takes the config's batch_size"),
         flag("--beam", type=int, default=5, help="beam size (default 5)"),
         flag("--nbest", type=int, default=0,
              help="hypotheses kept per input (default 1)"),
         flag("--rows", type=int, default=1_000_000,
              help="mine: corpus rows a side; monods: phrases "
              "(default 10^6)"),
         flag("--dim", type=int, default=1024,
              help="embedding size of mine and of an MLP similarity "
              "config (default 1024)"),
         flag("--fp16", action="store_true",
              help="mine: the corpus held as float16"),
         flag("--pq", type=int, default=0, metavar="M",
              help="mine: the corpus held as product-quantizer codes of M "
              "bytes a row (paraflax mine --index PQ<M> "
              "--index-on-devices)"),
         flag("--measure", type=int, default=0, metavar="CALLS",
              help="with --topology local: also run each program CALLS "
              "times on this host's devices and print the measured step "
              "time and FLOP/s beside the projection"),
         flag("--words", type=int, default=100_000,
              help="word vocabulary of word-level models when the config "
              "does not cap it (data.vocab_max_size; default 100,000)")),
        config=True, compiles=False),
}
