#!/bin/bash
# The filter tables' wikiauto rows: the 16,000 human wikiauto pairs exported
# as records (sentence1 the reference, sentence2 the translation; no NMT, so
# no cost and no cost grid), scored with a 3-gram LM and a reference
# classifier of a language's run (language.sh writes both: LANG_FILE.lm on
# its held-apart references, refclf_LANG), then every other grid of
# language.sh and the two ranges grids. Steps whose output exists are
# skipped; a rerun resumes.
#   [ENC=avg|gran] [LANES=n] lab/experiments/filter_tables/wikiauto.sh LM CLASSIFIER_WORKDIR
#   (e.g. newstest_pool_cs_en.lm refclf_cs, paths in $RUN_DIR)
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
[ $# -eq 2 ] || { sed -n 9,10p "$0"; exit 2; }
R=${RUN_DIR:-$ROOT/runs/filter_tables}; mkdir -p "$R"; R=$(realpath "$R"); cd "$R"
lm=$1; clf=$2; P=${P:-paraflax}; enc=${ENC:-avg}; name=wikiauto
[ -s "$lm" ] && [ -d "$clf/best" ] || {
  echo "wikiauto.sh: $R/$lm or $R/$clf/best is missing: run language.sh for a language first" >&2; exit 2; }
echo "== $name prepare start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
$P export-pairs --task paraphrase_en_wikiauto --output $name.jsonl > $name.export.log 2>&1 || exit 1
[ -s $name.scored.jsonl ] || { time $P score-paraphrases --input $name.jsonl --output $name.scored.jsonl \
  --lm "$lm" --classifier-workdir "$clf"; } > $name.score.log 2>&1 || exit 1
. $ROOT/lab/experiments/filter_tables/grids.sh
RUN_DIR=$R bash $ROOT/lab/experiments/filter_tables/sweeps.sh $name $enc "${GRIDS[@]}" "${RANGES[@]}"
echo "== $name done $(date -u +%T)"
