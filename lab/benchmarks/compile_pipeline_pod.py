"""The pipeline's pod preset (configs/pipeline.py:pod) compiled for a
single-host TPU slice: each compiled stage's memory per chip, whether it
fits, and its roofline time a unit of the stage's work.

The stages' configs are the ones `paraflax pipeline` runs (its plan: each
stage's config file with the preset's `settings`): the nmt, words, gran
and bilingual train steps (their widest batch width), and the
back-translation's beam search at the preset's beam, n-best and batch.
`seconds_per_unit` is the projected step over its units: a train step's
optimizer updates (a paraphrase step is a megabatch of them), a search
batch's sentences. Projections are lower bounds: the three roofline
times overlapped perfectly, compilation and input left out.

    python lab/benchmarks/compile_pipeline_pod.py [--topology v5e:2x4]

Writes lab/results/compile_pipeline_pod.json (children.write_result);
configs/pipeline.py's pod preset takes its batch sizes and
seconds_per_unit from it, and tests/test_pipeline.py pins the two.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
import compile_presets

TRAINED = ("nmt", "words", "gran", "bilingual")


def stages(topology: str) -> list[dict]:
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  from paraflax import recipes  # pylint: disable=g-import-not-at-top
  from paraflax.pipeline import planning  # pylint: disable=g-import-not-at-top
  preset = config_lib.load(
      os.path.join(compile_presets.ROOT, "configs/pipeline.py:pod"), [])
  with tempfile.TemporaryDirectory() as workdir:  # the plan writes nothing
    configs = planning.plan(preset, workdir).configs
  rows = []
  for stage in TRAINED:
    cfg = configs[stage]
    row = compile_presets.reported(cfg, topology, program="train")
    units = recipes.family(cfg).updates_per_call(cfg)
    rows.append({"stage": stage, "program": "train", "unit": "train step",
                 "batch_size": cfg.batch_size, "units_per_step": units,
                 **row})
  bt = preset.backtranslate
  row = compile_presets.reported(configs["nmt"], topology,
                                 program="backtranslate",
                                 batch_size=bt.batch_size, beam=bt.beam,
                                 nbest=bt.nbest)
  rows.append({"stage": "backtranslate", "program": "backtranslate",
               "unit": "sentence", "batch_size": bt.batch_size,
               "beam": bt.beam, "nbest": bt.nbest,
               "units_per_step": row.get("batch_rows"), **row})
  for r in rows:
    step = r.get("projected_step_seconds")
    r["topology"] = topology
    r["seconds_per_unit"] = (step / r["units_per_step"]
                             if step and r.get("units_per_step") else None)
  return rows


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--topology", default="v5e:2x4")
  parser.add_argument("--output", default=os.path.join(
      compile_presets.ROOT, "lab", "results", "compile_pipeline_pod.json"))
  args = parser.parse_args(argv)
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  compile_presets.write(__file__, argv, args.output, stages(args.topology))
  return 0


if __name__ == "__main__":
  sys.exit(main())
