#!/bin/bash
# Makes what lab/benchmarks/gpu/session.sh and scale.sh read, here, before a
# lent GPU session: .whl/ (wheels for the GPU machine's Python 3.12) and
# .devdata/ (the corpora, the inputs of the back-translations and of
# mining, and a sentencepiece cache).
# Both are left out of git (.gitignore) and travel as the device tool's
# `carry` ([".whl", ".devdata"]).
#   bash lab/benchmarks/gpu/prepare.sh   (from the repository root, after the
#                                     README's install)
set -euo pipefail
DATA=${PARAFLAX_DATA_DIR:-../shared/data}
mkdir -p .whl .devdata/filter_tables
for pin in ml-collections flax optax orbax-checkpoint faiss-cpu; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_27_x86_64 --platform manylinux2014_x86_64 -d .whl \
    "$(grep -i "^$pin==" constraints.txt)"
done
for corpus in multi30k_task1 newstest_train_pool opennmt_wmt_ende_10k \
              newstest_dev paracrawl_human_eval sts ppdb_lexical word_freq; do
  cp -r "$DATA/$corpus" .devdata/
done
(cd .devdata/filter_tables && ../../.venv/bin/python ../../lab/experiments/filter_tables/prep.py \
  multi30k_de_en opennmt_wmt_de_en)
for split in dev test; do
  .venv/bin/paraflax mining-set --lang de --split $split \
    --output .devdata/mining/$split --overwrite
done
# The subword models of the gpu preset's NMT and bilingual stages, trained
# here (one step of each stage) into the sentencepiece cache that env.sh
# hands the GPU run: a fresh GPU machine then trains none.
for stage in nmt bilingual; do
  settings="--config.$stage.settings"
  PARAFLAX_DATA_DIR=$PWD/.devdata PARAFLAX_SENTENCEPIECE_CACHE=$PWD/.devdata/spm \
    .venv/bin/paraflax pipeline --config configs/pipeline.py:gpu \
    --workdir "$(mktemp -d)/pipeline" --config.score.lm="" \
    "--config.stages=('$stage',)" $settings.train_steps=1 \
    $settings.eval_every=1 $settings.checkpoint.every=1
done
du -sh .whl .devdata
