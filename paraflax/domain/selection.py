"""Moore-Lewis cross-entropy-difference selection (Moore & Lewis 2010).

An in-domain LM on the in-domain text and a general LM on a random sample of
the general English side of as many sentences: both `order`-gram modified
Kneser-Ney LMs of `filtering.lm`, with one closed vocabulary, the tokens
seen `min_count` times in the in-domain text, any other token read as
`lm.OOV` (Moore & Lewis 2010; `min_count` 0: KenLM's open vocabulary). Every
general sentence s gets H_in(s) and H_out(s), bits per token with </s>
counted (KenLM's perplexity is 2 ** H), and diffCE(s) = H_in(s) - H_out(s),
lower = closer to the domain. The sentences outside the sample are ranked
by (diffCE, line) and cut into `bins` bins whose sizes differ by at most
one, bin 1 the most in-domain.

The general corpus is streamed, never held: memory is flat in its size.
Ranks come from runs of sortable diffCE keys on disk (each run sorted) and a
bisection over them (`binning`), so no array of the whole corpus is ever in
memory. The inputs are checked before anything is written
(`selection_inputs`).

The output folder: `in_domain.lm`, `general.lm`, `vocab.txt` (their
vocabulary, one token per line) and `lm_sample.en` (the general LM's
sentences); `scores.tsv` (a header, then one row per general
sentence in input order: 1-based line, H_in, H_out, diffCE, bin; bin 0 for
the LM's sample); `bin_<i>.<src-lang>` and `bin_<i>.en`, line-aligned, in
input order; with `random_bins`, `random_<i>.<lang>` too: the same
selectable sentences in a random order of the seed, cut into bins of the
same sizes, the same-size control of each diffCE bin (Task
`selected:FOLDER:r<i>`); `summary.json` and `summary.md`. A killed run
resumes: the LMs
are written whole, scores in blocks (`files.finished_prefix`), the bins and
the table at once (atomically). `summary.json` is written last.

A mixed-language general source (`--src-lang mul`, `general.mul` of
`paraflax domain-data`) comes with a file of one language code per line,
`--general-langs`, by default the `.langs` file beside the source
(`general.langs`); each bin then also gets `bin_<i>.langs`, aligned with
its pairs, so `paraflax pivot` pivots a bin through each of its languages.
"""
from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import sys
from collections.abc import Callable, Iterator

import ml_collections
import numpy as np

from paraflax import faults
from paraflax import files
from paraflax.data import readers
from paraflax.domain import binning
from paraflax.domain import selection_inputs
from paraflax.filtering import lm

LOG2_10 = math.log2(10.0)
HEADER = "line\tH_in\tH_out\tdiffCE\tbin\n"
SUMMARY = "summary.json"
VOCABULARY = "vocab.txt"
_PART = ".scores.part"  # scores without bins, appended block by block
_RUNS = ".runs.u64"  # sortable diffCE keys of the selectable lines
_RANDOM_RUNS = ".random.u64"  # their random-order keys
RANDOM = "r"  # the bin number prefix of the random control bins


def cross_entropy(model, text: str,
                  vocabulary: frozenset[str] | None = None) -> float:
  """Bits per token of `text` under a `kenlm.Model`, </s> counted as a
  token and <s> as context: log2 of KenLM's `Model.perplexity`."""
  tokens = lm.sentence(text, vocabulary)
  return (-model.score(tokens, bos=True, eos=True) * LOG2_10
          / (len(tokens.split()) + 1))


def read_vocabulary(folder: str) -> frozenset[str] | None:
  """The closed vocabulary of a selection's LMs; None: open."""
  path = os.path.join(folder, VOCABULARY)
  if not os.path.exists(path):
    return None
  with open(path, encoding="utf-8") as f:
    return frozenset(f.read().split("\n")[:-1])


def _write_vocabulary(in_domain: str, folder: str, min_count: int
                      ) -> frozenset[str] | None:
  if min_count < 1:
    return None
  path = os.path.join(folder, VOCABULARY)
  if not os.path.exists(path):
    tokens = sorted(lm.vocabulary(in_domain, min_count))
    files.write_text_atomic(path, "".join(t + "\n" for t in tokens))
  return read_vocabulary(folder)


def sample_lines(general: int, size: int, seed: int) -> np.ndarray:
  """The 0-based lines of the general LM's sample, ascending."""
  rng = np.random.default_rng(seed)
  return np.sort(rng.choice(general, size=size, replace=False))


def _write_sample(tgt: str, sample: np.ndarray, path: str) -> None:
  wanted = set(sample.tolist())
  with files.atomic_output(path, "w") as f:
    for i, line in enumerate(readers.iter_lines(tgt)):
      if i in wanted:
        f.write(line + "\n")


def _sizes(total: int, block: int) -> list[int]:
  return [min(block, total - a) for a in range(0, total, block)]


def _score(folder: str, tgt: str, general: int, block: int,
           vocabulary: frozenset[str] | None) -> None:
  """Appends `line, H_in, H_out, diffCE` of each general sentence to the
  part file, a block per write; resumes after the last whole block."""
  part = os.path.join(folder, _PART)
  sizes = _sizes(general, block)
  done = files.finished_prefix(part, sizes, unit="block")
  if done == len(sizes):
    return
  inside = lm.load(os.path.join(folder, "in_domain.lm"))
  outside = lm.load(os.path.join(folder, "general.lm"))
  lines = itertools.islice(readers.iter_lines(tgt), done * block, None)
  with open(part, "a", encoding="utf-8") as f:
    for b in range(done, len(sizes)):
      rows = []
      for i, text in enumerate(itertools.islice(lines, sizes[b]),
                               start=b * block + 1):
        h_in = cross_entropy(inside, text, vocabulary)
        h_out = cross_entropy(outside, text, vocabulary)
        rows.append(f"{i}\t{h_in:.6f}\t{h_out:.6f}\t{h_in - h_out:.6f}\n")
      f.write("".join(rows))
      f.flush()
      os.fsync(f.fileno())
      faults.moment("select.scored")
      print(f"select-domain: scored {b * block + sizes[b]:,} of "
            f"{general:,} sentences", file=sys.stderr)


def _part_blocks(folder: str, general: int, block: int
                 ) -> Iterator[tuple[list[str], np.ndarray]]:
  """The part file's rows a block at a time, with their diffCE."""
  with open(os.path.join(folder, _PART), encoding="utf-8") as f:
    for size in _sizes(general, block):
      rows = [line.rstrip("\n") for line in itertools.islice(f, size)]
      yield rows, np.array([float(r.rsplit("\t", 1)[1]) for r in rows])


# A binning orders the selectable lines by a key from (0-based lines,
# diffCE) and cuts them into equal bins: by diffCE, or by a random key.
KeyOf = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _binnings(options: dict) -> list[tuple[str, str, str, KeyOf]]:
  """(file prefix, bin number prefix, runs file, key) of each binning."""
  by_diff = ("bin", "", _RUNS, lambda lines, diff: binning.sortable(diff))
  if not options["random_bins"]:
    return [by_diff]
  return [by_diff, ("random", RANDOM, _RANDOM_RUNS,
                    lambda lines, diff: binning.random_keys(
                        lines, options["seed"]))]


def _selectable(folder: str, general: int, block: int, sample: np.ndarray
                ) -> Iterator[tuple[list[str], np.ndarray, np.ndarray,
                                    np.ndarray]]:
  """Per block of the part file: its rows, their 0-based lines, diffCE,
  and which of them are selectable (outside the general LM's sample)."""
  for start, (rows, diff) in zip(itertools.count(0, block),
                                 _part_blocks(folder, general, block)):
    lines = np.arange(start, start + len(diff))
    yield rows, lines, diff, ~np.isin(lines, sample)


def _write_runs(folder: str, general: int, block: int, sample: np.ndarray,
                name: str, key_of: KeyOf) -> None:
  """The keys of the selectable sentences, in line order, each run of
  `block` keys sorted."""
  path = os.path.join(folder, name)
  if os.path.exists(path):
    return
  with files.atomic_output(path) as f:
    pending = np.zeros(0, np.uint64)
    for _, lines, diff, keep in _selectable(folder, general, block, sample):
      pending = np.concatenate([pending, key_of(lines[keep], diff[keep])])
      while len(pending) >= block:
        f.write(np.sort(pending[:block]).tobytes())
        pending = pending[block:]
    f.write(np.sort(pending).tobytes())


def _write_bins(folder: str, src: str, tgt: str, src_lang: str,
                langs: str | None, general: int, sample: np.ndarray,
                options: dict) -> dict[str, list[dict]]:
  """scores.tsv and every binning's bitext (and languages) in one pass;
  returns each bin's number, size and diffCE range, per binning."""
  block, bins = options["block"], options["bins"]
  binnings = _binnings(options)
  keys = [np.memmap(os.path.join(folder, runs), np.uint64, mode="r")
          for _, _, runs, _ in binnings]
  binners = [binning.Binner(k, block, binning.bin_starts(len(k), bins))
             for k in keys]
  stats = [[{"bin": f"{number}{i}" if number else i, "size": 0,
             "diffCE_min": math.inf, "diffCE_max": -math.inf,
             "diffCE_sum": 0.0} for i in range(1, bins + 1)]
           for _, number, _, _ in binnings]
  pairs = selection_inputs.general_pairs(src, tgt)
  codes = readers.iter_lines(langs) if langs else itertools.repeat(None)
  sides = ((src_lang, selection_inputs.ENGLISH)
           + ((selection_inputs.LANGS,) if langs else ()))
  with contextlib.ExitStack() as stack:
    table = stack.enter_context(files.atomic_output(
        os.path.join(folder, "scores.tsv"), "w"))
    outs = [[[stack.enter_context(files.atomic_output(
        os.path.join(folder, f"{prefix}_{i}.{lang}"), "w"))
              for lang in sides] for i in range(1, bins + 1)]
            for prefix, _, _, _ in binnings]
    table.write(HEADER)
    for rows, lines, diff, keep in _selectable(folder, general, block,
                                               sample):
      bin_of = np.zeros((len(binnings), len(diff)), np.int64)
      for b, ((_, _, _, key_of), binner) in enumerate(zip(binnings,
                                                          binners)):
        bin_of[b, keep] = binner(key_of(lines[keep], diff[keep]))
      table.write("".join(f"{r}\t{b}\n" for r, b in zip(rows, bin_of[0])))
      for column, d, row in zip(bin_of.T.tolist(), diff.tolist(), zip(
          itertools.islice(pairs, len(rows)), itertools.islice(codes,
                                                                len(rows)))):
        for b, i in enumerate(column):
          if i:
            for out, text in zip(outs[b][i - 1], (*row[0], row[1])):
              out.write(text + "\n")
            _count(stats[b][i - 1], d)
    faults.moment("select.binned")
  for s in itertools.chain.from_iterable(stats):
    s["diffCE_mean"] = round(s.pop("diffCE_sum") / s["size"], 6)
  return {prefix: found for (prefix, _, _, _), found in zip(binnings, stats)}


def _count(stats: dict, diff: float) -> None:
  stats["size"] += 1
  stats["diffCE_sum"] += diff
  stats["diffCE_min"] = min(stats["diffCE_min"], diff)
  stats["diffCE_max"] = max(stats["diffCE_max"], diff)


def _bin_rows(stats: list[dict]) -> str:
  return "\n".join(
      f"| {s['bin']} | {s['size']} | {s['diffCE_min']:.3f} | "
      f"{s['diffCE_mean']:.3f} | {s['diffCE_max']:.3f} |" for s in stats)


def _summary_md(summary: dict) -> str:
  controls = summary.get("random_bins")
  return (f"# Moore-Lewis selection\n\nIn-domain: `{summary['in_domain']}` "
          f"({summary['in_domain_sentences']} sentences). General: "
          f"`{summary['general_src']}` / `{summary['general_tgt']}` "
          f"({summary['general_sentences']} pairs; "
          f"{summary['lm_sample']} of them train the general LM, bin 0). "
          f"{summary['settings']['order']}-gram LMs; diffCE = H_in - H_out in bits per "
          "token, lower = closer to the domain."
          + (" Bins r1, r2, ...: the same sentences in a random order, "
             "the same-size controls." if controls else "")
          + "\n\n| bin | pairs | diffCE min | mean | max |\n"
          f"|---|---|---|---|---|\n{_bin_rows(summary['bins'])}\n"
          + (f"{_bin_rows(controls)}\n" if controls else ""))


def _remove_parts(folder: str) -> None:
  for name in (_PART, _RUNS, _RANDOM_RUNS):
    with contextlib.suppress(FileNotFoundError):
      os.remove(os.path.join(folder, name))


def select_domain(in_domain: str, general_src: str, general_tgt: str,
                  src_lang: str, output: str,
                  config: ml_collections.ConfigDict,
                  overwrite: bool = False,
                  general_langs: str | None = None) -> dict:
  """`paraflax select-domain`: see the module docstring. Returns the
  summary (also `output/summary.json`)."""
  options = selection_inputs.check_options(config)
  selection_inputs.check_src_lang(src_lang)
  langs = selection_inputs.langs_file(general_src, src_lang, general_langs)
  sample_size, general = selection_inputs.check_inputs(
      in_domain, general_src, general_tgt, options["bins"], langs)
  settings = {"in_domain": lm.sha256(in_domain),
              "general_src": lm.sha256(general_src),
              "general_tgt": lm.sha256(general_tgt), "src_lang": src_lang,
              **{k: v for k, v in options.items() if k != "memory"}}
  if langs:
    settings["general_langs"] = lm.sha256(langs)
  files.claim_output(output, settings, overwrite=overwrite)
  done = os.path.join(output, SUMMARY)
  if os.path.exists(done):
    _remove_parts(output)  # a run killed after its summary leaves them
    print(f"{output}: already written by this command; nothing to do",
          file=sys.stderr)
    with open(done, encoding="utf-8") as f:
      return json.load(f)
  os.makedirs(output, exist_ok=True)
  sample = sample_lines(general, sample_size, options["seed"])
  lm_sample = os.path.join(output, "lm_sample.en")
  if not os.path.exists(lm_sample):
    _write_sample(general_tgt, sample, lm_sample)
  vocabulary = _write_vocabulary(in_domain, output, options["min_count"])
  train = {k: options[k] for k in ("order", "memory", "discount_fallback")}
  lm.train_lm(in_domain, os.path.join(output, "in_domain.lm"),
              vocabulary=vocabulary, **train)
  lm.train_lm(lm_sample, os.path.join(output, "general.lm"),
              vocabulary=vocabulary, **train)
  _score(output, general_tgt, general, options["block"], vocabulary)
  for _, _, runs, key_of in _binnings(options):
    _write_runs(output, general, options["block"], sample, runs, key_of)
  stats = _write_bins(output, general_src, general_tgt, src_lang, langs,
                      general, sample, options)
  summary = {"in_domain": os.path.abspath(in_domain),
             "general_src": os.path.abspath(general_src),
             "general_tgt": os.path.abspath(general_tgt),
             "src_lang": src_lang,
             "general_langs": langs and os.path.abspath(langs),
             "in_domain_sentences": sample_size,
             "general_sentences": general, "lm_sample": sample_size,
             "selectable": general - sample_size, "settings": options,
             "bins": stats["bin"], "random_bins": stats.get("random", []),
             "tasks": [f"selected:{os.path.abspath(output)}:{s['bin']}"
                       for found in stats.values() for s in found]}
  files.write_text_atomic(os.path.join(output, "summary.md"),
                          _summary_md(summary))
  files.write_text_atomic(done, json.dumps(summary, indent=2) + "\n")
  _remove_parts(output)
  print(_summary_md(summary))
  return summary
