"""`paraflax tasks`: the registered Tasks and Mixtures of the catalogue
(`corpora.py`), the bins of a `select-domain` folder, or what each data
spec (`specs.py`) names."""
from __future__ import annotations

import os

from paraflax.data import corpora
from paraflax.data import specs


# Specs of files paraflax wrote (English pairs), read as their Tasks.
_TASK_FILES = ("backtranslated:", "selected:")


def _print_task_file(spec: str) -> None:
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  first = next(tasks.iter_examples(spec, "train", chunk=3), [])
  print(f"{spec}\n  Task {tasks.resolve(spec, 'train')[0]}")
  for example in first:
    print("    " + " ||| ".join(str(v) for v in example.values()))


def _print_specs(data: list[str]) -> None:
  for spec in data:
    if spec.startswith(_TASK_FILES):
      _print_task_file(spec)
      continue
    named = specs.parse(spec)
    split = named.corpus.splits[named.split]
    rows = corpora.read(named.corpus, named.split)
    pairs = list(zip(*rows.values()))
    print(f"{spec}\n  Task {named.corpus.name}: {', '.join(named.corpus.features)}"
          f" | {len(pairs)} rows from {len(split.parts)} part(s)")
    for part in split.parts:
      print(f"    {part}")
    for pair in pairs[:3]:
      print("    " + " ||| ".join(pair))


def print_catalogue(select_dir: str | None = None,
                    data: list[str] | None = None) -> None:
  """`paraflax tasks`: one line per registered Task or Mixture; with
  `select_dir`, the Tasks of its bins; with `data`, what each data spec
  names (read, so a bad line shows here)."""
  if data:
    _print_specs(data)
    return
  listed = corpora.catalogue()
  bins = corpora.selected_bins(select_dir) if select_dir else {}
  for number, (src, _) in bins.items():
    listed[f"selected:{os.path.abspath(select_dir)}:{number}"] = (
        f"{', '.join(corpora.BITEXT)} | splits: train | bin {number} "
        f"({os.path.basename(src)} and .en)")
  for name, summary in listed.items():
    print(f"{name:<40} {summary}")
  print("\nData specs, wherever a Task is named (docs/your-data.md):")
  for form, what in specs.FORMS:
    print(f"  {form:<38} {what}")
