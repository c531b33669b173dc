"""The tables of mining_scale.py --peer, paraflax beside faiss driven
directly with and without its own re-ranking: lab/benchmarks/README.md's
(`mining_scale.peers-at-best-<rows>.<hardware>.json`) and lab/mining.md's,
side by side on a core each (`mining_ann.scale-<rows>.<hardware>.json`);
and the figures lab/mining.md's prose draws from mining_ann.py's runs."""
from __future__ import annotations

import glob
import json
import os

import markdown_table
import run_results

_f = markdown_table.num

BENCH = os.path.join(run_results.ROOT, "lab", "results")

_PEER_NAMES = {"index": "faiss, the index alone",
               "refine_flat": "faiss `IndexRefineFlat` (float32 rows)",
               "refine_fp16": "faiss `IndexRefine` + fp16 SQ (float16 rows)"}


def _load(path: str) -> dict:
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def ann(what: str) -> list[dict]:
  """mining_ann.py's runs of `what` ("recall", "quality"), one a machine."""
  return [_load(p) for p in sorted(glob.glob(os.path.join(
      BENCH, f"mining_ann.{what}.*.json")))]


def _prf(quality: dict) -> str:
  best = quality["f1_optimal"]
  return (f"{best['precision']:.1f} / {best['recall']:.1f} / "
          f"{best['f1']:.1f}")


def _ratio(x: float | None, ours: float | None) -> str:
  return "" if x is None or ours is None else f"{x / ours:.2f}x"


def _peak_mib(d: dict, side: dict, key: str = "peak_rss_bytes"
              ) -> float | None:
  """A side's own peak (MiB), or None where only a bound is known: a
  child's ru_maxrss (files without `peak_rss_measure`) is at least the
  parent's peak at the fork, the generator's, so a figure at or below that
  says only that the side's own peak was no higher."""
  mib = side[key] / 2**20 if key == "peak_rss_bytes" else side[key]
  floor = d.get("generator_peak_rss_bytes")
  if side.get("peak_rss_measure") or floor is None or mib > floor / 2**20:
    return mib
  return None


def _mib_cell(d: dict, mib: float | None) -> str:
  if mib is not None:
    return _f(mib, 0)
  return f"at most {_f(d['generator_peak_rss_bytes'] / 2**20, 0)}"


def _cpu(d: dict) -> str:
  """The CPU and cores of a run; side by side, the cores of each side."""
  both = d.get("side_by_side")
  cores = len(both["ours_cores"]) if both else d["hardware"]["cores"]
  return (markdown_table.recorded_cpu_cell(d["hardware"], cores)
          + (" each, side by side" if both else ""))


def _peer_table(pattern: str) -> list[str]:
  """Per file matching `pattern`: paraflax with and without re-ranking,
  and faiss driven directly with the same re-ranking budget (its own
  IndexRefineFlat and IndexRefine) and without, its margin by paraflax's
  code and by stopes'; times, peak memory and planted-pair P/R/F1 of
  each, ratios to paraflax with the same number of candidates re-scored."""
  rows = []
  for d in sorted(map(_load, glob.glob(os.path.join(BENCH, pattern))),
                  key=lambda d: (*markdown_table.machine(d["hardware"]),
                                 d["rows_per_side"])):
    load = (f"load {d['load_average'][0]:.1f} to "
            f"{d['run']['load_average_at_end'][0]:.1f}")
    head = (f"{d['rows_per_side']:,}, {_cpu(d)}, {d['threads']} "
            f"thread{'s' if d['threads'] > 1 else ''}, {load}")
    for rerank, ours in d["runs"].items():
      candidates = f"{rerank}" if rerank != "0" else "none"
      ours_mib = _peak_mib(d, {**ours, "peak_rss_measure": d.get(
          "peak_rss_measure")})
      rows.append((head, "paraflax", candidates, _f(d["index_build_s"], 1),
                   _f(ours["mine_s"], 1), "in search", _f(
                       ours["total_mining_s"], 1), _mib_cell(d, ours_mib),
                   _prf(ours["quality"]), "1.00x",
                   "1.00x" if ours_mib else ""))
      head = ""
      variants = (["index"] if rerank == "0" else
                  [f"refine_flat-{rerank}", f"refine_fp16-{rerank}"])
      for variant in variants:
        peer = d.get("peers", {}).get(variant)
        if not peer:
          continue
        name = _PEER_NAMES[variant.partition("-")[0]]
        mib = _peak_mib(d, peer)
        rows.append(("", f"{name}, paraflax's margin", candidates,
                     _f(peer["index_build_s"], 1), _f(peer["search_s"], 1),
                     _f(peer["margin_s"], 1), _f(peer["total_mining_s"], 1),
                     _mib_cell(d, mib), _prf(peer["quality"]),
                     _ratio(peer["total_mining_s"], ours["total_mining_s"]),
                     _ratio(mib, ours_mib)))
        stopes = peer.get("stopes", {})
        if stopes.get("ran"):
          # stopes' margin reads the k-NN files the peer wrote, in a
          # process of its own: its peak is the larger of the two.
          theirs = _peak_mib(d, stopes, "peak_rss_mib")
          mib = None if mib is None or theirs is None else max(mib, theirs)
          margin_s = peer["knn_files_s"] + stopes["mine_s"]
          rows.append(("", f"{name}, stopes' margin", candidates,
                       _f(peer["index_build_s"], 1), _f(peer["search_s"], 1),
                       _f(margin_s, 1), _f(stopes["total_mining_s"], 1),
                       _mib_cell(d, mib), _prf(stopes["quality"]),
                       _ratio(stopes["total_mining_s"],
                              ours["total_mining_s"]),
                       _ratio(mib, ours_mib)))
  return markdown_table.table(
      ["rows a side, hardware, threads, load (1 min, start to end)", "side",
       "candidates re-scored", "index build (s)", "search (s)", "margin (s)",
       "total (s)", "peak RSS (MiB)", "F1-optimal P / R / F1",
       "time / paraflax's", "memory / paraflax's"], rows, numeric_from=3)


def mining_scale_peers() -> list[str]:
  return _peer_table("mining_scale.peers-at-best-*.json")


def mining_ann_scale() -> list[str]:
  return _peer_table("mining_ann.scale-*.json")


def performance_rows() -> list[tuple[str, ...]]:
  """lab/performance.md's rows: per kind of file and CPU generation, its
  largest run with faiss re-ranking the same candidates as ours
  (IndexRefineFlat)."""
  return [row for pattern in ("mining_ann.scale-*.json",
                              "mining_scale.peers-at-best-*.json")
          for row in _performance_rows(pattern)]


def _performance_rows(pattern: str) -> list[tuple[str, ...]]:
  """Per CPU kind and generation, the row of the largest run matching
  `pattern` with faiss re-ranking the same candidates as ours."""
  found: dict[tuple[str, str], list[dict]] = {}
  for d in map(_load, glob.glob(os.path.join(BENCH, pattern))):
    if f"refine_flat-{d['rerank']}" in d.get("peers", {}):
      found.setdefault(markdown_table.machine(d["hardware"]), []).append(d)
  return [_largest_row(max(runs, key=lambda d: (d["rows_per_side"],
                                                d["date"])))  # newest
          for _, runs in sorted(found.items())]


def _largest_row(d: dict) -> tuple[str, ...]:
  """A run's row of the peers' table: faiss re-ranking the same candidates
  as ours, its margin by stopes' code where that ran (else paraflax's):
  speed, F1 and peak memory; and the speed of both re-ranking none where
  the run has that."""
  ours = d["runs"][str(d["rerank"])]
  peer = d["peers"][f"refine_flat-{d['rerank']}"]
  stopes = peer.get("stopes", {})
  side, margin_by = (stopes, "stopes'") if stopes.get("ran") else (
      peer, "paraflax's")
  ours_mib = _peak_mib(d, {**ours, "peak_rss_measure": d.get(
      "peak_rss_measure")})
  peer_mib = _peak_mib(d, peer)
  if stopes.get("ran") and peer_mib is not None:
    theirs = _peak_mib(d, stopes, "peak_rss_mib")
    peer_mib = None if theirs is None else max(peer_mib, theirs)
  ratio = side["total_mining_s"] / ours["total_mining_s"]
  memory = (f", peak memory {ours_mib:,.0f} against {peer_mib:,.0f} MiB"
            if ours_mib and peer_mib else "")
  plain, alone = d["runs"].get("0"), d["peers"].get("index")
  if plain and alone:  # the same margin code as the re-ranked ratio's
    alone = alone["stopes"] if stopes.get("ran") else alone
    none = alone["total_mining_s"] / plain["total_mining_s"]
    memory += "; " + markdown_table.slower(f"{none:.2f}x", [none]) + (
        " both re-ranking none")
  return (
      f"approximate mining, {d['rows_per_side']:,} a side, `{d['index']}`, "
      f"both re-ranking {d['rerank']} candidates",
      f"faiss `IndexRefineFlat` over the same index string, sample, nprobe "
      f"and threads; margin by {margin_by} code",
      _cpu(d),
      markdown_table.slower(f"{ratio:.2f}x", [ratio]) + ", "
      f"planted-pair F1 {ours['quality']['f1_optimal']['f1']:.1f} against "
      f"{side['quality']['f1_optimal']['f1']:.1f}{memory}",
      "`mining_scale.py --peer --stopes-python"
      + (" --side-by-side`" if d.get("side_by_side") else "`"))


TABLES = (mining_scale_peers, mining_ann_scale)


def _scale(rows: str) -> dict:
  """The one-core run of `rows` a side ("1e7")."""
  return _load(os.path.join(BENCH, f"mining_ann.scale-{rows}."
                                   "amd-epyc-1core.json"))


def _query_us(d: dict, rerank: str) -> float:
  """Our search, margins and TSV a query (both ways), in microseconds."""
  return 1e6 * d["runs"][rerank]["mine_s"] / (2 * d["rows_per_side"])


def _codes(d: dict) -> float:
  """The codes a query scans: nprobe lists of rows / lists rows each."""
  from paraflax.mining import index_spec  # pylint: disable=g-import-not-at-top
  lists = index_spec.nlist(index_spec.Spec(d["index"]), d["dim"])
  return d["nprobe"] * d["rows_per_side"] / lists


def _ns_per_code() -> float:
  """The search's cost of a further code scanned, from 10^6 to 10^7."""
  small, large = _scale("1e6"), _scale("1e7")
  return 1e3 * (_query_us(large, "0") - _query_us(small, "0")) / (
      _codes(large) - _codes(small))


# The figures that lab/mining.md's prose derives from the one-core runs.
VALUES = {f"mining_ann.query_us.{rows}": (
    lambda rows=rows: f"{_query_us(_scale(rows), '0'):.1f}")
          for rows in ("1e6", "1e7")}


def _rerank_us(d: dict) -> float:
  """What re-ranking 16 candidates adds to a query's search."""
  return _query_us(d, "16") - _query_us(d, "0")


VALUES["mining_ann.rerank_us.1e7"] = lambda: f"{_rerank_us(_scale('1e7')):.0f}"


def _bytes_per_row() -> float:
  """What the peak memory of our re-ranked run grows by from 10^6 to 10^7
  rows a side, less the shards' growth, per row a side."""
  small, large = _scale("1e6"), _scale("1e7")
  grown = (large["runs"]["16"]["peak_rss_bytes"]
           - small["runs"]["16"]["peak_rss_bytes"]
           - 2 * (large["shard_bytes_per_side"]
                  - small["shard_bytes_per_side"]))
  return grown / (2 * (large["rows_per_side"] - small["rows_per_side"]))


VALUES["mining_ann.bytes_per_row"] = lambda: f"{_bytes_per_row():.0f}"
# Both sides' float16 shards at 10^7 rows, in GB (10^9 bytes).
VALUES["mining_ann.shards_gb.1e7"] = lambda: (
    f"{2 * _scale('1e7')['shard_bytes_per_side'] / 1e9:.1f}")
VALUES["mining_ann.ns_per_code"] = lambda: f"{_ns_per_code():.1f}"


def _projected_s() -> float:
  """lab/mining.md's projection in core-seconds: 2 x 10^9 queries (10^9 a
  side, both ways), each scanning nprobe 128 of 65,536 lists of 10^9
  rows, at the measured cost of a code."""
  return 2e9 * 128 * 1e9 / 65536 * _ns_per_code() * 1e-9


VALUES["mining_ann.projection_core_days"] = lambda: (
    f"{_projected_s() / 86400:.0f}")
VALUES["mining_ann.projection_hours_64"] = lambda: (
    f"{_projected_s() / 3600 / 64:.0f}")


def _rerank_us_per_candidate() -> str:
  """What our re-ranking spends a candidate past the index's search (µs,
  the least and the most over the candidate counts re-ranked)."""
  d = _load(os.path.join(BENCH, "mining_rerank.1e5.intel-xeon-2core.json"))
  costs = [1e6 * r["ours"]["rest_s"] / (d["rows_per_side"] * r["candidates"])
           for r in d["rows"] if r["rerank"]]
  return f"{min(costs):.2f}-{max(costs):.2f}"


VALUES["mining_rerank.us_per_candidate"] = _rerank_us_per_candidate


def _recall_span(fields: tuple[str, ...], settings: tuple[str, ...],
                 nprobe: int) -> str:
  """The least and the most of `fields` over the index `settings` probed
  at `nprobe`, on every machine (the recall table's rows)."""
  values = [r[field] for d in ann("recall") for r in d["recall"]
            for field in fields
            if r["setting"] in settings and r["nprobe"] == nprobe]
  return markdown_table.span(values, unit="")


_RECALL = ("recall_fwd", "recall_bwd")
_CODES = {"flat_sq8_pq16": ("IVF256,Flat", "IVF256,SQ8", "IVF256,PQ16"),
          "flat": ("IVF256,Flat",), "pq": ("IVF256,PQ16", "OPQ16,IVF256,PQ16"),
          "fast_scan": ("IVF256_HNSW32,PQ16x4fs",)}
# lab/mining.md's readings of the recall table: what re-ranking finds of
# the exact neighbours, the pairs it shares with exact mining, and those
# faiss driven directly shares, by the index's codes and nprobe.
_RECALL_READINGS = {
    "recall.flat_sq8_pq16.8": (_RECALL, "flat_sq8_pq16", 8),
    "recall.fast_scan.8": (_RECALL, "fast_scan", 8),
    "recall.pq.32": (_RECALL, "pq", 32),
    "same_pairs.pq.32": (("same_pairs",), "pq", 32),
    "peer_same_pairs.flat.8": (("peer_same_pairs",), "flat", 8),
    "peer_same_pairs.pq.8": (("peer_same_pairs",), "pq", 8),
    "peer_same_pairs.fast_scan.8": (("peer_same_pairs",), "fast_scan", 8)}
VALUES.update({f"mining_ann.{name}": (
    lambda fields=fields, codes=codes, nprobe=nprobe: _recall_span(
        fields, _CODES[codes], nprobe))
               for name, (fields, codes, nprobe) in _RECALL_READINGS.items()})


def _f1_losses(setting: str, nprobe: int, split: str) -> list[float]:
  """Exact search's F1 less an index's on the news benchmark's `split`,
  on every machine (the quality table's rows)."""
  losses = []
  for d in ann("quality"):
    exact = next(r for r in d["quality"] if r["nprobe"] is None)
    row = next(r for r in d["quality"]
               if r["setting"] == setting and r["nprobe"] == nprobe)
    losses.append(exact[f"{split}_f1"] - row[f"{split}_f1"])
  return losses


# lab/mining.md's readings of the quality table: the F1 points an index
# loses against exact search.
_LOSSES = {"flat.16": ("IVF64,Flat", 16), "flat.8": ("IVF64,Flat", 8),
           "pq.32": ("IVF64,PQ16", 32),
           "fast_scan.32": ("IVF64_HNSW32,PQ16x4fs", 32)}
VALUES.update({f"mining_ann.f1_loss.{name}.{split}": (
    lambda spec=spec, split=split: markdown_table.span(
        _f1_losses(*spec, split), 1, unit=""))
               for name, spec in _LOSSES.items() for split in ("dev", "test")})


def _f1_within(setting: str, nprobe: int) -> str:
  """Within how many F1 points of exact search an index is, dev and test."""
  worst = max(abs(x) for split in ("dev", "test")
              for x in _f1_losses(setting, nprobe, split))
  return f"{worst:.1f}"


VALUES["mining_ann.f1_within.flat.32"] = lambda: _f1_within("IVF64,Flat", 32)
