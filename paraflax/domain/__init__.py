"""Domain-adapted paraphrasing (docs/domain.md).

Moore-Lewis subsampling of a general bitext by an in-domain text
(`selection`), bilingual pivot paraphrases of the selected pairs and their
reranking by monolingual distributional similarity with LSH signatures.
Every command streams its corpora, so that the same config runs on tens of
millions of pairs.
"""
