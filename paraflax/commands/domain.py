"""The domain commands: Moore-Lewis domain selection and domain-adapted pivot
paraphrases."""
from __future__ import annotations

from paraflax import choices
from paraflax.commands.base import CLUSTER, Command, OVERWRITE, flag, setting

TITLE = "domain"

COMMANDS: dict[str, Command] = {
    "domain-data": Command(
        "paraflax.evaluation.domain_selection:write_domain_data",
        "the biomedical split and the general bitext of the domain "
        "evaluation",
        "Writes OUTPUT/DOMAIN.{train,dev,test}.en (the in-domain English of "
        "mono_en_domains, empty lines dropped: line i to dev when i % 10 "
        "== 9, to test when i % 10 == 0, else to train) and "
        "OUTPUT/general.{mul,en,langs}: every English-paired de/fr/cs "
        "bitext of the data folder concatenated, each English sentence once "
        "(its first pair kept), rows with an empty side dropped; "
        "general.langs names each row's language.",
        (flag("--domain", choices=choices.DOMAINS, default="biomed",
              help="biomed (27,490 biomedical sentences) or abc_science "
              "(ABC science news, lines that are not UTF-8 read as Latin-1; "
              "default: biomed)"),
         flag("--output", required=True, help="folder to write"),
         OVERWRITE),
        compiles=False),
    "select-domain": Command(
        "paraflax.domain.selection:select_domain",
        "Moore-Lewis cross-entropy-difference selection of a bitext",
        "An in-domain LM on --in-domain and a general LM on a random sample "
        "of as many sentences of --general-tgt (English), both KenLM "
        "n-gram LMs of train-lm's tokens; each other general pair gets "
        "diffCE = H_in - H_out (bits per token; lower = closer to the "
        "domain) and one of --bins equal bins, bin 1 the most in-domain. "
        "OUTPUT/ gets bin_<i>.<src-lang> and bin_<i>.en (line-aligned; "
        "bin_<i>.langs too for a mul source), "
        "scores.tsv (line, H_in, H_out, diffCE, bin; bin 0 = the general "
        "LM's sample), the two LMs, summary.json and summary.md; each bin is "
        "the Task selected:OUTPUT:<i> (paraflax tasks --select-dir). With "
        "random_bins (default), random_<i>.* hold the same sentences in a "
        "random order of --seed cut into bins of the same sizes, the Tasks "
        "selected:OUTPUT:r<i>: the same-size random control of any diffCE "
        "bins. The general files are streamed; rerunning the same command "
        "resumes.",
        (flag("--in-domain", required=True, help="TXT, one in-domain "
              "English sentence per line"),
         flag("--general-src", required=True, help="the general bitext's "
              "non-English side"),
         flag("--general-tgt", required=True, help="its English side, "
              "line-aligned"),
         flag("--src-lang", required=True, help="the non-English side's "
              "code (de, fr, cs; mul for several)"),
         flag("--general-langs", help="with --src-lang mul: the language "
              "code of each general pair, one a line (default: the .langs "
              "file beside --general-src); each bin then gets "
              "bin_<i>.langs, which paraflax pivot splits by"),
         setting("--bins", type=int), setting("--order", type=int),
         setting("--seed", type=int, help="of the general LM's sample and "
                 "of the random bins"),
         flag("--output", required=True, help="folder to write"),
         OVERWRITE),
        config="configs/domain.py",
        compiles=False),
    "pivot": Command(
        "paraflax.domain.pivot:build_table",
        "pivot paraphrases from word-aligned bitext",
        "Aligns the --bitext pairs of each language together (one corpus "
        "per language) with eflomal in both directions (grow-diag-"
        "final-and), extracts the phrase pairs consistent with the alignment "
        "(pivot.max_phrase_len words a side), p(f|e) and p(e|f) by relative "
        "frequency, and writes TABLE: `e1 ||| e2 ||| p(e2|e1)` with p(e2|e1) "
        "= sum_f p(e2|f) p(f|e1) averaged over the pivot languages (de, fr, "
        "cs) that hold e1, sorted by e1 then p. Blocks of pivot.block_pairs "
        "pairs are kept in TABLE.parts/: rerunning the same command resumes. "
        "Also TABLE.summary.json (pairs and phrase pairs per second).",
        (flag("--bitext", nargs="+", required=True, action="extend",
              help="a bitext Task (bitext_multi30k_de_en[:split], or a bin "
              "selected:SEL:<i>, or its random control selected:SEL:r<i>), "
              "a file prefix P with P.en and P.de|fr|cs "
              "(SEL/bin_1), or with P.mul and P.langs (a bin of a mul "
              "source: split by language), "
              "or a folder of such pairs; repeatable"),
         flag("--output", required=True, help="TABLE"),
         setting("--max-phrase-len", key="pivot.max_phrase_len", type=int),
         OVERWRITE),
        config="configs/domain_pivot.py",
        compiles=False),
    "monods": Command(
        "paraflax.domain.monods:rerank",
        "rerank a paraphrase table by monolingual similarity (LSH)",
        "Streams --corpus once: each occurrence of a table phrase adds its "
        "left and right word as features to online LSH signatures (Van "
        "Durme & Lall 2010: a Gaussian pool indexed by a hash of the "
        "feature, --bits bits, jitted sums split over the devices by bits); "
        "MonoDS = cos(pi * hamming / bits). RERANKED: every pair as `e1 ||| "
        "e2 ||| score ||| p=P monods=M`, score = (1 - w) log p + w log "
        "max(M, monods.floor), w = monods.weight; sorted by e1 then score. "
        "Also RERANKED.summary.json (events per second). With "
        "--distributed, several processes share the bits (each streams the "
        "corpus; process 0 writes).",
        (flag("--corpus", nargs="+", required=True, action="extend",
              help="English text, one sentence per line (gzipped or not), "
              "or a monolingual Task (mono_en_brown); repeatable"),
         flag("--table", required=True, dest="table_path",
              help="TABLE of paraflax pivot"),
         flag("--output", required=True, help="RERANKED"),
         setting("--bits", key="monods.bits", type=int,
                 help="signature bits, a multiple of 8"),
         setting("--weight", key="monods.weight", type=float,
                 help="weight of log MonoDS against log p(e2|e1)"),
         OVERWRITE, *CLUSTER),
        config="configs/domain_pivot.py"),
}
