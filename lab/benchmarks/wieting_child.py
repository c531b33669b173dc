r"""Child of encoders_vs_wieting.py: times Wieting's own PyTorch training loop.

Runs under the peer's python (torch), with the checkout of
jwieting/paraphrastic-representations-at-scale on sys.path (`--src`); it
imports their `models`, `pairing` and `utils` and copies none of them. What
it adds is the driver their `main.py` / `ParaModel.train_epochs` would be,
cut to a fixed number of megabatches and timed:

- data: their `preprocess/text2HDF5.py` turns a `sent1<TAB>sent2` file into
  (ids1, ids2) pairs, ids in order of first appearance, and a vocab with
  their UNK appended (`main.py`'s load_vocab). Under numpy 2 that script
  stops (`np.array` of ragged pairs), so this builds the same pairs in memory;
  their loop only indexes `data[t]`, as it does the HDF5 dataset.
- one update is their `train_epochs` loop body: `pairing.compute_loss_one_batch`
  (which embeds a new megabatch and searches its negatives every
  `megabatch` updates), `zero_grad`, `backward`, `clip_grad_norm_`, `step`;
  where their epoch ends (195 batches of 100 here, the last megabatch of an
  epoch 35 of them) the next epoch starts as in train_epochs, so a timed
  "megabatch" of `megabatch` updates may straddle two of theirs.
- `--vectors` (Avg): after the last update, their word table and vocabulary
  go to an .npz, which is their whole Avg model; the parent embeds the STS
  sentences with it and scores them with our evaluator, as it does ours.

Prints one JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time


def _parse() -> argparse.Namespace:
  parser = argparse.ArgumentParser()
  parser.add_argument("--src", required=True, help="their checkout")
  parser.add_argument("--pairs", required=True, help="sent1<TAB>sent2 file")
  parser.add_argument("--model", choices=("avg", "lstm"), required=True)
  parser.add_argument("--batch", type=int, default=100)
  parser.add_argument("--megabatch", type=int, default=40)
  parser.add_argument("--megabatches", type=int, default=3,
                      help="the first is warm-up, the rest are timed")
  parser.add_argument("--dim", type=int, default=300)
  parser.add_argument("--hidden-dim", type=int, default=150)
  parser.add_argument("--vectors", default="",
                      help="avg: write the trained word table here (.npz: "
                      "words, vectors, unk) for the parent to score")
  return parser.parse_args()


def _pairs(path: str):
  """Their text2HDF5.py's pairs and vocab, built in memory."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  with open(path, encoding="utf-8") as f:
    rows = [line.rstrip("\n").split("\t") for line in f]
  vocab: dict[str, int] = {}
  for a, b in rows:
    for word in a.split() + b.split():
      vocab.setdefault(word, len(vocab))
  data = [(np.asarray([vocab[w] for w in a.split()], np.int32),
           np.asarray([vocab[w] for w in b.split()], np.int32))
          for a, b in rows]
  return data, vocab


def _new_epoch(model, batch: int) -> None:
  """train_epochs' set-up of an epoch: the pairs shuffled into batches."""
  import utils  # pylint: disable=g-import-not-at-top (theirs)
  model.mb = utils.get_minibatches_idx(len(model.data), batch, shuffle=True)
  model.curr_idx, model.megabatch = 0, []


def _save_vectors(path: str, model, vocab: dict[str, int], unk: str) -> None:
  """Their Avg model as data: words in id order, their vectors."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  words = sorted(vocab, key=vocab.get)
  table = model.embedding.weight.detach().cpu().numpy().astype(np.float32)
  with open(path + ".tmp", "wb") as f:  # atomic: the parent reads it after
    np.savez(f, words=np.asarray(words), vectors=table, unk=np.asarray(unk))
  os.replace(path + ".tmp", path)


def main() -> None:
  args = _parse()
  sys.path.insert(0, args.src)
  import numpy as np  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  import models  # pylint: disable=g-import-not-at-top (theirs)
  import pairing  # pylint: disable=g-import-not-at-top (theirs)
  import utils  # pylint: disable=g-import-not-at-top (theirs)

  np.random.seed(1)  # main.py's seeds
  torch.manual_seed(1)
  data, vocab = _pairs(args.pairs)
  vocab[utils.unk_string] = len(vocab)
  # main.py's defaults, with batch and megabatch set and the megabatch
  # annealing (1 -> megabatch over training) off, so that every megabatch
  # has `megabatch` mini-batches as ours does.
  model_args = argparse.Namespace(
      gpu=0, dim=args.dim, model=args.model, grad_clip=5.0, lr=0.001,
      dropout=0.0, batchsize=args.batch, megabatch_size=args.megabatch,
      megabatch_anneal=0, pool="mean", zero_unk=1, save_interval=0,
      report_interval=10**9, hidden_dim=args.hidden_dim, delta=0.4,
      ngrams=0, share_encoder=1, share_vocab=1, scramble_rate=0.0,
      sp_model=None, lower_case=1, tokenize=0, debug=0)
  cls = models.Averaging if args.model == "avg" else models.LSTM
  stdout = sys.stdout
  sys.stdout = sys.stderr  # their constructors print the module
  model = cls(data, model_args, vocab, None)
  sys.stdout = stdout
  model.train()
  _new_epoch(model, args.batch)

  times, losses = [], []
  for _ in range(args.megabatches):
    start = time.perf_counter()
    total = 0.0
    for _ in range(args.megabatch):
      cost = pairing.compute_loss_one_batch(model)
      if cost is None:  # their epoch ended: train_epochs starts the next
        _new_epoch(model, args.batch)
        cost = pairing.compute_loss_one_batch(model)
      total += cost.item()
      model.optimizer.zero_grad()
      cost.backward()
      # Their call as it stands: `model.parameters` is the generator their
      # optimizer consumed (models.py: `self.parameters =
      # self.parameters()`), so it clips nothing, in their main.py too, as
      # ours (configs/paraphrase.py sets no clip_norm); torch warns of an
      # empty generator.
      torch.nn.utils.clip_grad_norm_(model.parameters, model_args.grad_clip)
      model.optimizer.step()
    times.append(time.perf_counter() - start)
    losses.append(total / args.megabatch)
  if args.vectors:
    _save_vectors(args.vectors, model, vocab, utils.unk_string)
  timed = times[1:]
  median = statistics.median(timed)
  print(json.dumps({
      "model": args.model,
      "pairs": len(data),
      "vocab": len(vocab),
      "batch_size": args.batch,
      "megabatch": args.megabatch,
      "first_megabatch_s": times[0],
      "megabatch_s": timed,
      "median_megabatch_s": median,
      "pairs_per_s": args.batch * args.megabatch / median,
      # Mean over pairs of the two hinges (MarginRankingLoss averages each),
      # the quantity our loss_per_call is.
      "loss_per_megabatch": losses,
      "torch": torch.__version__,
      "torch_threads": torch.get_num_threads(),
      "loadavg_end": os.getloadavg(),
  }), flush=True)


if __name__ == "__main__":
  main()
