r"""Margin-based mining (Artetxe & Schwenk 2019) of two embedded corpora:
score = cos(x, y) against the mean cosine of each side's k nearest
neighbours, candidates from both directions. The keys are those of
`paraflax.mining.pipeline.Options`; the input and output files are flags.

Command (the flags --k, --margin, --retrieval, --threshold, --dedup,
--backend, --faiss-index, --nlist, --nprobe, --block, --index, --metric,
--rerank, --train-sample, --seed, --faiss-gpu, --index-on-devices and
--recall-target set these keys too, and win over this file):
  paraflax mine --src-emb X.f32 --tgt-emb Y.f32 --dim 512 \
      --src-text X.txt --tgt-text Y.txt --output OUT.tsv
  (= --config configs/mine.py, the default; override with --config.k=8)
Time: 100k x 100k sentences, d = 512, on 2 idle cores of an AMD EPYC
{mining_throughput.d512.amd-epyc-2core.json:results/method=ours,n=100000,devices=1/total_s:.1f=23.0} s
(faiss IndexFlatIP both ways and numpy:
{mining_throughput.d512.amd-epyc-2core.json:results/method=faiss,n=100000,devices=1/total_s:.1f=82.7} s;
lab/results/mining_throughput.d512.amd-epyc-2core.json); on one NVIDIA H200
{mining_throughput.d512.device-merge.nvidia-h200.json:results/method=ours,n=100000,devices=1/total_s:.2f=0.69} s
(lab/mining.md).
Result (1,000 gold newstest pairs among 4,000 other sentences a side,
F1-optimal dev threshold, ratio margin + max retrieval): test F1
{h100.bi_de.mining_f1=22.1} with the de-en bilingual model trained
{h100.train_time=4 min} on an H100.
Docs: docs/mining.md, docs/faq-mining.md.
"""
import ml_collections
from ml_collections import config_dict


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.k = 4  # neighbours per sentence in the neighbourhood means
  c.margin = "ratio"  # ratio (a / b) | distance (a - b) | absolute (cos)
  # fwd: each source's best target; bwd: each target's best source;
  # intersect: pairs chosen both ways; max: both, greedily by score, each
  # sentence used once.
  c.retrieval = "max"
  c.threshold = config_dict.placeholder(float)  # keep score >= it; None: all
  # Mine each distinct sentence once and give every line that holds it the
  # pair; None: on when both text files are given.
  c.dedup = config_dict.placeholder(bool)
  c.backend = "jax"  # jax (exact, blocked, on the devices) | faiss (CPU)
  c.block = 8192  # queries per k-NN block: progress, resumption, memory
  c.faiss_index = "flat"  # faiss: flat (exact) | ivf (approximate)
  c.nlist = config_dict.placeholder(int)  # ivf clusters; None: ~4 sqrt(rows)
  c.nprobe = 16  # ivf clusters searched per query; >= nlist is exact
  # A faiss factory string ("OPQ64,IVF65536,PQ64", "IVF4096,PQ16x4fs"):
  # approximate search in an index of each side; "Flat": the exact jax
  # search; None: `backend` decides.
  c.index = config_dict.placeholder(str)
  c.metric = "ip"  # the index's metric on unit vectors: ip | l2
  c.rerank = 16  # index candidates re-scored with exact cosines; 0: none
  c.train_sample = config_dict.placeholder(int)  # None: 64 per IVF list
  c.seed = 0  # draws the index's training sample
  c.faiss_gpu = config_dict.placeholder(bool)  # None: when faiss has GPUs
  # index "PQ<M>": its codes searched on the devices instead of by faiss
  c.index_on_devices = False
  # jax: approximate top-k (lax.approx_max_k) at this recall; None: exact
  c.recall_target = config_dict.placeholder(float)
  return c
