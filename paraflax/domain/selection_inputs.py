"""The inputs of `paraflax select-domain` and their checks: the settings,
the in-domain text, the general bitext (streamed row by row) and, for a
mixed-language general source, its file of one language code per row.
Every check runs before anything is written.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterator

import ml_collections

from paraflax import errors
from paraflax.data import readers

ENGLISH = "en"
MIXED = "mul"
LANGS = "langs"  # the extension of a mixed source's language file
_LANG = re.compile(r"[a-z]{2,3}")


def check_options(config: ml_collections.ConfigDict) -> dict:
  for key in ("order", "bins", "block"):
    if config[key] < 1:
      raise errors.ConfigError(f"--config.{key}={config[key]}: give a "
                               "number >= 1.")
  return {k: config[k] for k in ("order", "bins", "seed", "block", "memory",
                                 "discount_fallback", "min_count",
                                 "random_bins")}


def check_src_lang(src_lang: str) -> None:
  if not _LANG.fullmatch(src_lang) or src_lang == ENGLISH:
    raise errors.ConfigError(
        f"--src-lang {src_lang!r}: give the non-English side's code, two "
        "or three lowercase letters (de, fr, cs; mul for several).")


def _count_in_domain(path: str) -> int:
  count = sum(1 for number, line in enumerate(readers.iter_lines(path), 1)
              if readers.check_sentence(path, number, line).strip())
  if not count:
    raise errors.DataError(
        f"{path}: no sentence (the file is empty or holds only empty "
        "lines); give the in-domain text one sentence per line.")
  return count


def general_pairs(src: str, tgt: str) -> Iterator[tuple[str, str]]:
  """The general bitext row by row (`readers.iter_parallel`): files of
  different lengths (both counts named), an empty side or a tab on a first
  line stop with the line to fix."""
  rows = readers.iter_parallel(
      (src, tgt), empty="error",
      fix="Remove that row from both files of the general bitext.")
  for number, (x, e) in enumerate(rows, start=1):
    if number == 1:
      readers.check_sentence(src, number, x)
      readers.check_sentence(tgt, number, e)
    yield x, e


def langs_file(src: str, src_lang: str, langs: str | None) -> str | None:
  """The language file of the general source: `langs`, else for a `mul`
  source the `.langs` file beside it; None for one language."""
  if langs is None and src_lang == MIXED:
    langs = f"{os.path.splitext(src)[0]}.{LANGS}"
    if not os.path.isfile(langs):
      raise errors.DataError(
          f"--src-lang {MIXED}: {langs} not found; give the language of "
          f"each line of {src} with --general-langs FILE (one code per "
          "line, as `paraflax domain-data` writes general.langs).")
  return langs


def _check_langs(path: str, general: int) -> None:
  count = 0
  for count, code in enumerate(readers.iter_lines(path), start=1):
    if not _LANG.fullmatch(code) or code == ENGLISH:
      raise errors.DataError(
          f"{path}:{count}: {code!r} is not a language code; give the "
          "non-English language of each general pair, two or three "
          "lowercase letters (de, fr, cs) a line.")
  if count != general:
    raise errors.DataError(
        f"{path} has {count} lines but the general bitext has {general}: "
        "give one language code per general pair, in the same order.")


def check_inputs(in_domain: str, src: str, tgt: str, bins: int,
                 langs: str | None) -> tuple[int, int]:
  """(in-domain sentences, general pairs), after the checks of the
  inputs; nothing is written before."""
  sample = _count_in_domain(in_domain)
  general = sum(1 for _ in general_pairs(src, tgt))
  if langs is not None:
    _check_langs(langs, general)
  left = general - sample
  if left < bins:
    raise errors.DataError(
        f"{tgt}: {general} general sentences; {sample} of them train the "
        f"general LM (as many as {in_domain} holds), which leaves {left} to "
        f"share among {bins} bins: more bins than sentences. Give fewer "
        "bins (--bins) or a larger general corpus.")
  return sample, general
