"""Accuracy of a reference classifier on every id of another back-translation
JSONL (each reference and its best translation that is not a copy, as the
classifier's own dev/test accuracy): usage clf_accuracy.py WORKDIR BT.jsonl."""
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))  # lab/
# pylint: disable=g-import-not-at-top,wrong-import-position,unused-import
from benchmarks import children  # jax on the CPU, before jax is imported
from paraflax.data import nbest
from paraflax.recipes import ref_classifier

workdir, path = sys.argv[1:3]
prob, params, step = ref_classifier.load_for_inference(workdir)
groups = ref_classifier.with_negative(nbest.read_groups(path), path)
texts, labels = ref_classifier.labelled(groups)
right = (prob(params, texts) > 0.5) == (labels == 1)
print(f"{workdir} (step {step}) on {path}: accuracy {100 * np.mean(right):.2f} % "
      f"on {len(labels)} sentences of {len(groups)} ids")
