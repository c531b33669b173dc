#!/bin/bash
# A GPU's quality and speed check of the de-en models: the de-en NMT
# and bilingual models trained side by side on the one GPU for TRAIN_S
# seconds each (killed then: runs resume, and the best checkpoint by dev
# score is kept), then at once: the NMT's newstest2013 BLEU (all lines,
# beam 5) and the back-translations of the filtering tables (beam 5, 5-best); the
# bilingual model's alignment-recovery and ParaCrawl tables and its mining
# P/R/F1; last, alone on the GPU, the mining benchmark against
# sentence-transformers' search on the same GPU (mining_throughput.py),
# then 8 simulated CPU devices against 1 on the machine's CPU cores. On
# an H100 machine: training 246 s, evaluations and
# back-translations 148 s more; the mining benchmark then needs a few
# minutes more (each child starts jax or torch): give it a call of its own
# where device time is short.
#
# The GPU image has jax (CUDA) but no TensorFlow, so paraflax runs through
# lab/benchmarks/gpu/no_tf.py. The repository root must hold .whl/ (the wheels
# of ml-collections, flax, optax, orbax-checkpoint and faiss-cpu that
# constraints.txt pins) and .devdata/: the corpora of PARAFLAX_DATA_DIR,
# filter_tables/<file>.{src,ref} from lab/experiments/filter_tables/prep.py, mining/{dev,test}
# from `paraflax mining-set --lang de` and, optionally, spm/, a
# sentencepiece cache that already holds the de-en model.
# OUT_DIR gets results.tar.gz (logs, metrics, tables; rewritten after each
# phase) and the back-translations, <file>.bt.jsonl.gz.
# lab/results/gpu_session.de-en.nvidia-h100/ is an H100 session's
# results.tar.gz, unpacked; the tables and config headers read its logs.
#   bash lab/benchmarks/gpu/session.sh OUT_DIR
OUT=${1:?usage: session.sh OUT_DIR}
TRAIN_S=${TRAIN_S:-240}  # seconds of training of each model
AFTER_S=${AFTER_S:-170}  # seconds for the evaluations and back-translations
EVERY=${EVERY:-1000}  # steps between dev evaluations and checkpoints
PLATFORM=${PLATFORM:-cuda}  # jax's platform for the mining benchmark
T0=$(date +%s)
say() { echo "== $(( $(date +%s) - T0 )) s: $*"; }

# Several jobs share the GPU: none may take most of its memory up front.
export XLA_PYTHON_CLIENT_PREALLOCATE=false
source lab/benchmarks/gpu/env.sh

PF="python3 lab/benchmarks/gpu/no_tf.py"
R=/tmp/runs S=/tmp/results  # workdirs; what results.tar.gz holds
mkdir -p $R $S $OUT
pack() { tar czf $OUT/results.tar.gz -C $S .; }
train() {  # NAME CONFIG: trained until TRAIN_S is up
  timeout -s KILL $TRAIN_S $PF train --config $2 --workdir $R/$1 \
    --config.train_steps=100000 --config.eval_every=$EVERY \
    --config.checkpoint.every=$EVERY > $S/$1.train.log 2>&1
}
watch() {  # time, last metrics row of each and GPU load, every 10 s
  while sleep 10; do
    echo "$(( $(date +%s) - T0 )) nmt $(tail -qn1 $R/nmt_de/metrics.jsonl \
      2>/dev/null | cut -c1-60) bi $(tail -qn1 $R/bi_de/metrics.jsonl \
      2>/dev/null | cut -c1-60) gpu $(nvidia-smi --query-gpu=utilization.gpu,\
memory.used --format=csv,noheader)"
  done
}

say "train nmt_de and bi_de for $TRAIN_S s each"
watch > $S/progress.log & watcher=$!
train nmt_de configs/nmt.py:de & nmt=$!
train bi_de configs/bilingual.py:de & bi=$!
wait $nmt $bi; kill $watcher
say "trained"; tail -n3 $S/progress.log
for w in nmt_de bi_de; do
  cp $R/$w/metrics.jsonl $S/$w.metrics.jsonl
  cp $R/$w/config.json $S/$w.config.json
  ls $R/$w/best > $S/$w.best_step
done
pack

after() { timeout -s KILL $AFTER_S "$@"; }
{ after $PF eval --workdir $R/nmt_de --only dev_all > $S/nmt_de.eval.log 2>&1
  say "nmt eval rc $?"; } &
{ for f in multi30k_de_en opennmt_wmt_de_en; do
    after $PF backtranslate --workdir $R/nmt_de --src .devdata/filter_tables/$f.src \
      --ref .devdata/filter_tables/$f.ref --output $R/$f.bt.jsonl --beam 5 --nbest 5 \
      --stop best_ended --batch-size 64 > $S/$f.bt.log 2>&1
    say "backtranslate $f rc $?"
    gzip -c $R/$f.bt.jsonl > $OUT/$f.bt.jsonl.gz
  done; } &
{ after $PF eval --workdir $R/bi_de > $S/bi_de.eval.log 2>&1
  say "bilingual eval rc $?"
  for s in dev test; do for side in src:de tgt:en; do
    $PF embed --workdir $R/bi_de --input .devdata/mining/$s/${side%:*}.txt \
      --lang ${side#*:} --output $R/$s.${side%:*}.f32 >> $S/bi_de.mining.log 2>&1
  done; done
  $PF mining-eval --dev .devdata/mining/dev --test .devdata/mining/test \
    --dev-src-emb $R/dev.src.f32 --dev-tgt-emb $R/dev.tgt.f32 \
    --test-src-emb $R/test.src.f32 --test-tgt-emb $R/test.tgt.f32 --dim 512 \
    --output $S/bi_de.mining_eval.json >> $S/bi_de.mining.log 2>&1
  say "mining eval rc $?"; } &
wait
pack

# Each child starts jax or torch on the GPU (15-20 s on the H100 machine).
# faiss-gpu has no wheel for the lent machine's CUDA, and faiss on its CPU
# cores would be no comparison: the peer is torch on the same GPU.
say "mining benchmark"
for spec in "256 50000" "512 50000" "512 100000"; do
  set -- $spec
  timeout 150 python3 lab/benchmarks/mining_throughput.py --platform $PLATFORM \
    --devices 1 --dim $1 --sizes $2 --max-seconds 100 \
    --methods ours sentence_transformers roofline_jax \
    --output $S/mining_throughput_gpu_d$1_n$2.json 2>&1 | tail -n6
  pack
done
# 8 simulated devices no slower than 1, which
# 2 cores cannot show (XLA's bare product alone is 1.02-1.09x slower on 8
# simulated devices there). The GPU machine's CPU has 8 cores or more: one
# for each simulated device. Two rounds, alternated, since the host's
# load moves whole runs by 10 % and more.
say "8 simulated CPU devices against 1"
for round in a b; do
  timeout 150 python3 lab/benchmarks/mining_throughput.py --platform cpu \
    --devices 1 8 --dim 256 --sizes 50000 --methods ours roofline_jax \
    --max-seconds 60 --output $S/mining_throughput_cpu_devices_$round.json \
    2>&1 | tail -n4
  pack
done
say "done"
tail -n4 $S/nmt_de.eval.log $S/bi_de.mining.log
grep -A16 "== tests" $S/bi_de.eval.log | head -n8
