r"""Throughput of pivot paraphrase extraction and of MonoDS signatures.

  align    eflomal in both directions + grow-diag-final-and on the first
           --pairs pairs of multi30k train de-en: sentence pairs/s;
  extract  Koehn phrase extraction (max 4 words a side) of those aligned
           pairs: phrase pairs/s;
  lsh      `paraflax.domain.lsh` signature updates (events/s) of every
           context event of the Brown corpus for its words seen twice or
           more and their bigrams (`--bits` bits), on each of `--devices`
           simulated CPU devices; the host's event extraction apart.
  table    with --table-parts DIR (a `paraflax pivot` TABLE.parts folder):
           the table step alone (`pivot_table.write_table`) on those parts,
           and on N copies of them for each N of --copies, copy k's
           phrases renamed (a suffix) so that the phrases, the counts and
           the table all grow N times: seconds, lines and peak memory.
Each part runs in its own child process (its device count is fixed when
jax starts) and reports its peak memory.

Command (writes lab/results/pivot_throughput.json by children.write_result,
with the run's command, commit, hardware, load and seconds):
  .venv/bin/python lab/benchmarks/pivot_throughput.py --pairs 5000 \
      --bits 256 --devices 1 8
  .venv/bin/python lab/benchmarks/pivot_throughput.py --table-parts \
      runs/pivot/top.txt.parts --copies 1 4 \
      --output lab/results/pivot_throughput.table.HW.json
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import tempfile
import time

import children  # lab/benchmarks/children.py, beside this script
from paraflax import files

_DEFAULT_OUTPUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                               "results", "pivot_throughput.json")


def _align_child(pairs: int) -> dict:
  from paraflax.data import corpora, words  # pylint: disable=g-import-not-at-top
  from paraflax.domain import alignment, phrases  # pylint: disable=g-import-not-at-top
  columns = corpora.read(corpora.get("bitext_multi30k_de_en"), "train")
  f = [words.tokenize(s) for s in columns["source"][:pairs]]
  e = [words.tokenize(s) for s in columns["target"][:pairs]]
  start = time.perf_counter()
  links = alignment.align(f, e)
  align_s = time.perf_counter() - start
  counts = phrases.PhraseCounts()
  start = time.perf_counter()
  extracted = sum(counts.add(ew, fw, a, 4) for ew, fw, a in zip(e, f, links))
  extract_s = time.perf_counter() - start
  return {"pairs": pairs, "align_s": align_s,
          "pairs_per_s": pairs / align_s, "phrase_pairs": extracted,
          "extract_s": extract_s, "phrase_pairs_per_s": extracted / extract_s,
          "peak_rss_mib": children.peak_rss_mib(),
          # eflomal runs as a child process of its own.
          "eflomal_peak_rss_mib": resource.getrusage(
              resource.RUSAGE_CHILDREN).ru_maxrss / 1024}


def _lsh_child(bits: int) -> dict:
  import numpy as np  # pylint: disable=g-import-not-at-top
  from paraflax.data import corpora, words  # pylint: disable=g-import-not-at-top
  from paraflax.domain import lsh, monods  # pylint: disable=g-import-not-at-top
  from paraflax.training import partitioning  # pylint: disable=g-import-not-at-top
  text = corpora.read(corpora.get("mono_en_brown"), "train")["text"]
  unigrams = collections.Counter(t for s in text for t in words.tokenize(s))
  kept = {w for w, c in unigrams.items() if c >= 2}
  bigrams = {f"{a} {b}" for s in text for a, b in zip(
      words.tokenize(s), words.tokenize(s)[1:]) if a in kept and b in kept}
  phrase_ids = {p: i for i, p in enumerate(sorted(kept | bigrams))}
  start = time.perf_counter()
  batches = list(monods.context_events(iter(text), phrase_ids, 2))
  host_s = time.perf_counter() - start
  events = sum(len(i) for i, _ in batches)
  mesh = partitioning.make_mesh(-1)
  hashing = lsh.make_hashing(bits, 16, 8192, seed=0)
  warm = lsh.Signatures(len(phrase_ids), hashing, mesh)
  warm.add(*batches[0])  # compiles
  warm.packed()
  sigs = lsh.Signatures(len(phrase_ids), hashing, mesh)
  start = time.perf_counter()
  for ids, feats in batches:
    sigs.add(ids, feats)
  packed = sigs.packed()
  device_s = time.perf_counter() - start
  return {"devices": mesh.size, "bits": bits, "phrases": len(phrase_ids),
          "sentences": len(text), "events": events, "host_s": host_s,
          "host_events_per_s": events / host_s, "device_s": device_s,
          "updates_per_s": events / device_s,
          "signature_digest": int(np.bitwise_xor.reduce(
              packed.view(np.uint8).ravel().astype(np.int64)
              * np.arange(1, packed.size + 1)) % 2**31),
          "peak_rss_mib": children.peak_rss_mib()}


def _copy_parts(parts: str, copies: int, folder: str) -> dict[str, list[str]]:
  """The blocks of `parts`, `copies` times, copy k's phrases suffixed
  with `~k` (k > 0): new phrases, the same counts."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  by_lang: dict[str, list[str]] = {}
  for name in sorted(os.listdir(parts)):
    for k in range(copies):
      with np.load(os.path.join(parts, name)) as z:
        block = dict(z)
      for side in ("english", "foreign"):
        text = str(block[side])
        block[side] = (text.replace("\n", f"~{k}\n") + f"~{k}"
                       if k and text else text)
      path = os.path.join(folder, f"{k}-{name}")
      np.savez(path, **block)
      by_lang.setdefault(name.split("-")[0], []).append(path)
  return by_lang


def _table_child(folder: str) -> dict:
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  from paraflax.domain import pivot_table  # pylint: disable=g-import-not-at-top
  with open(os.path.join(folder, "blocks.json"), encoding="utf-8") as f:
    by_lang = json.load(f)
  config = config_lib.load(os.path.join(
      os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
      "configs", "domain_pivot.py"), [])
  start = time.perf_counter()
  summary = pivot_table.write_table(
      by_lang, os.path.join(folder, "table.txt"), config.pivot)
  seconds = time.perf_counter() - start
  phrase_pairs = sum(l["phrase_pairs"] for l in summary["languages"].values())
  return {"blocks": sum(len(v) for v in by_lang.values()),
          "phrase_pairs": phrase_pairs,
          "english_phrases": summary["english_phrases"],
          "lines": summary["lines"], "seconds": seconds,
          "phrase_pairs_per_s": phrase_pairs / seconds,
          "table_bytes": os.path.getsize(os.path.join(folder, "table.txt")),
          "peak_rss_mib": children.peak_rss_mib()}


def _tables(parts: str, copies: list[int]) -> list[dict]:
  found = []
  for n in copies:
    with tempfile.TemporaryDirectory(prefix="pivot-table-") as folder:
      by_lang = _copy_parts(parts, n, folder)
      files.write_text_atomic(os.path.join(folder, "blocks.json"),
                              json.dumps(by_lang))
      found.append({"copies": n, **children.run_child(
          [os.path.abspath(__file__), "--child", "table", "--folder",
           folder], 1)})
  return found


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--pairs", type=int, default=5000)
  parser.add_argument("--bits", type=int, default=256)
  parser.add_argument("--devices", type=int, nargs="+", default=[1, 8])
  parser.add_argument("--output", default=_DEFAULT_OUTPUT)
  parser.add_argument("--table-parts", help="benchmark only the table "
                      "step, on this TABLE.parts folder")
  parser.add_argument("--copies", type=int, nargs="+", default=[1, 4])
  parser.add_argument("--child", choices=("align", "lsh", "table"))
  parser.add_argument("--folder", help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.child == "table":
    print(json.dumps(_table_child(args.folder)))
    return
  if args.child == "align":
    print(json.dumps(_align_child(args.pairs)))
    return
  if args.child == "lsh":
    print(json.dumps(_lsh_child(args.bits)))
    return
  me = os.path.abspath(__file__)
  result = children.run_facts(__file__, None)
  if args.table_parts:
    result["table"] = _tables(args.table_parts, args.copies)
  else:
    result["align_extract"] = children.run_child(
        [me, "--child", "align", "--pairs", str(args.pairs)], 1)
    result["lsh"] = [children.run_child([me, "--child", "lsh", "--bits",
                                         str(args.bits)], n)
                     for n in args.devices]
  children.write_result(args.output, result)
  print(json.dumps(result, indent=2))

if __name__ == "__main__":
  main()
