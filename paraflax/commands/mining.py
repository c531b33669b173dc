"""The embed and mine commands: sentence embeddings, margin-based mining, and
the pair scores of a bilingual workdir."""
from __future__ import annotations

import argparse

from paraflax import choices
from paraflax.commands.base import (
    BILINGUAL_WORKDIR, CLUSTER, CSLS_K, Command, FP16, KEEP_FREED_MEMORY,
    LANGS, OVERWRITE, WORKDIR, flag, setting)

TITLE = "embed and mine"

DIM = flag("--dim", type=int, help="embedding dimension (e.g. 1024 for "
           "LASER); required with embedding files")
_MINE_DESCRIPTION = (
    "Margin-based mining (Artetxe & Schwenk 2019) of two embedded corpora. "
    "Embeddings are LASER's raw N x d matrices (float32, or float16 with "
    "--fp16), or are computed from the text files with --workdir. Output: a "
    "TSV of score<TAB>src<TAB>tgt, by descending score; src and tgt are the "
    "sentences when --src-text/--tgt-text are given, else 0-based line "
    "numbers. Progress goes to stderr; finished k-NN blocks are kept in "
    "OUTPUT.parts/ until the TSV is written, so rerunning the same command "
    "after a crash resumes.")

INDEX_SETTINGS = (
    setting("--metric", choices=choices.INDEX_METRICS,
            help="--index: the index's metric on unit vectors (both rank "
            "by cosine; some indexes, such as LSH, need l2)"),
    setting("--train-sample", type=int,
            help="--index: rows the index trains on, drawn by --seed "
            "(unset: 64 per IVF cluster, at least 10,000)"),
    setting("--seed", type=int, help="--index: draws the training sample"),
)

MINE_FLAGS = (
    flag("--src-emb", help="source embeddings: a LASER raw file, or a "
         "quoted glob of shards, read in path order as one corpus"),
    flag("--tgt-emb", help="target embeddings (file or glob of shards)"),
    DIM, FP16,
    flag("--src-text", help="source sentences, one per embedding (a glob: "
         "one text file per shard, in the same path order)"),
    flag("--tgt-text", help="target sentences, one per embedding"),
    flag("--workdir", help="embed --src-text/--tgt-text with this workdir's "
         "encoder instead of reading embedding files (a bilingual workdir, "
         "or an English paraphrase one)"),
    flag("--src-lang", help="source language, with --workdir"),
    flag("--tgt-lang", help="target language, with --workdir"),
    setting("--margin", choices=choices.MARGINS,
            help="margin(cos, neighbourhood mean): a / b, a - b, or plain "
            "cosine a"),
    setting("--retrieval", choices=choices.RETRIEVALS,
            help="candidates: each source's best target (fwd), each "
            "target's best source (bwd), pairs chosen both ways "
            "(intersect), or both, greedily by score using each sentence "
            "once (max)"),
    setting("--k", type=int, help="neighbours per sentence"),
    setting("--threshold", type=float,
            help="keep pairs with score >= this (unset: all)"),
    setting("--dedup", action=argparse.BooleanOptionalAction,
            help="mine each distinct sentence once, then give every line "
            "that holds a mined sentence the pair and its score (so a "
            "repeated sentence can appear in several pairs, even with "
            "--retrieval max); --no-dedup mines lines as they are, "
            "duplicates competing for partners. Needs the text files; "
            "unset: on when they are given"),
    setting("--backend", choices=choices.KNN_BACKENDS,
            help="k-NN search: exact blocked search on the JAX devices, or "
            "faiss on the CPU"),
    setting("--faiss-index", choices=choices.FAISS_INDEXES,
            help="faiss: exact (flat, same neighbours as jax) or clustered "
            "(ivf: approximate, faster on big corpora)"),
    setting("--nlist", type=int,
            help="ivf clusters (unset: about 4 sqrt(corpus rows))"),
    setting("--block", type=int,
            help="queries per k-NN block, the unit of progress and "
            "resumption; bounds device memory"),
    setting("--index",
            help="a faiss index factory string (e.g. 'OPQ64,IVF65536,PQ64', "
            "'IVF4096,PQ16x4fs'): approximate search in an index of each "
            "side, trained on a seeded sample, filled shard by shard; "
            "'Flat': the exact jax search (unset: --backend decides)"),
    *INDEX_SETTINGS,
    setting("--nprobe", type=int,
            help="ivf clusters searched per query (nprobe >= nlist is "
            "exact)"),
    setting("--rerank", type=int,
            help="--index: each query's best N index candidates re-scored "
            "with exact cosines from the embedding files; 0: the index's "
            "own similarities"),
    setting("--faiss-gpu", action=argparse.BooleanOptionalAction,
            help="--index: search on every GPU faiss-gpu sees, float16, rows "
            "sharded over them (unset: when there are any)"),
    setting("--index-on-devices", action=argparse.BooleanOptionalAction,
            help="--index PQ<M>: its codes split over the devices (M bytes "
            "a row), each block decoded there and scored exactly; then "
            "--rerank as with faiss"),
    setting("--recall-target", type=float,
            help="jax: approximate top-k (jax.lax.approx_max_k) at this "
            "recall, TPU-KNN's fast path on TPUs (unset: exact)"),
    flag("--src-index", help="--index: the source side's index folder "
         "(paraflax index), reused when built from these embeddings and "
         "settings, else built there (unset: inside OUTPUT.parts/)"),
    flag("--tgt-index", help="--index: the target side's index folder"),
    flag("--output", required=True, help="OUT.tsv"), OVERWRITE,
)

COMMANDS: dict[str, Command] = {
    "embed": Command(
        "paraflax.inference.embedders:embed_file",
        "embed sentences with a trained model",
        "One sentence per line in; a raw little-endian float32 N x d matrix "
        "out (LASER's format), same row order. An --input glob or comma-"
        "separated list embeds each text file into a shard OUTPUT/<its "
        "name>.f16 (float16 unless --no-fp16) with its .info.json sidecar, "
        "the shards mine reads; finished shards are skipped on a rerun, and "
        "--distributed gives process p shards p, p + P, ...",
        (WORKDIR, flag("--input", required=True, help="a text file, or a "
                       "quoted glob or list of text files (one shard each)"),
         flag("--output", required=True, help="the embedding file, or the "
              "folder of the shards"),
         flag("--lang", help="the input's language: required with a "
              "bilingual workdir (picks its source or target encoder); "
              "optional with an English paraphrase workdir (must be en)"),
         flag("--fp16", action=argparse.BooleanOptionalAction,
              help="write float16 (default: for shards; float32 for one "
              "file)"),
         OVERWRITE, *CLUSTER)),
    "mine": Command(
        "paraflax.inference.embedders:mine_files",
        "mine parallel sentences by margin score (LASER files)",
        _MINE_DESCRIPTION, MINE_FLAGS + CLUSTER, config="configs/mine.py",
        prepare=KEEP_FREED_MEMORY,
        kept="The finished k-NN blocks are kept in OUTPUT.parts/",
        needs=(*((f, "--index") for f in (
            "--metric", "--train-sample", "--seed", "--rerank",
            "--faiss-gpu", "--index-on-devices", "--src-index",
            "--tgt-index")),
               ("--src-lang", "--workdir"), ("--tgt-lang", "--workdir"))),
    "index": Command(
        "paraflax.mining.pipeline:index_files",
        "build a faiss index of one side's embeddings, to mine with",
        "Trains the faiss index of a factory string (--index) on a seeded "
        "sample of the embeddings (a file, or a quoted glob of shards), "
        "then adds them shard by shard into the folder --output: "
        "index.faiss and index.faiss.meta.json (what it was built from). A "
        "killed build resumes from its last finished shard; a folder built "
        "from other embeddings or settings is refused. Mine with it: "
        "paraflax mine --index STRING --src-index/--tgt-index FOLDER.",
        (flag("--emb", required=True, help="embeddings: a LASER raw file or "
              "a quoted glob of shards"),
         DIM, FP16,
         flag("--text", help="the sentences (a glob: one file per shard): "
              "each distinct sentence is indexed once, as mine "
              "deduplicates"),
         flag("--index", required=True, help="a faiss index factory string, "
              "e.g. 'IVF4096,PQ16x4fs' or 'OPQ64,IVF65536,PQ64'"),
         flag("--metric", choices=choices.INDEX_METRICS, default="ip",
              help="on unit vectors: ip (cosine) or l2"),
         flag("--train-sample", type=int, help="rows to train on (default: "
              "64 per IVF cluster, at least 10,000)"),
         flag("--seed", type=int, default=0, help="draws the sample"),
         flag("--dedup", action=argparse.BooleanOptionalAction,
              help="index each distinct sentence once (default: with "
              "--text)"),
         flag("--output", required=True, help="the index folder"),
         OVERWRITE),
        compiles=False),
    "score-pairs": Command(
        "paraflax.inference.scoring:score_file",
        "score sentence pairs with a bilingual workdir",
        "One source<TAB>target pair per line in; one float per line out, "
        "same order, higher = more likely a translation. mlp needs "
        "`paraflax train-mlp` on the workdir first; csls compares each "
        "sentence with its --k nearest neighbours among all the file's other "
        "side.",
        (BILINGUAL_WORKDIR, flag("--input", required=True, help="PAIRS.tsv"),
         flag("--output", required=True), *LANGS,
         flag("--similarity", choices=choices.SIMILARITIES, default="cosine",
              help="(default: cosine)"), CSLS_K, OVERWRITE)),
    "train-mlp": Command(
        "paraflax.inference.scoring:train_mlp_for_workdir",
        "train the MLP similarity of a bilingual workdir",
        "Positives: --positives (a data spec; for de, fr and cs by default "
        "newstest_train_pool pairs); negatives from --noisy (by default the "
        "ParaCrawl v3 sample, labels unused): worst, its --worst-fraction "
        "lowest-cosine pairs; band, Kim et al.'s x%-worst (the last "
        "negatives_count lines of the top band_cut by cosine); random, "
        "lines of it; or shuffled, the positives re-paired; "
        "configs/mlp_similarity.py, whose "
        "keys these flags set. Trains afresh into WORKDIR/mlp_similarity/ "
        "(orbax checkpoints: the lowest held-out loss is used) and writes "
        "WORKDIR/mlp_similarity.json.",
        (BILINGUAL_WORKDIR,
         setting("--positives", metavar="SPEC",
                 help="bitext of the pair (docs/your-data.md)"),
         setting("--noisy", metavar="SPEC",
                 help="a noisy corpus of the pair, for the negatives"),
         setting("--negatives", choices=choices.MLP_NEGATIVES),
         setting("--worst-fraction", type=float),
         setting("--epochs", type=int),
         setting("--seed", type=int)),
        config="configs/mlp_similarity.py"),
}
