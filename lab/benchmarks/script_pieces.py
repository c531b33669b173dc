"""How many subword pieces a script's characters take: for each source
side of the WMT22 general test sets named, its sentences, its distinct
characters as sentencepiece counts them (NFKC, whitespace as one piece)
and the pieces `paraflax train` requires of the vocabulary before
sentencepiece trains (sentencepiece_vocab.check_size: the characters that
cover vocab.character_coverage of the text, at 1.0 and at sentencepiece's
0.9995 for Japanese and Chinese, plus the special pieces), against the
tiny preset's vocab.size. No timing: the counts are the same anywhere.

    git clone https://github.com/wmt-conference/wmt22-news-systems WMT22
    git -C WMT22 checkout 20240a2e96a50e823ea8cdf37fd8af52547146e3
    python lab/benchmarks/script_pieces.py --wmt22 WMT22 \
        --pairs zh-en ja-en ru-en --output lab/results/script_pieces.wmt22.json

Each file's sha256 and the checkout's commit go in the result
(children.write_result: the command, commit, hardware and load);
docs/your-data.md quotes it.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import children  # pylint: disable=wrong-import-position

# The tiny preset's pieces a side (configs/pipeline.py, vocab.size).
TINY_SIZE = 2000


def source_path(wmt22: str, pair: str) -> str:
  """The source side of the general test set of `pair` ("zh-en")."""
  return os.path.join(wmt22, "txt", "sources",
                      f"generaltest2022.{pair}.src.{pair.split('-')[0]}")


def count(path: str, size: int) -> dict:
  """One file's sentences, characters and required pieces."""
  from paraflax.data import sentencepiece_vocab as spv  # pylint: disable=g-import-not-at-top
  with open(path, "rb") as f:
    raw = f.read()
  lines = raw.decode("utf-8").splitlines()
  counts = spv.char_counts(lines)
  required = {str(c): spv.required_chars(counts, c) + spv.SPECIAL_PIECES
              for c in (1.0, spv.CJK_COVERAGE)}
  return {"file": os.path.basename(path),
          "sha256": hashlib.sha256(raw).hexdigest(), "sentences": len(lines),
          "distinct_characters": len(counts), "pieces_required": required,
          "fits": {c: n <= size for c, n in required.items()}}


def checkout_commit(folder: str) -> str | None:
  done = subprocess.run(["git", "-C", folder, "rev-parse", "HEAD"],
                        capture_output=True, text=True, check=False)
  return done.stdout.strip() if done.returncode == 0 else None


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--wmt22", required=True,
                      help="a checkout of wmt-conference/wmt22-news-systems")
  parser.add_argument("--pairs", nargs="+", required=True,
                      help="test sets by pair, source first (zh-en ja-en)")
  parser.add_argument("--size", type=int, default=TINY_SIZE,
                      help=f"the vocab.size to check (default {TINY_SIZE}, "
                      "the tiny preset's)")
  parser.add_argument("--output", required=True, help="the JSON to write")
  args = parser.parse_args(argv)
  paths = {pair: source_path(args.wmt22, pair) for pair in args.pairs}
  for pair, path in paths.items():  # every input before any work
    if not os.path.isfile(path):
      parser.error(f"{path}: no source side of {pair}; --wmt22 is a "
                   "checkout of wmt-conference/wmt22-news-systems")
  rows = {pair: count(path, args.size) for pair, path in paths.items()}
  children.write_result(args.output, {
      **children.run_facts(__file__, argv), "size": args.size,
      "wmt22_commit": checkout_commit(args.wmt22), "sets": rows})
  for pair, r in rows.items():
    print(f"{pair}: {r['sentences']:,} sentences, "
          f"{r['distinct_characters']:,} characters, "
          f"{r['pieces_required']['1.0']:,} pieces required")


if __name__ == "__main__":
  main()
