"""The evaluate commands: the evaluations of trained models, mined pairs,
domain selections and paraphrase tables."""
from __future__ import annotations

from paraflax import choices
from paraflax.commands.base import (
    BILINGUAL_WORKDIR, CSLS_K, Command, FP16, KEEP_FREED_MEMORY, LANGS,
    OVERWRITE, WORKDIR, flag, setting)

TITLE = "evaluate"

BASELINE = (
    flag("--baseline", choices=choices.ALIGN_BASELINES, action="append",
         help="also a baseline of Kim et al. 2019 without embeddings, "
         "repeatable: levenshtein (character edit distance), nmt_posterior "
         "(log p(en | xx) per subword under --nmt-workdir; N^2 forced "
         "decodings)"),
    flag("--nmt-workdir", help="an X->English NMT workdir, for "
         "--baseline nmt_posterior"))

COMMANDS: dict[str, Command] = {
    "eval": Command(
        "paraflax.inference.evaluate:evaluate",
        "run the evaluators of a trained workdir's config",
        "Runs the evaluators its config names (config.evals: STS, dev BLEU, "
        "alignment accuracy, ...) on the workdir's best checkpoint, prints "
        "their tables and writes them to <workdir>/evals.json (or "
        "--output).",
        (WORKDIR, flag("--only", action="append",
                       help="an evaluator of config.evals; repeat for "
                       "several (default: all)"),
         flag("--decode", action="append", metavar="KEY=VALUE",
              help="an NMT's decoding setting of config.decode for this "
              "evaluation only, e.g. max_output_ratio=0 (no output limit "
              "from the source length); repeatable; the output records "
              "them"),
         flag("--output", metavar="FILE",
              help="where the reports go (default: <workdir>/evals.json)"))),
    "eval-sts": Command(
        "paraflax.inference.evaluate:eval_sts", "STS table of a trained model",
        "Prints the STS table and writes it to <workdir>/sts.json.",
        (WORKDIR,)),
    "mining-eval": Command(
        "paraflax.evaluation.mining:evaluate_folders",
        "mining P/R/F1 on a dev and a test benchmark",
        "Mines both benchmarks (from `paraflax mining-set`) with every "
        "margin x retrieval strategy, picks the F1-optimal threshold on dev "
        "and applies it to test. Prints precision / recall / F1 x 100 (dev "
        "at its optimum, test at the dev threshold, test with no "
        "threshold); embeddings are LASER raw files, row i = line i of the "
        "folder's src.txt / tgt.txt.",
        (flag("--dev", required=True, help="dev benchmark folder"),
         flag("--test", required=True, help="test benchmark folder"),
         *(flag(f"--{split}-{side}-emb", required=True,
                help=f"embeddings of the {split} folder's {side}.txt")
           for split in ("dev", "test") for side in ("src", "tgt")),
         flag("--dim", type=int, required=True,
              help="embedding dimension (e.g. 1024 for LASER)"),
         FP16,
         flag("--k", type=int, default=4,
              help="neighbours per sentence (default: 4)"),
         flag("--output", help="also write the table here as JSON"),
         OVERWRITE)),
    "align-eval": Command(
        "paraflax.inference.scoring:align_eval",
        "sentence alignment recovery error of a bilingual workdir",
        "Shuffles the English side of two line-aligned files, gives every "
        "sentence its nearest neighbour on the other side under each "
        "similarity, and prints the share (%) not matched with their "
        "translation, xx->en, en->xx and their mean.",
        (BILINGUAL_WORKDIR, flag("--src", required=True),
         flag("--tgt", required=True, help="line-aligned with --src"), *LANGS,
         flag("--similarity", choices=choices.SIMILARITIES, action="append",
              help="repeat for several (default: cosine, euclidean, csls, "
              "and mlp once trained)"), CSLS_K,
         flag("--seed", type=int, default=0, help="of the shuffle"),
         flag("--output", help="also write the rows here as JSON"),
         OVERWRITE, *BASELINE)),
    "eval-reconstruction": Command(
        "paraflax.inference.reconstruction:eval_reconstruction",
        "mining P/R/F1 of a known bitext shuffled apart (UN protocol)",
        "Artetxe & Schwenk 2019's UN corpus evaluation on any bitext: both "
        "sides shuffled (--seed), embedded by the workdir's encoders and "
        "mined as `paraflax mine` mines (exact k-NN over each side's "
        "distinct sentences, then every line that holds a mined sentence); "
        "prints precision / recall / F1 x 100 of the known pairs at the "
        "F1-optimal threshold and at each --thresholds, with the pairs "
        "kept and the seconds, one row per --k x --margin x --retrieval.",
        (BILINGUAL_WORKDIR,
         flag("--data", required=True, metavar="SPEC",
              help="the bitext (a data spec: tsv:FILE, lines:SRC,EN, "
              "bitext_newstest_dev_de_en:newstest2012; docs/your-data.md), "
              "apart from the workdir's training and dev data"),
         flag("--k", type=int, nargs="+", default=[4],
              help="neighbours per sentence, one or more (default: 4)"),
         flag("--margin", nargs="+", choices=choices.MARGINS,
              default=["ratio"], help="one or more (default: ratio)"),
         flag("--retrieval", nargs="+", choices=choices.RETRIEVALS,
              default=["max"], help="one or more (default: max)"),
         flag("--thresholds", nargs="+", default=[], metavar="[MARGIN=]T",
              help="fixed thresholds also scored, on the margin's scale "
              "(e.g. 1.0 1.05 1.1 for ratio); MARGIN=T for one margin only"),
         flag("--seed", type=int, default=0, help="of the shuffle"),
         flag("--output", help="also write the rows here as JSON"),
         OVERWRITE)),
    "eval-filtering": Command(
        "paraflax.inference.eval_filtering:eval_filtering",
        "filtering judged by the NMT its selection trains",
        "Scores every pair of a noisy bitext (`paraflax noise-bitext`) with "
        "each similarity of a bilingual workdir (cosine, csls, margin: the "
        "ratio margin with k neighbours a side among its distinct "
        "sentences, as mine; mlp once trained) and with "
        "the file's score columns (column2, ...), keeps the best pairs up "
        "to each --words target words, trains the NMT config on each "
        "selection (same steps and seed; data.train=tsv:OUTPUT/sel_*.tsv) "
        "and reports its dev BLEU (newstest2013) beside a random selection "
        "and the unfiltered corpus, with the count of each kind of noise "
        "kept when NOISY.labels exists. Writes OUTPUT/eval_filtering.json "
        "and OUTPUT.meta.json (the inputs and settings); rerunning resumes, "
        "other inputs or settings are refused unless --overwrite.",
        (BILINGUAL_WORKDIR,
         flag("--noisy", required=True,
              help="NOISY.tsv: source<TAB>target[<TAB>score ...]"),
         flag("--output", required=True, help="a folder"),
         flag("--words", type=int, nargs="+", required=True,
              help="target-word budgets N of the selections"),
         flag("--similarity", action="append",
              choices=("cosine", "csls", "margin", "mlp"),
              help="repeat for several (default: all, mlp once trained)"),
         flag("--nmt-config", default="configs/nmt.py:de",
              help="the NMT experiment trained on each selection"),
         flag("--nmt-override", action="append", default=[],
              metavar="--config.KEY=VALUE",
              help="an override of --nmt-config, repeatable (give it with "
              "'=')"),
         flag("--seed", type=int, default=0, help="of the random selection"),
         flag("--k", type=int, default=4,
              help="margin neighbours a side (default: 4)"),
         OVERWRITE),
        prepare=KEEP_FREED_MEMORY),
    "eval-bilingual": Command(
        "paraflax.inference.scoring:eval_bilingual",
        "alignment recovery and ParaCrawl tables of a bilingual workdir",
        "Alignment recovery on newstest2012 and the Multi30k test sets, "
        "ParaCrawl v3/v6 AUC and precision at 25% beside the bundled "
        "filters, and cosine vs MLP score plots; trains the MLP similarity "
        "first if the workdir has none. Writes WORKDIR/bilingual_eval.json "
        "and WORKDIR/paracrawl_*.png.",
        (BILINGUAL_WORKDIR,
         flag("--k", type=int, default=10, help="csls neighbours"),
         flag("--seed", type=int, default=0, help="of the shuffle"),
         flag("--data", action="append", default=[], metavar="SPEC",
              help="also this bitext as an alignment test set, repeatable "
              "(a data spec: tsv:FILE, lines:SRC,EN; the only sets of a "
              "language without bundled ones)"), *BASELINE)),
    "eval-domain": Command(
        "paraflax.evaluation.domain_selection:evaluate",
        "in-domain perplexity of Moore-Lewis vs random vs n-gram-overlap "
        "selections",
        "For each size of eval_sizes, an eval_order-gram LM (3, paraflax's "
        "choice: the domain paraphrasing paper states no order; "
        "closed vocabulary: the in-domain words seen eval_min_count times, "
        "estimated with lmplz --vocab_pad at its size unless eval_vocab_pad "
        "is False) "
        "on the top-diffCE sentences of a select-domain folder, on as many "
        "random ones and on the ones with the most n-grams in the in-domain "
        "text, all drawn from the sentences outside the general LM's "
        "sample; their perplexity on --test. Writes OUTPUT/results.json, "
        "results.md and perplexity.png; rerunning resumes.",
        (flag("--select-dir", required=True,
              help="a paraflax select-domain output"),
         flag("--test", required=True, help="in-domain test text, one "
              "sentence per line"),
         setting("--eval-seed", type=int, help="of the random selection"),
         flag("--output", required=True, help="folder to write"),
         OVERWRITE),
        config="configs/domain.py",
        compiles=False),
    "eval-ppdb": Command(
        "paraflax.evaluation.ppdb:evaluate_file",
        "agreement of a paraphrase table's words with PPDB",
        "For each single word e1 of TABLE that PPDB's lexical pairs know, "
        "its single-word paraphrases ranked by each of the table's scores "
        "(the score column and every name=value feature): precision of the "
        "top 1 and top 5 against PPDB (a hit is a pair PPDB lists, either "
        "way round). Writes OUT.json and OUT.md with --examples words and "
        "their top paraphrases; --coverage adds the share of a text's 1- to "
        "4-grams that are e1 of the table.",
        (flag("--table", required=True, dest="table_path",
              help="TABLE or RERANKED"),
         flag("--output", required=True, help="OUT prefix (.json, .md)"),
         flag("--ppdb", help="PPDB pairs (word<TAB>word, gzipped or not; "
              "default: ppdb_lexical in the data folder)"),
         flag("--examples", type=int, default=20,
              help="words shown with their top paraphrases (default: 20)"),
         flag("--words", nargs="+", dest="words_shown",
              help="show these words instead"),
         flag("--coverage", nargs="+", dest="coverage_texts",
              help="test text(s): coverage of their 1- to 4-grams by the "
              "table"),
         OVERWRITE),
        compiles=False),
}
