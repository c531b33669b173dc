"""How much of an NMT epoch's batches is padding under each `data.sort_by`
(paraflax/data/bitext.py SORT_KEYS): the batches a trained workdir's
config cuts from its encoded training cache, one epoch of them, each
padded as training pads it (one width for both sides, a multiple of
data.width_multiple). No timing: the counts are the same on any machine.

    python lab/benchmarks/batch_padding.py --workdir runs/nmt_de \
        --output lab/results/batch_padding.nmt-de.json

Writes, per sort key: the batches, their width units (each batch's width
over data.width_multiple, summed), their slots (rows x width, both sides),
the subwords the slots hold and the padded slots; and the share of slots
and of padded slots that "longer" saves over "target"
(children.write_result: the command, commit, hardware and load).
configs/nmt.py's comment on sort_by and docs/changelog.md quote it.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import children  # pylint: disable=wrong-import-position


def epoch_counts(stream, multiple: int) -> dict[str, int]:
  """One epoch of `stream`'s batches (bitext.BucketStream), as padded."""
  counts = {"batches": stream.batches_per_epoch, "width_units": 0,
            "slots": 0, "subwords": 0}
  for step in range(stream.batches_per_epoch):
    batch = stream.get(step)
    rows, width = batch["src"].shape
    counts["width_units"] += width // multiple
    counts["slots"] += 2 * rows * width
    counts["subwords"] += int(batch["src_len"].sum() + batch["tgt_len"].sum())
  counts["padded_slots"] = counts["slots"] - counts["subwords"]
  return counts


def measure(workdir: str) -> dict:
  """Each sort key's epoch over the workdir's training pairs, and what
  "longer" saves over "target"."""
  # pylint: disable=g-import-not-at-top
  from paraflax.data import bitext, specs, streamed_bitext
  from paraflax.recipes import workdir as workdir_lib
  config = workdir_lib.read_config(workdir)
  dev = specs.pairs(config.data.dev) if config.data.dev else []
  data, _, _ = streamed_bitext.train_bitext(
      config, workdir, ("source", "target"), dev)
  multiple = bitext.width_multiple(config)
  epochs = {key: epoch_counts(bitext.BucketStream(
      data, config.batch_size, 1, config.seed, sort_by=key,
      width_multiple=multiple), multiple) for key in bitext.SORT_KEYS}
  return {"pairs": len(data), "batch_size": config.batch_size,
          "width_multiple": multiple, "sort_keys": epochs,
          "longer_saves": {k: 1 - epochs["longer"][k] / epochs["target"][k]
                           for k in ("slots", "padded_slots")}}


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--workdir", required=True,
                      help="a trained NMT workdir (its config and cache)")
  parser.add_argument("--output", required=True, help="the JSON to write")
  args = parser.parse_args(argv)
  result = measure(args.workdir)
  children.write_result(args.output, {
      **children.run_facts(__file__, argv), **result})
  saves = result["longer_saves"]
  print(f"{args.output}: {result['pairs']:,} pairs; sorted by the longer "
        f"side, {100 * saves['slots']:.1f} % fewer slots and "
        f"{100 * saves['padded_slots']:.1f} % fewer padded slots than by "
        "the target")


if __name__ == "__main__":
  main()
