"""Noise injected into a clean bitext, of the kinds Khayrallah & Koehn
(2018, "On the Impact of Various Types of Noise on Neural Machine
Translation") study, so that a filter can be judged by what it removes and
by the NMT its selection trains.

Each kind replaces a share of the lines (`rates`, of all output lines; the
kinds take disjoint lines, drawn by `seed`; the rest stay clean):

  misaligned     the target of another line of the corpus
  untranslated   the source copied to the target side
  wrong_language the target replaced by a sentence of a third language
                 (French: the Multi30k fr side, by default)
  short          both sides cut to their first 1 or 2 words
  misordered     the target's words shuffled

The same bitext, rates and seed give the same lines, byte for byte.
"""
from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence

import numpy as np

from paraflax import errors
from paraflax import files

KINDS = ("misaligned", "untranslated", "wrong_language", "short",
         "misordered")
CLEAN = "clean"
# The rates of `paraflax noise-bitext` unless given: 10 % of the lines of
# each kind, half the corpus noisy (Khayrallah & Koehn add each kind at
# 5 % to 100 % of the clean data, one kind at a time).
RATES = {kind: 0.1 for kind in KINDS}


@dataclasses.dataclass(frozen=True)
class Noisy:
  source: list[str]
  target: list[str]
  label: list[str]  # CLEAN or the kind of noise, per line


def check_rates(rates: Mapping[str, float]) -> dict[str, float]:
  unknown = sorted(set(rates) - set(KINDS))
  if unknown:
    raise errors.ConfigError(f"unknown noise {', '.join(unknown)}; use "
                             f"{', '.join(KINDS)}.")
  bad = [k for k, r in rates.items() if not 0 <= r <= 1]
  if bad or sum(rates.values()) > 1:
    raise errors.ConfigError(
        f"noise rates {dict(rates)}: each in [0, 1], together at most 1 "
        "(they are shares of the output's lines).")
  return {kind: float(rates.get(kind, 0.0)) for kind in KINDS}


def inject(source: Sequence[str], target: Sequence[str],
           rates: Mapping[str, float], *, seed: int = 0,
           third: Sequence[str] = ()) -> Noisy:
  """The bitext with round(rate * N) lines of each kind made noisy."""
  if len(source) != len(target):
    raise errors.DataError(f"{len(source)} source but {len(target)} target "
                           "lines; a bitext has one of each per line.")
  rates = check_rates(rates)
  if rates["wrong_language"] and not third:
    raise errors.ConfigError("wrong_language noise needs sentences of a "
                             "third language (third=...).")
  n = len(source)
  rng = np.random.default_rng(seed)
  order = rng.permutation(n)
  src, tgt, label = list(source), list(target), [CLEAN] * n
  start = 0
  for kind in KINDS:
    rows = np.sort(order[start:start + round(rates[kind] * n)])
    start += len(rows)
    if kind == "misaligned" and len(rows):
      # Another line's target: a shift by a random offset, never 0.
      other = (rows + rng.integers(1, n, len(rows))) % n
      for i, j in zip(rows, other):
        tgt[i] = target[j]
    elif kind == "wrong_language":
      picks = rng.integers(0, len(third), len(rows)) if len(rows) else []
      for i, j in zip(rows, picks):
        tgt[i] = third[j]
    for i in rows:
      if kind == "untranslated":
        tgt[i] = source[i]
      elif kind == "short":
        keep = int(rng.integers(1, 3))
        src[i] = " ".join(source[i].split()[:keep])
        tgt[i] = " ".join(target[i].split()[:keep])
      elif kind == "misordered":
        words = target[i].split()
        tgt[i] = " ".join(words[k] for k in rng.permutation(len(words)))
      label[i] = kind
  return Noisy(src, tgt, label)


def _field(text: str) -> str:
  """A sentence as one TSV field: a tab or line break inside it (Multi30k's
  train set holds a tab) becomes a space, so that every line reads back as
  two fields."""
  return " ".join(text.replace("\t", " ").splitlines())


def write(noisy: Noisy, output: str, info: Mapping) -> None:
  """OUTPUT (source<TAB>target), OUTPUT.labels (a kind per line) and
  OUTPUT.json (`info`, with the count of every kind)."""
  counts = {k: noisy.label.count(k) for k in (CLEAN,) + KINDS}
  files.write_text_atomic(output, "".join(
      f"{_field(s)}\t{_field(t)}\n"
      for s, t in zip(noisy.source, noisy.target)))
  files.write_text_atomic(output + ".labels", "\n".join(noisy.label) + "\n")
  files.write_text_atomic(output + ".json", json.dumps(
      {**info, "lines": len(noisy.label), "counts": counts}, indent=2) + "\n")


CORPORA = ("bitext_newstest_pool_de_en", "bitext_opennmt_wmt_de_en")
THIRD = "bitext_multi30k_fr_en"


def parse_rates(specs: Sequence[str]) -> dict[str, float]:
  """["kind=rate", ...] as {kind: rate}; none given: RATES."""
  if not specs:
    return dict(RATES)
  rates = {}
  for spec in specs:
    kind, sep, value = spec.partition("=")
    try:
      rates[kind] = float(value) if sep else None
    except ValueError:
      rates[kind] = None
    if rates[kind] is None:
      raise errors.ConfigError(f"--rate {spec!r}: give KIND=RATE, e.g. "
                               "misaligned=0.1.")
  return check_rates(rates)


def noise_bitext(output: str, corpus: Sequence[str] = CORPORA,
                 third: str = THIRD, seed: int = 0,
                 rate: Sequence[str] = (), overwrite: bool = False) -> dict:
  """`paraflax noise-bitext`: the train splits of `corpus`, concatenated,
  with the noise of `rate` (KIND=RATE each; none: RATES), written as
  `write` says; claimed with these settings (`OUTPUT.meta.json`), so a
  rerun finds it written and other settings are refused unless
  `overwrite`."""
  from paraflax.data import corpora as corpora_lib  # pylint: disable=g-import-not-at-top
  from paraflax.data import specs  # pylint: disable=g-import-not-at-top
  rates = parse_rates(rate)
  corpora = list(corpus)
  # Named before anything is claimed: an unknown name or a monolingual
  # corpus stops with a message, not a KeyError after the claim.
  named = [specs.parse_bitext(name, "--corpus") for name in corpora]
  third_named = specs.parse_bitext(third, "--third")
  files.check_output(output)
  info = {"corpora": list(corpora), "third": third, "seed": seed,
          "rates": rates}
  written = (output, output + ".labels", output + ".json")
  files.claim_output(output, info, overwrite=overwrite,
                     leftovers=written[1:])
  if all(os.path.exists(p) for p in written):
    print(f"already there: {output}")
    return info
  source, target = [], []
  for data in named:
    columns = corpora_lib.read(data.corpus, data.split)
    source += columns["source"]
    target += columns["target"]
  french = corpora_lib.read(third_named.corpus, third_named.split)["source"]
  noisy = inject(source, target, rates, seed=seed, third=french)
  write(noisy, output, info)
  print(f"wrote {output} ({len(source)} lines; "
        + ", ".join(f"{k} {noisy.label.count(k)}" for k in KINDS) + ")")
  return info
