"""`paraflax translate` and `paraflax backtranslate`: an NMT workdir's
translator over a file, or over the non-English side of a bitext."""
from __future__ import annotations

import contextlib
import glob
import itertools
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from paraflax import errors
from paraflax import files
from paraflax.data import batching
from paraflax.data import readers
from paraflax.data import shards as shards_lib
from paraflax.decoding import backtranslation
from paraflax.decoding import translator as translator_lib
from paraflax.recipes import nmt
from paraflax.training import partitioning


def translate_texts(translator: translator_lib.Translator, params: Any,
                    texts: Sequence[str], *, beam: int = 5, nbest: int = 1,
                    alpha: float | None = None, batch_size: int = 32,
                    stop: str = "exact"
                    ) -> list[list[translator_lib.Hypothesis]]:
  """The `nbest` best translations of each text, best first, in input
  order (`paraflax.Model.translate` and `paraflax translate`): an empty
  text gets none; texts over data.max_len subwords are truncated. `alpha`
  defaults to the config's."""
  if beam < 1:
    raise errors.ConfigError(f"--beam {beam}: the beam must be >= 1.")
  todo = [i for i, text in enumerate(texts) if text.strip()]
  sources = [translator.encode(texts[i], f"input {i + 1}", "truncate")
             for i in todo]
  found: list[list[translator_lib.Hypothesis]] = [[] for _ in texts]
  for j, hyps in translator.translate(
      params, sources, beam=beam, nbest=nbest,
      alpha=translator.alpha if alpha is None else alpha,
      batch_size=batch_size, stop=stop):
    found[todo[j]] = hyps
  return found


def translate_file(workdir: str, input: str, output: str, *, beam: int = 5,
                   alpha: float | None = None, batch_size: int = 32,
                   stop: str = "exact", max_len: int | None = None,
                   overwrite: bool = False) -> None:
  """The 1-best translation of every line of `input`, line by line; empty
  lines stay empty, lines over `max_len` (default: data.max_len) subwords
  are truncated."""
  if beam < 1:
    raise errors.ConfigError(f"--beam {beam}: the beam must be >= 1.")
  files.check_output(output)
  lines, _ = readers.read_lines(input, empty="keep")
  translator, params, step = nmt.load_translator(workdir, max_len=max_len)
  files.claim_output(output, {
      "input": files.lines_digest(lines), "workdir": os.path.abspath(workdir),
      "step": step, "beam": beam, "stop": stop, "max_len": translator.max_len,
      "alpha": translator.alpha if alpha is None else alpha},
                     overwrite=overwrite)
  if os.path.exists(output):
    print(f"already there: {output} (checkpoint step {step}, beam {beam})",
          file=sys.stderr)
    return
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
        f"{truncated} truncated at {translator.max_len} subwords"
        + (" (--max-len raises the limit); " if truncated else "; ")
        + translator.unended_note(sum(not h.ended for h in best), len(todo)),
        file=sys.stderr)


def _file_rows(src: str, ref: str, empty_lines: str
               ) -> backtranslation.Rows:
  """The (non-English, English) rows of two line-aligned files, streamed
  afresh at each call; a row with an empty side stops the read
  (`error`) or is left out (`drop`)."""
  def rows() -> Iterator[tuple[str, str]]:
    return readers.iter_parallel(
        [src, ref], empty=empty_lines,
        fix="Remove those rows from both files, or pass --empty-lines drop.")
  return rows


def _inputs(pattern: str, flag: str) -> list[str]:
  if not shards_lib.is_glob(pattern):
    return [pattern]
  found = sorted(p for p in glob.glob(os.path.expanduser(pattern))
                 if os.path.isfile(p))
  if not found:
    raise errors.DataError(f"{flag} {pattern}: matches no file. Check the "
                           f"pattern (relative paths start at {os.getcwd()}).")
  return found


def _count(rows: backtranslation.Rows) -> int:
  return sum(1 for _ in rows())


def _round_robin(rows: backtranslation.Rows, index: int, count: int
                 ) -> backtranslation.Rows:
  return lambda: itertools.islice(rows(), index, None, count)


def _shards(output: str, task: str | None, split: str, src: str | None,
            ref: str | None, empty_lines: str, count: int, processes: int,
            me: int) -> list[backtranslation.Shard]:
  """The output shards of a Task or of --src/--ref files (globs: pair i of
  the sorted matches is input shard i), with the ids of their rows: each
  row's place in the whole input. `count` (0: one per input file pair)
  splits one input row by row (row i to shard i mod count). Rows are
  counted (the first id of a shard) only up to this process's last
  shard, process `me` of `processes` having shards i = me mod processes."""
  if bool(task) == bool(src or ref) or (src and not ref):
    raise errors.ConfigError("give either --task NAME [--split S] or both "
                             "--src FILE and --ref FILE.")
  if task:
    from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
    rows = [(e["source"], e["target"]) for e in tasks.examples(task, split)]
    inputs, name = [lambda: rows], f"{task}:{split}"
    names = [name]
  else:
    sources, references = _inputs(src, "--src"), _inputs(ref, "--ref")
    if len(sources) != len(references):
      raise errors.ConfigError(
          f"--src {src} matches {len(sources)} file(s) but --ref {ref} "
          f"{len(references)}: give one English file per source file.")
    inputs = [_file_rows(s, r, empty_lines)
              for s, r in zip(sources, references)]
    names = sources
  if count and len(inputs) > 1 and count != len(inputs):
    raise errors.ConfigError(
        f"--shards {count} with {len(inputs)} input file pairs: the inputs "
        "are shards already (one output shard each); leave --shards out.")
  count = count or len(inputs)
  paths = shards_lib.output_paths(output, count)
  last = max(range(me, count, processes), default=-1)
  if len(inputs) == 1:
    return [backtranslation.Shard(
        i, count, paths[i], _round_robin(inputs[0], i, count) if count > 1
        else inputs[0], names[0], i, count) for i in range(count)]
  out, first = [], 0
  for i, (rows, name) in enumerate(zip(inputs, names)):
    out.append(backtranslation.Shard(i, count, paths[i], rows, name, first))
    if i < last:
      first += _count(rows)
  return out


def task_split(workdir: str, task: str, split: str | None) -> str:
  """The split of --task to read, once the task is bitext of the NMT
  workdir's language. A data spec of files, tfds:...:SPLIT or NAME:SPLIT
  names its rows itself: --split with it is refused, not ignored."""
  from paraflax.data import corpora  # pylint: disable=g-import-not-at-top
  from paraflax.data import specs  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import workdir as workdir_lib  # pylint: disable=g-import-not-at-top
  if split is not None and (specs.is_spec(task) or ":" in task):
    raise errors.ConfigError(
        f"--task {task} --split {split}: {task} names its rows itself; "
        "leave --split out (or give a catalogued NAME and --split, or "
        "NAME:SPLIT alone).")
  split = split or "train"
  if not (specs.is_spec(task) or task.partition(":")[0] in corpora.CORPORA):
    return split  # a Mixture, backtranslated: or selected: English pairs
  pair = specs.parse_bitext(task, "--task", split).corpus.pair
  from paraflax.data import english_side  # pylint: disable=g-import-not-at-top
  english_side.check(task, "--task")
  lang = workdir_lib.load_config(workdir, "nmt").get("lang")
  if pair and lang and pair != (lang, "en"):
    raise errors.ConfigError(
        f"--task {task} is {'-'.join(pair)} bitext, but {workdir} "
        f"translates {lang}-en: give {lang}-en bitext, or an NMT workdir of "
        f"{pair[0]}-en.")
  return split


def _foreign_shards(output: str, count: int, processes: int, me: int,
                    overwrite: bool) -> None:
  """Shards of another shard count at `output` are refused (a reader of
  the output would find two sets), or removed with --overwrite (each
  process its share of them)."""
  if count == 1 and not shards_lib.is_folder(output):
    return  # a reader of OUT.jsonl reads the file itself
  ours = set(shards_lib.output_paths(output, count))
  foreign = sorted(p for p in glob.glob(shards_lib.any_count(output))
                   if p not in ours and shards_lib.is_shard(p))
  if not foreign:
    return
  if not overwrite:
    raise errors.ConfigError(
        f"{output} holds shards of another shard count "
        f"({os.path.basename(foreign[0])}, ...); this run writes {count}. "
        "Write to a new output, or pass --overwrite to replace them.")
  for path in foreign[me::processes]:
    for extra in (path, files.settings_path(path)):
      with contextlib.suppress(FileNotFoundError):
        os.remove(extra)


def backtranslate(workdir: str, output: str, *, beam: int = 50,
                  nbest: int = 50, alpha: float | None = None,
                  batch_size: int = 16, stop: str = "exact",
                  task: str | None = None, split: str | None = None,
                  src: str | None = None, ref: str | None = None,
                  empty_lines: str = "error", shards: int = 0,
                  window: int = backtranslation.WINDOW,
                  num_devices: int = -1, max_len: int | None = None,
                  overwrite: bool = False, **cluster: Any) -> int:
  """Appends the n-best back-translations of a bitext's non-English side to
  the JSONL `output` (or its shards), resuming a killed run; returns the
  records this process wrote. `cluster`: one of several processes
  (`training.distributed.join`), each decoding its shards (shard i in
  process i mod the process count) over its own devices."""
  backtranslation.check_beam(beam, nbest)
  split = task_split(workdir, task, split) if task else "train"
  if shards < 0:
    raise errors.ConfigError(f"--shards {shards}: give a count >= 1 (or "
                             "leave it out: one shard per input file).")
  from paraflax.training import distributed  # pylint: disable=g-import-not-at-top
  distributed.join(**cluster)
  me, processes = partitioning.process()
  if shards_lib.is_folder(output):
    os.makedirs(output, exist_ok=True)
  plan = _shards(output, task, split, src, ref, empty_lines, shards,
                 processes, me)
  mine = list(range(me, len(plan), processes))
  for shard in plan:
    files.check_output(shard.output)
  _foreign_shards(output, len(plan), processes, me, overwrite)
  # Every row of this process's shards is read (and checked) before the
  # model loads or any output is claimed.
  surveyed = {i: backtranslation.input_digest(plan[i].rows) for i in mine}
  translator, params, step = nmt.load_translator(
      workdir, partitioning.local_mesh(num_devices), max_len)
  alpha = translator.alpha if alpha is None else alpha
  done = [backtranslation.run_shard(
      translator, params, plan[i], beam=beam, nbest=nbest, alpha=alpha,
      batch_size=batch_size, stop=stop, window=window, overwrite=overwrite,
      surveyed=surveyed[i]) for i in mine]
  where = (f"{output}" if len(plan) == 1 else
           f"{len(mine)} of the {len(plan)} shards of {output}")
  if processes > 1:
    where += f" (process {me} of {processes})"
  decoded = sum(d.inputs for d in done)
  print(f"{sum(d.rows for d in done)} inputs, {sum(d.records for d in done)} "
        f"records appended to {where} (checkpoint step {step}, beam {beam}, "
        f"nbest {nbest}, {translator.mesh.size} device(s)); of the "
        f"{decoded} decoded by this run, "
        + translator.unended_note(sum(d.unended for d in done), decoded),
        file=sys.stderr)
  # Every process stays until all are done: jax.distributed's exit waits
  # for the others only for the heartbeat timeout.
  distributed.barrier("backtranslate.done", timeout_s=86_400)
  return sum(d.records for d in done)
