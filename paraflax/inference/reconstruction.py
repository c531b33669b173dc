"""`paraflax eval-reconstruction`: a bilingual workdir's encoders mine a
known bitext whose two sides were shuffled apart (Artetxe & Schwenk
2019's UN corpus evaluation, on any bitext a data spec names);
`evaluation.reconstruction` does the mining and the scoring."""
from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence

from paraflax import errors
from paraflax import files
from paraflax.data import specs
from paraflax.evaluation import mining as mining_eval
from paraflax.evaluation import reconstruction
from paraflax.inference import scoring


def eval_reconstruction(workdir: str, data: str, output: str | None = None,
                        seed: int = 0, k: Sequence[int] = (4,),
                        margin: Sequence[str] = ("ratio",),
                        retrieval: Sequence[str] = ("max",),
                        thresholds: Sequence[str] = (),
                        overwrite: bool = False) -> list[dict]:
  """Prints the table of `reconstruction.evaluate` on the bitext `data`
  (a data spec: source, English) embedded by `workdir`; also writes it
  to `output` as JSON, claimed first with the settings (`files.
  claim_output`): a rerun with them finds it written, other settings are
  refused unless `overwrite`."""
  fixed = reconstruction.parse_thresholds(thresholds or ())
  bad_k = [n for n in k if n < 1]
  if bad_k:
    raise errors.ConfigError(f"--k {bad_k[0]}: give neighbours >= 1.")
  if output:
    files.check_output(output)
  specs.parse_bitext(data, "--data")
  scoring.refuse_seen_data(workdir, [("--data", data)])
  lang, english = scoring.workdir_languages(workdir)
  enc = scoring.open_workdir(workdir, lang, english)
  settings = {"workdir": os.path.abspath(workdir), "checkpoint_step": enc.step,
              "data": data, "seed": seed, "k": list(k), "margin": list(margin),
              "retrieval": list(retrieval), "thresholds": list(thresholds)}
  if output:
    files.claim_output(output, settings, overwrite=overwrite)
    if os.path.exists(output):
      print(f"{output}: already evaluated with these settings",
            file=sys.stderr)
      with open(output, encoding="utf-8") as f:
        return json.load(f)["rows"]
  bitext = reconstruction.Shuffled(specs.pairs(data), seed=seed)
  start = time.perf_counter()
  x = enc.embed(bitext.src_unique, lang)
  y = enc.embed(bitext.tgt_unique, english)
  embed_seconds = time.perf_counter() - start
  rows = reconstruction.evaluate(bitext, x, y, ks=k, margins=margin,
                                 retrievals=retrieval, thresholds=fixed)
  print(f"reconstructing {len(bitext.src):,} pairs of {data} ({lang}-"
        f"{english}, {len(bitext.src_unique):,} x {len(bitext.tgt_unique):,} "
        f"distinct sentences, {len(bitext.gold):,} gold line pairs), both "
        f"sides shuffled (seed {seed}), checkpoint step {enc.step} of "
        f"{workdir}; embedding took {embed_seconds:.1f} s. P / R / F1 x 100:")
  print(reconstruction.format_table(rows))
  if output:
    # The file names the workdir as given, as mining-eval's does: a path of
    # one machine would keep it from being compared with a rerun elsewhere.
    files.write_text_atomic(output, mining_eval.to_json(
        rows, **{**settings, "workdir": workdir}, lang=lang,
        lines=len(bitext.src),
        distinct=[len(bitext.src_unique), len(bitext.tgt_unique)],
        gold=len(bitext.gold), embed_seconds=embed_seconds))
    print(f"wrote {output}", file=sys.stderr)
  return rows
