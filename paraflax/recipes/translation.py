"""`paraflax translate` and `paraflax backtranslate`: an NMT workdir's
translator over a file, or over the non-English side of a bitext."""
from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from paraflax import errors
from paraflax import files
from paraflax.data import batching
from paraflax.data import readers
from paraflax.decoding import backtranslation
from paraflax.recipes import nmt


def translate_texts(translator: nmt.Translator, params: Any,
                    texts: Sequence[str], *, beam: int = 5, nbest: int = 1,
                    alpha: float | None = None, batch_size: int = 32,
                    stop: str = "exact") -> list[list[nmt.Hypothesis]]:
  """The `nbest` best translations of each text, best first, in input
  order (`paraflax.Model.translate` and `paraflax translate`): an empty
  text gets none; texts over data.max_len subwords are truncated. `alpha`
  defaults to the config's."""
  if beam < 1:
    raise errors.ConfigError(f"--beam {beam}: the beam must be >= 1.")
  todo = [i for i, text in enumerate(texts) if text.strip()]
  sources = [translator.encode(texts[i], f"input {i + 1}", "truncate")
             for i in todo]
  found: list[list[nmt.Hypothesis]] = [[] for _ in texts]
  for j, hyps in translator.translate(
      params, sources, beam=beam, nbest=nbest,
      alpha=translator.alpha if alpha is None else alpha,
      batch_size=batch_size, stop=stop):
    found[todo[j]] = hyps
  return found


def translate_file(workdir: str, input: str, output: str, *, beam: int = 5,
                   alpha: float | None = None, batch_size: int = 32,
                   stop: str = "exact", overwrite: bool = False) -> None:
  """The 1-best translation of every line of `input`, line by line; empty
  lines stay empty, lines over data.max_len subwords are truncated."""
  if beam < 1:
    raise errors.ConfigError(f"--beam {beam}: the beam must be >= 1.")
  files.check_output(output)
  lines, _ = readers.read_lines(input, empty="keep")
  translator, params, step = nmt.load_translator(workdir)
  todo = [i for i, line in enumerate(lines) if line.strip()]
  truncated = batching.report_longer(
      [len(translator.src_sp.encode(lines[i])) + 1 for i in todo],
      translator.max_len, "subwords (with EOS)")
  found = translate_texts(translator, params, lines, beam=beam, alpha=alpha,
                          batch_size=batch_size, stop=stop)
  best = [hyps[0] for hyps in found if hyps]
  files.write_once(output, "".join((hyps[0].text if hyps else "") + "\n"
                                   for hyps in found), overwrite=overwrite)
  print(f"translated {len(todo)} lines to {output} (checkpoint step {step}, "
        f"beam {beam}); {len(lines) - len(todo)} empty lines left empty, "
        f"{truncated} truncated at {translator.max_len} subwords; "
        + translator.unended_note(sum(not h.ended for h in best), len(todo)),
        file=sys.stderr)


def _bitext(task: str | None, split: str, src: str | None, ref: str | None,
            empty_lines: str) -> tuple[list[tuple[str, str]], str]:
  """(non-English, English) rows of a Task or of two files, and their name."""
  if bool(task) == bool(src or ref) or (src and not ref):
    raise errors.ConfigError("give either --task NAME [--split S] or both "
                             "--src FILE and --ref FILE.")
  if task:
    from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
    return ([(e["source"], e["target"]) for e in tasks.examples(task, split)],
            f"{task}:{split}")
  rows, _ = readers.read_parallel(
      [src, ref], empty=empty_lines,
      fix="Remove those rows from both files, or pass --empty-lines drop.")
  return rows, src


def backtranslate(workdir: str, output: str, *, beam: int = 50,
                  nbest: int = 50, alpha: float | None = None,
                  batch_size: int = 16, stop: str = "exact",
                  task: str | None = None, split: str = "train",
                  src: str | None = None, ref: str | None = None,
                  empty_lines: str = "error", overwrite: bool = False
                  ) -> int:
  """Appends the n-best back-translations of a bitext's non-English side to
  the JSONL `output`, resuming a killed run; returns the records written."""
  backtranslation.check_beam(beam, nbest)
  files.check_output(output)
  rows, name = _bitext(task, split, src, ref, empty_lines)
  translator, params, step = nmt.load_translator(workdir)
  done = backtranslation.run(
      translator, params, [r[0] for r in rows], [r[1] for r in rows], output,
      beam=beam, nbest=nbest,
      alpha=translator.alpha if alpha is None else alpha,
      batch_size=batch_size, name=name, stop=stop, overwrite=overwrite)
  print(f"{len(rows)} inputs, {done.records} records appended to {output} "
        f"(checkpoint step {step}, beam {beam}, nbest {nbest}); of the "
        f"{done.inputs} decoded by this run, "
        + translator.unended_note(done.unended, done.inputs), file=sys.stderr)
  return done.records
