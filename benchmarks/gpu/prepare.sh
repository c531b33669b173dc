#!/bin/bash
# Makes what benchmarks/gpu/session.sh reads, here, before a lent GPU
# session: .whl/ (wheels for the GPU machine's Python 3.12) and .devdata/
# (the corpora and the inputs of the back-translations and of mining).
# Both are left out of git (.gitignore) and travel as the device tool's
# `carry` ([".whl", ".devdata"]).
#   bash benchmarks/gpu/prepare.sh   (from the repository root, after the
#                                     README's install)
set -euo pipefail
DATA=${PARAFLAX_DATA_DIR:-../shared/data}
mkdir -p .whl .devdata/i11
for pin in ml-collections flax optax orbax-checkpoint faiss-cpu; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_27_x86_64 --platform manylinux2014_x86_64 -d .whl \
    "$(grep -i "^$pin==" constraints.txt)"
done
for corpus in multi30k_task1 newstest_train_pool opennmt_wmt_ende_10k \
              newstest_dev paracrawl_human_eval; do
  cp -r "$DATA/$corpus" .devdata/
done
(cd .devdata/i11 && ../../.venv/bin/python ../../experiments/filter_tables/prep.py \
  multi30k_de_en opennmt_wmt_de_en)
for split in dev test; do
  .venv/bin/paraflax mining-set --lang de --split $split \
    --output .devdata/mining/$split --overwrite
done
du -sh .whl .devdata
