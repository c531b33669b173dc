#!/bin/bash
# A GRAN trains on the same pairs read from seqio's cache as from the
# scored file (docs/filtering.md's three commands): 4,000 Wiki-Auto records
# (human pairs as back-translation records) scored and filtered on Apache
# Beam's DirectRunner, the filtered Task cached by `paraflax cache-task`,
# and configs/gran.py trained for 40 updates on 240 of its pairs from the
# file and from the cache, each evaluated on STS. The two training logs are
# compared byte for byte.
#   lab/experiments/seqio_cache/file_vs_cache.sh
# Outputs in runs/seqio_cache/: gran_file/sts.json and gran_cache/sts.json
# (lab/results/runs/seqio_cache/). A step whose output exists is skipped,
# so the same command resumes a killed run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd); cd "$ROOT"
P=${P:-paraflax}; R=runs/seqio_cache; mkdir -p $R
FILTER=overlap_1,0.3,0.95; MAX_PAIRS=240; STEPS=40
# configs/gran.py starts from the PPDB words (its header's first commands).
if [ ! -s runs/ppdb_words/word_vectors.txt ]; then
  $P train --config configs/ppdb_words.py --workdir runs/ppdb_words
  $P export-words --workdir runs/ppdb_words
fi
if [ ! -s $R/bt.jsonl ]; then
  $P export-pairs --task paraphrase_en_wikiauto --output $R/wikiauto.jsonl
  head -n 4000 $R/wikiauto.jsonl > $R/bt.jsonl.tmp
  mv $R/bt.jsonl.tmp $R/bt.jsonl
fi
if [ ! -s $R/refs.lm ]; then
  python -c "import gzip, sys; from paraflax.data import paths
sys.stdout.write(gzip.open(paths.data_path('multi30k_task1', 'val.en.gz'), 'rt', encoding='utf-8').read())" > $R/refs.txt
  $P train-lm --input $R/refs.txt --output $R/refs.lm
fi
if [ ! -s $R/bt.scored.jsonl ]; then
  $P beam-score --input $R/bt.jsonl --output $R/bt.scored.jsonl --lm $R/refs.lm \
    --filtered-output $R/bt.kept.jsonl --filter $FILTER --max-pairs $MAX_PAIRS --seed 0
fi
if ! ls $R/cache/*/COMPLETED > /dev/null 2>&1; then
  $P cache-task --task backtranslated:$R/bt.scored.jsonl --filter $FILTER \
    --max-pairs $MAX_PAIRS --seed 0 --output $R/cache
fi
for from in file cache; do
  extra=(); [ $from = cache ] && extra=(--config.data.cache_dir=$R/cache)
  if [ ! -s $R/gran_$from/sts.json ]; then
    # data.mixture=(): the filtered pairs alone, not configs/gran.py's mix.
    $P train --config configs/gran.py --workdir $R/gran_$from \
      --config.data.mixture="()" --config.data.task=backtranslated:$R/bt.scored.jsonl \
      "--config.data.filter={'score': 'overlap_1', 'lo': 0.3, 'hi': 0.95}" \
      --config.data.max_pairs=$MAX_PAIRS --config.train_steps=$STEPS "${extra[@]}"
    $P eval-sts --workdir $R/gran_$from
  fi
done
if cmp -s $R/gran_file/metrics.jsonl $R/gran_cache/metrics.jsonl; then
  echo "file_vs_cache: the two metrics.jsonl are identical"
else
  echo "file_vs_cache: the two metrics.jsonl differ" >&2; exit 1
fi
