"""`paraflax eval-sts`: the STS table of a trained paraphrase workdir."""
from __future__ import annotations

import json
import os

from paraflax import files
from paraflax.evaluation import sts
from paraflax.recipes import paraphrase

STS_FILE = "sts.json"


def eval_sts(workdir: str) -> dict:
  """Prints the STS table of the workdir's best checkpoint and writes it to
  `<workdir>/sts.json`."""
  embedder, params, step = paraphrase.load_for_inference(workdir)
  result = sts.evaluate(lambda texts: embedder(params, texts))
  result["checkpoint_step"] = step
  print(f"STS, checkpoint step {step} of {workdir}")
  print(sts.format_table(result))
  files.write_text_atomic(os.path.join(workdir, STS_FILE),
                          json.dumps(result, indent=2) + "\n")
  return result
