"""What the NMT learns per step, beside OpenNMT-py on the same subwords: dev
BLEU at equal steps.

  python lab/benchmarks/nmt_learning_vs_opennmt.py --onmt-bin /path/to/onmt/bin \
      --workdirs runs/a runs/b ... [--steps 1500] [--every 500] \
      [--output lab/results/nmt_learning_vs_opennmt.json] [--keep DIR]

Our side: each `--workdirs` entry is a finished `paraflax train` run of
`configs/nmt.py` (any variant); its dev figures are read from
`W/metrics.jsonl` (the config's in-training `dev` eval: first 500 lines of
newstest2013, beam 4) and, where `paraflax eval --workdir W --only dev_all`
has run, from `W/evals.json` (all of newstest2013, beam 5).

OpenNMT-py's side: trained `--steps` steps from scratch with the settings of
`nmt_vs_opennmt.py` (same sizes, batch, optimizer, label smoothing, seed) on
the first workdir's training pairs cut into its subwords, saved every
`--every` steps. Each checkpoint translates the same dev lines the same way
(beam 4, GNMT length penalty alpha 0.6, `decode.max_output`), and the last
one all of newstest2013 at beam 5. Its pieces are joined back into text by
the target sentencepiece model and scored by sacrebleu (13a) against the
same references our evaluator uses. With `--keep DIR` its data, vocabularies,
checkpoints (`DIR/model_step_N.pt`) and translations stay in DIR for
`nmt_vs_opennmt.py --onmt-model` to decode beside ours, and a second run
with the same DIR resumes: a training that `DIR/trained.json` records as
finished on the same inputs is not run again (its wall time is the one
recorded), nor a translation already written.

children.write_result writes --output, with the run's facts and
OpenNMT-py's and torch's versions as the peer's.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import glob
import hashlib
import json
import os
import tempfile
import time

import children  # lab/benchmarks/, beside this script
import nmt_vs_opennmt as peer  # lab/benchmarks/nmt_vs_opennmt.py, beside this script

from paraflax import files
from paraflax.data import bitext, specs, tasks
from paraflax.recipes import nmt
from paraflax.recipes import workdir as workdir_lib


def _ours(workdir: str) -> dict:
  """The in-training dev curve and the full-test figures of one run."""
  curve = {}
  with open(os.path.join(workdir, "metrics.jsonl"), encoding="utf-8") as f:
    for line in f:
      row = json.loads(line)
      if "dev/bleu" in row:
        curve[row["step"]] = {k[4:]: v for k, v in row.items()
                              if k.startswith("dev/")}
  config = workdir_lib.load_config(workdir, "nmt")
  evals = os.path.join(workdir, "evals.json")
  full = None
  if os.path.exists(evals):
    full = json.load(open(evals, encoding="utf-8")).get("dev_all")
  return {"workdir": children.portable_path(workdir, "WORKDIR"),
          "model": config.model.to_dict(),
          "loss": config.loss.to_dict(), "dev": curve, "dev_all": full}


def score(sp, out_path: str, references: list[str], max_output: int
          ) -> dict:
  pieces = [line.split() for line in
            open(out_path, encoding="utf-8").read().splitlines()]
  texts = [sp.decode_pieces(p) for p in pieces]
  # OpenNMT-py's max_length counts output pieces without EOS.
  hit = sum(len(p) >= max_output for p in pieces)
  return {**peer.bleu(texts, references), "hit_max_output": 100.0 * hit
          / max(len(pieces), 1), "n": len(texts)}


def _translation(tmp: str, name: str, step: int | str, beam: int | str
                 ) -> str:
  """Where translate writes (every one of them, given "*"s)."""
  return f"{tmp}/{name}.step{step}.beam{beam}.txt"


def translate(bin_dir: str, tmp: str, src: str, step: int, beam: int,
              config, name: str, prefix: tuple[str, ...] = ()) -> str:
  """OpenNMT-py's translation of `src` by `tmp/model_step_{step}.pt`;
  `prefix`: a command to run it under (e.g. taskset)."""
  out = _translation(tmp, name, step, beam)
  # Written aside and renamed whole: a kept folder's translation is one
  # that ended.
  peer.run_logged([*prefix, f"{bin_dir}/onmt_translate", "-model",
                   f"{tmp}/model_step_{step}.pt", "-src", src, "-output",
                   f"{out}.partial",
                   "-beam_size", str(beam), "-batch_size", "32",
                   "-batch_type", "sents", "-max_length",
                   str(config.decode.max_output), "-length_penalty", "wu",
                   "-alpha", str(config.decode.alpha), "-gpu", "-1"],
                  f"{tmp}/translate.{name}.{step}.log")
  os.replace(f"{out}.partial", out)
  return out


@dataclasses.dataclass(frozen=True)
class Inputs:
  """OpenNMT-py's files in one folder, in the workdir's subwords."""
  data: bitext.EncodedBitext  # the training pairs, cut as our side cuts
  vocab: int
  dev: list[tuple[str, str]]  # the first config.evals.dev.sentences of test
  test: list[tuple[str, str]]  # all of config.evals.dev_all's pairs
  dev_src: str  # their source pieces, one line each
  all_src: str


def write_inputs(tmp: str, config, translator) -> Inputs:
  """The training pairs of `config` (cut as our side cuts them) and the
  test sources, as `translator`'s sentencepiece pieces in `tmp`."""
  src_sp, tgt_sp = translator.src_sp, translator.tgt_sp
  pairs = [(e["source"], e["target"]) for name in config.data.train
           for e in tasks.examples(name, "train")]
  data = bitext.encode(pairs, src_sp.encode, tgt_sp.encode,
                       config.data.max_len, config.data.too_long, "train")
  # What our bleu evaluator reads: its `data`, "" meaning data.dev.
  all_eval = config.evals.dev_all
  test = specs.pairs(all_eval.data or config.data.dev)
  test = test[:all_eval.get("sentences", 0) or len(test)]
  dev = test[:config.evals.dev.sentences]

  def source_pieces(rows):
    return (peer.as_pieces(src_sp, translator.encode(
        s, f"test line {i + 1}", "truncate"))
            for i, (s, _) in enumerate(rows))

  peer.write_lines(f"{tmp}/train.src",
                   (peer.as_pieces(src_sp, s) for s in data.src))
  peer.write_lines(f"{tmp}/train.tgt",
                   (peer.as_pieces(tgt_sp, t) for t in data.tgt))
  vocab = max(src_sp.get_piece_size(), tgt_sp.get_piece_size())
  return Inputs(data, vocab, dev, test,
                peer.write_lines(f"{tmp}/dev.src", source_pieces(dev)),
                peer.write_lines(f"{tmp}/all.src", source_pieces(test)))


# What a finished training in a kept folder was made from: its config and
# the files write_inputs wrote, whose hashes its record
# (peer.KEPT_TRAINING) holds.
_INPUT_FILES = ("onmt.yaml", "train.src", "train.tgt", "dev.src", "all.src")


def _inputs_sha256(tmp: str) -> dict[str, str]:
  return {name: hashlib.sha256(open(f"{tmp}/{name}", "rb").read()).hexdigest()
          for name in _INPUT_FILES}


def train(bin_dir: str, tmp: str, cfg: str, pieces=None) -> dict:
  """OpenNMT-py's vocabularies and training by `cfg` in `tmp`: its wall
  seconds, its vocabularies (every piece of the (source, target)
  sentencepiece models `pieces`, or where None those its training text
  holds; nmt_vs_opennmt.onmt_vocabularies), and whether the finished
  training `tmp/trained.json` records for the same inputs was reused.
  Otherwise the record and every translation in `tmp` go before it
  trains, so none outlives its model."""
  which = "seen" if pieces is None else "all"
  record = os.path.join(tmp, peer.KEPT_TRAINING)
  inputs = {**_inputs_sha256(tmp), "vocabulary": which}
  if os.path.exists(record):
    done = json.load(open(record, encoding="utf-8"))
    if done["inputs"] == inputs:
      print(f"opennmt: reusing the training {record} records", flush=True)
      return {"train_wall_s": done["train_wall_s"], "train_reused": True,
              "vocabulary": done["vocabulary"]}
    os.remove(record)
  for old in glob.glob(_translation(tmp, "*", "*", "*")):
    os.remove(old)
  vocabulary = peer.onmt_vocabularies(bin_dir, tmp, cfg,
                                      *(pieces or (None, None)), which)
  start = time.perf_counter()
  peer.run_logged([f"{bin_dir}/onmt_train", "-config", cfg],
                  f"{tmp}/train.log")
  wall = time.perf_counter() - start
  files.write_text_atomic(record, json.dumps(
      {"inputs": inputs, "train_wall_s": wall, "vocabulary": vocabulary},
      indent=1) + "\n")
  return {"train_wall_s": wall, "train_reused": False,
          "vocabulary": vocabulary}


def _translated(bin_dir: str, tmp: str, src: str, step: int, beam: int,
                config, name: str) -> str:
  """translate's output, or the one a kept folder holds (train removed
  those of any other model)."""
  if os.path.exists(out := _translation(tmp, name, step, beam)):
    return out
  return translate(bin_dir, tmp, src, step, beam, config, name)


def _opennmt(bin_dir: str, workdir: str, steps: int, every: int,
             keep: str | None, vocab: str) -> dict:
  config = workdir_lib.load_config(workdir, "nmt")
  translator, _, _ = nmt.load_translator(workdir)
  tgt_sp = translator.tgt_sp
  dev_eval, all_eval = config.evals.dev, config.evals.dev_all
  if keep:
    os.makedirs(keep, exist_ok=True)
  with (contextlib.nullcontext(keep) if keep else
        tempfile.TemporaryDirectory(prefix="nmt_learning_")) as tmp:
    inputs = write_inputs(tmp, config, translator)
    dev, test = inputs.dev, inputs.test
    trained = train(bin_dir, tmp, peer.onmt_config(
        tmp, config, inputs.vocab, steps, every),
                    (translator.src_sp, translator.tgt_sp)
                    if vocab == "all" else None)
    curve = {}
    for step in range(every, steps + 1, every):
      out = _translated(bin_dir, tmp, inputs.dev_src, step, dev_eval.beam,
                        config, "dev")
      curve[step] = score(tgt_sp, out, [t for _, t in dev],
                          config.decode.max_output)
      print(f"opennmt step {step} dev", json.dumps(curve[step]), flush=True)
    out = _translated(bin_dir, tmp, inputs.all_src, steps, all_eval.beam,
                      config, "all")
    full = score(tgt_sp, out, [t for _, t in test], config.decode.max_output)
  print("opennmt dev_all", json.dumps(full), flush=True)
  return {"train_pairs": len(inputs.data), **trained, "dev": curve,
          "dev_all": full}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--onmt-bin", required=True,
                      help="bin/ of a venv with OpenNMT-py 3.0.4 and torch")
  parser.add_argument("--workdirs", nargs="+", required=True,
                      help="finished `paraflax train` runs of configs/nmt.py")
  parser.add_argument("--steps", type=int, default=1500)
  parser.add_argument("--every", type=int, default=500)
  parser.add_argument("--onmt-vocab", choices=peer.VOCABULARIES,
                      default="all", help="as nmt_vs_opennmt.py's: "
                      "OpenNMT-py's vocabularies, every piece of the "
                      "sentencepiece models (as ours) or those its "
                      "training text holds")
  parser.add_argument("--output",
                      default="lab/results/nmt_learning_vs_opennmt.json")
  parser.add_argument("--keep", help="a folder to keep OpenNMT-py's data, "
                      "checkpoints and translations in, which a second run "
                      "resumes from (default: a temporary one, removed)")
  args = parser.parse_args()
  # One torch thread unless told otherwise, as the kept table's peer
  # trained (its torch_threads); ours trained in their own runs.
  os.environ.setdefault("OMP_NUM_THREADS", "1")
  opennmt = _opennmt(args.onmt_bin, args.workdirs[0], args.steps, args.every,
                     args.keep, args.onmt_vocab)
  onmt = peer.onmt_versions(args.onmt_bin)
  report = {
      **children.run_facts(__file__, None),
      "benchmark": "nmt_learning_vs_opennmt",
      "torch_threads": onmt.pop("torch_threads"),
      # Read after OpenNMT-py's run, so runs of ours may end meanwhile.
      "opennmt": opennmt, "ours": [_ours(w) for w in args.workdirs]}
  children.write_result(args.output, report, peers=onmt)
  print(f"wrote {args.output}")


if __name__ == "__main__":
  main()
