"""The names the command line offers, defined once and importing nothing.

`--help` must answer without loading jax, so the registries that implement
these names (beam search stop rules, margins, similarities, ...) cannot be
imported to list them; they use these names, and `tests/test_commands.py`
checks that each registry and its tuple here match.
"""

STOP_RULES = ("exact", "k_finished", "best_ended")  # decoding.beam_search.STOP_RULES
MARGINS = ("ratio", "distance", "absolute")  # mining.margin.MARGINS
RETRIEVALS = ("fwd", "bwd", "intersect", "max")  # mining.margin.STRATEGIES
KNN_BACKENDS = ("jax", "faiss")  # mining.searches.BACKENDS
FAISS_INDEXES = ("flat", "ivf")  # mining.faiss_knn.INDEXES
INDEX_METRICS = ("ip", "l2")  # mining.index_spec.METRICS
SIMILARITIES = ("cosine", "euclidean", "csls", "mlp")  # similarity.SIMILARITIES
ALIGN_BASELINES = ("levenshtein", "nmt_posterior")  # text_baselines
MLP_NEGATIVES = ("worst", "band", "random", "shuffled")  # mlp_similarity
MINING_LANGS = ("de", "fr", "cs")  # evaluation.mining_set.SIDES
MINING_SPLITS = ("dev", "test")  # evaluation.mining_set.GOLD_SETS
EMPTY_LINES = ("error", "drop")  # data.readers.EmptyPolicy, less "keep"
# filtering.scores.SCORERS and .OPTIONAL (those need a flag of
# score-paraphrases); also what data.filter may name (data/filters.py)
PARAPHRASE_SCORES = ("length", "cost", "cost_token", "overlap_1",
                     "overlap_2", "overlap_3", "bleu", "ref_prob", "lm_ppl")
LM_FORMATS = ("binary", "arpa")  # filtering.lm.FORMATS
DOMAINS = ("biomed", "abc_science")  # evaluation.domain_selection.DOMAINS
# pipeline.stages.STAGES, in the order a pipeline runs them
PIPELINE_STAGES = ("nmt", "backtranslate", "score", "words", "gran", "sts",
                   "bilingual", "mining", "report")
