"""Scores and filters of back-translated paraphrase pairs (Wieting,
Mallinson & Gimpel 2017, sections 5.4-5.7)."""
