"""The papers' workloads compiled for TPU slices from a CPU host: memory per
chip, FLOPs, collectives and the roofline time and chip-hours of each.

Each preset is a config of configs/ at a paper's sizes, compiled with
`paraflax compile` (libtpu's compile-only client) for each topology at a
global batch that fills the chips (the paper's batch, or 8 rows a chip
where that is more, a multiple of the chips); the workload is the
paper's, counted in the rows a step takes:

  backtranslate  Wieting et al.'s NMT (620 / 1000, 50k subwords, the
                 paper's decoder), beam 5: ParaNMT's 51M sentences
  gran           the GRAN at Wieting et al.'s sizes (300-dimensional words
                 and state, 100,000 words): one epoch of ParaNMT's 51M pairs
  bilingual      Kim et al.'s model (configs/papers/kim2019.py: 512 units):
                 800k updates of 120 pairs
  mine           exact k-NN both ways of 10^9 x 10^9 float16 embeddings
                 of 1,024 dimensions (a query block a step)
  mine PQ64      the same over a product quantizer's codes, 64 bytes a
                 row, decoded on the chips (paraflax mine --index PQ64
                 --index-on-devices)

    python lab/benchmarks/compile_presets.py [--topologies v4:2x2x1 v5e:4x4 v5e:16x16]

Writes lab/results/compile_presets.json (children.write_result: with the
run's command, commit, hardware, load and seconds); docs/pod.md renders it.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
import children

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PARANMT = 51_000_000

# name -> (config, overrides, program, paper batch, workload rows, what)
PRESETS = {
    "backtranslate": (
        "configs/nmt.py:de",
        ["--config.model.emb_dim=620", "--config.model.hidden=1000",
         "--config.model.attention_dim=1000",
         "--config.model.input_feeding=false", "--config.vocab.size=50000",
         "--config.data.width_multiple=64"],
        "backtranslate", 64, PARANMT,
        "ParaNMT's 51M sentences back-translated, beam 5"),
    "gran": (
        "configs/paraphrase.py:gran",
        ["--config.data.vocab_max_size=100000", "--config.megabatch=1",
         "--config.length_groups=1"],
        "train", 100, PARANMT, "one epoch of 51M pairs"),
    "bilingual": (
        "configs/papers/kim2019.py:de",
        ["--config.data.width_multiple=64"],
        "train", 120, 800_000 * 120, "800k updates of 120 pairs"),
    "mine": (
        "configs/mine.py", [], "mine", 8192, 10**9,
        "10^9 x 10^9 mined both ways"),
    "mine PQ64": (
        "configs/mine.py", [], "mine", 8192, 10**9,
        "10^9 x 10^9 mined both ways over PQ64 codes"),
}
# mine: its corpus held as codes of this many bytes a row (0: float16)
PQ = {"mine PQ64": 64}


# What a row keeps of `paraflax compile`'s report.
REPORTED = ("chips", "devices", "device_kind", "batch_rows", "fits",
            "memory_bytes_per_chip", "hbm_bytes_per_chip", "flops_per_step",
            "bytes_accessed_per_step", "collective_bytes_per_step",
            "interconnect_bytes_per_chip", "parameter_bytes",
            "projected_step_seconds", "bound", "compile_seconds", "refusal")


def fill(paper: int, chips: int) -> int:
  """The batch that fills the chips: the paper's (or config's), or 8 rows a
  chip where that is more, a multiple of the chips."""
  rows = max(paper, 8 * chips)
  return -(-rows // chips) * chips


def compiled(config: str, overrides: list[str], program: str, paper: int,
             topology: str, rows: int = 1_000_000, pq: int = 0) -> dict:
  """`config` (a configs/ path with its overrides) compiled for `topology`
  at the batch that fills its chips: the row's config, overrides, program
  and topology, and the report's REPORTED figures (or its error)."""
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  from paraflax.aot import topology as topology_lib  # pylint: disable=g-import-not-at-top
  chips = len(topology_lib.target(topology).devices)
  batch = fill(paper, chips)
  extra = [] if program != "train" else [f"--config.batch_size={batch}"]
  cfg = config_lib.load(os.path.join(ROOT, config), overrides + extra)
  head = {"config": config, "overrides": overrides + extra,
          "program": program, "topology": topology}
  return {**head, **reported(cfg, topology, program=program,
                             batch_size=batch, beam=5, rows=rows, dim=1024,
                             fp16=program == "mine", pq=pq)}


def reported(cfg, topology: str, **options) -> dict:
  """A loaded config compiled for `topology` with `paraflax compile`'s
  options: the report's REPORTED figures, or its error."""
  from paraflax.aot import compile as compile_lib  # pylint: disable=g-import-not-at-top
  try:
    report = compile_lib.compile_config(cfg, topology, refuse=False,
                                        **options)
  except Exception as e:  # pylint: disable=broad-except
    return {"error": str(e)}
  return {k: report[k] for k in REPORTED if k in report}


def one(name: str, topology: str) -> dict:
  config, overrides, program, paper, rows, what = PRESETS[name]
  row = compiled(config, overrides, program, paper, topology,
                 rows if program == "mine" else 1_000_000, PQ.get(name, 0))
  if "error" in row:
    return {"preset": name, **row}
  step = row.get("projected_step_seconds")
  steps = rows / row["batch_rows"]  # a megabatch's rows, all of them
  hours = None if step is None else steps * step / 3600
  return {"preset": name, **row, "what": what, "workload_rows": rows,
          "steps": steps, "hours": hours,
          "chip_hours": None if hours is None else hours * row["chips"]}


def write(script: str, argv, output: str, rows: list[dict],
          pending: list | None = None) -> None:
  """The rows with the run's facts and peak memory, via write_result;
  `pending`: what the run has still to compile (none: it is complete)."""
  result = {**children.run_facts(script, argv),
            "peak_rss_mib": resource.getrusage(
                resource.RUSAGE_SELF).ru_maxrss / 1024,
            "rows": rows, **({"pending": pending} if pending else {})}
  children.write_result(output, result)
  print(f"wrote {output}")


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--topologies", nargs="+",
                      default=["v4:2x2x1", "v5e:4x4", "v5e:16x16"])
  parser.add_argument("--presets", nargs="+", default=list(PRESETS))
  parser.add_argument("--output", default=os.path.join(
      ROOT, "lab", "results", "compile_presets.json"))
  args = parser.parse_args(argv)
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  write(__file__, argv, args.output,
        [one(p, t) for p in args.presets for t in args.topologies])
  return 0


if __name__ == "__main__":
  sys.exit(main())
