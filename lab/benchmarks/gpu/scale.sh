#!/bin/bash
# The scale checks one lent GPU runs (docs/scaling-out.md), each phase with
# its own time limit, its results packed into OUT/results.tar.gz as it ends:
#  1. lab/benchmarks/gpu/device_utilization.py: the train step of
#     configs/nmt.py:de under the loop that synchronises every step and the
#     prefetching loop of training/loop.py (steps/s, target tokens/s, the
#     share of a profiled stretch the device was busy), and the beam
#     search's sentences/s at beam 5;
#  2. the pipeline's gpu preset (configs/pipeline.py:gpu): its models,
#     batches and decoding, every stage cut short (below), for each
#     stage's rate on this device;
#  3. lab/benchmarks/mining_throughput.py on the GPU: exact margin mining of
#     N x N random embeddings (d 512), product, merge and scoring apart,
#     beside sentence-transformers' semantic_search on the same GPU (torch;
#     faiss-gpu has no wheel for this CUDA) and the bare product;
#  4. `paraflax compile --topology local --measure`: each train step of the
#     gpu preset's models (nmt, gran, bilingual), the beam search and the
#     k-NN block compiled for this device and run, the measured step time
#     and FLOP/s beside the roofline projection for the device's chip
#     (paraflax/aot/chips.py), written as compile_<program>.json.
# The GPU image has jax (CUDA) but no TensorFlow or KenLM: paraflax runs
# through lab/benchmarks/gpu/no_tf.py and the score stage leaves lm_ppl out.
# The repository root must hold .whl/ and .devdata/ (lab/benchmarks/gpu/
# prepare.sh makes both; the device tool carries them).
#   bash lab/benchmarks/gpu/scale.sh OUT
# PLATFORM=cpu SMALL=1 PYTHON=.venv/bin/python runs every phase at toy
# sizes on a CPU (a check of this script before a GPU is spent on it).
# PHASES="pipeline mining" runs only those phases (of util, pipeline,
# mining, compile); LIMIT=SECONDS is the pipeline phase's time limit (240),
# COMPILE_S each compiled program's (240);
# METHODS="ours" the mining methods (ours sentence_transformers
# roofline_jax; PEER_PYTHON the peer's python, PYTHON's by default). KEEP=1
# keeps the pipeline's workdir of an earlier call on the same (warm)
# machine: the pipeline resumes at the stage it was stopped in.
# NMT_WIDTH=8 pads the pipeline phase's NMT batches (training and decoding)
# to multiples of 8 instead of the preset's 32: a compiled step per width.
OUT=${1:?usage: scale.sh OUT}
T0=$(date +%s)
say() { echo "== $(( $(date +%s) - T0 )) s: $*"; }

# Relative to the repository root, so that no file's recorded command
# names a folder of the lent machine.
S=.scale_results; rm -rf $S; mkdir -p $S $OUT
# scale.log in the results: the machine (env.sh prints it), the settings,
# each phase's times.
exec > >(tee $S/scale.log) 2>&1
settings=()
for v in PHASES NMT_WIDTH LIMIT COMPILE_S SMALL METHODS PLATFORM KEEP; do
  [ -n "${!v}" ] && settings+=("$v=${!v}")
done
echo "scale.sh $(date -u +%FT%TZ) ${settings[*]}"
echo "commit $(git rev-parse HEAD 2>/dev/null || echo 'unknown (no .git)')"
source lab/benchmarks/gpu/env.sh
# run.json: the command, commit, machine, versions and load of this run,
# and at the end its wall and CPU seconds.
$PY lab/benchmarks/gpu/scale_record.py start $S/run.json "${settings[@]}"
[ -n "$KEEP" ] || rm -rf /tmp/scale_pipe
pack() { tar czf $OUT/results.tar.gz -C $S .; }
PF="$PY lab/benchmarks/gpu/no_tf.py"

if [ -n "$SMALL" ]; then
  UTIL="--tiny --steps 6 --log-every 3 --profile 2 --sentences 16 --beam-batch 8"
  NMT=20 EVAL=10 GRAN=40 BI=20 BT=20 BEAM=4 SIZES="2000" ; LIMIT=${LIMIT:-600}
else
  UTIL="--steps 300 --profile 20 --sentences 2048"
  NMT=1000 EVAL=1000 GRAN=320 BI=2000 BT=600 BEAM=50 SIZES="100000 200000"
  LIMIT=${LIMIT:-240}
fi
PHASES=${PHASES:-"util pipeline mining compile"}
run() { [[ " $PHASES " == *" $1 "* ]]; }

if run util; then
say "train step and beam search"
timeout 150 $PY lab/benchmarks/gpu/device_utilization.py /tmp/util $UTIL \
  2>&1 | tee $S/device_utilization.log | grep -v "^\s*$" | tail -n4
cp /tmp/util/device_utilization.json $S/ 2>/dev/null; pack
fi

if run pipeline; then
say "pipeline, gpu preset, stages cut short"
# GRAN steps count megabatches of 40 updates; evaluations at the end only.
timeout -s KILL $LIMIT $PF pipeline --config configs/pipeline.py:gpu \
  --workdir /tmp/scale_pipe --config.score.lm="" --config.max_pairs=0 \
  "--config.stages=('nmt','backtranslate','score','gran','sts','bilingual','mining','report')" \
  --config.nmt.settings.train_steps=$NMT --config.nmt.settings.eval_every=$EVAL \
  --config.nmt.settings.checkpoint.every=$EVAL \
  ${NMT_WIDTH:+--config.nmt.settings.data.width_multiple=$NMT_WIDTH} \
  --config.backtranslate.sentences=$BT --config.backtranslate.beam=$BEAM \
  --config.backtranslate.nbest=$BEAM \
  --config.gran.settings.train_steps=$GRAN --config.gran.settings.eval_every=$GRAN \
  --config.gran.settings.checkpoint.every=$GRAN \
  --config.bilingual.settings.train_steps=$BI \
  --config.bilingual.settings.eval_every=$BI \
  --config.bilingual.settings.checkpoint.every=$BI > $S/pipeline.log 2>&1
say "pipeline rc $?"; grep "== pipeline" $S/pipeline.log | grep done
cp /tmp/scale_pipe/report.md /tmp/scale_pipe/pipeline.json $S/ 2>/dev/null
pack
fi

if run mining; then
say "mining on the device"
# Each child starts jax or torch on the GPU (15-20 s), 3 methods a size:
# 240 s stopped an H200 before the last child of N = 200,000.
timeout 330 $PY lab/benchmarks/mining_throughput.py --platform $PLATFORM \
  --devices 1 --dim 512 --sizes $SIZES \
  --methods ${METHODS:-ours sentence_transformers roofline_jax} \
  --peer-python ${PEER_PYTHON:-$PY} --max-seconds 60 \
  --output $S/mining_throughput.d512.json 2>&1 | tail -n8
pack
fi
if run compile; then
say "compiled programs measured on the device"
if [ -n "$SMALL" ]; then
  NMTC="--config.vocab.size=600 --config.model.emb_dim=24 --config.model.hidden=24 --config.model.attention_dim=24 --config.batch_size=32 --config.data.max_len=16"
  GRANC="--config.model.word_dim=32 --config.model.hidden=32 --config.batch_size=16 --config.megabatch=4 --config.data.max_len=16 --config.length_groups=1 --config.data.vocab_max_size=2000"
  BIC="--config.vocab.size=600 --config.model.word_dim=24 --config.model.hidden=24 --config.data.max_len=16 --config.batch_size=16"
  CALLS=3 ROWS=20000
else  # the gpu preset's sizes (configs/pipeline.py:gpu)
  NMTC="--config.batch_size=256 --config.data.width_multiple=32"
  GRANC="--config.batch_size=100 --config.data.vocab_max_size=50000"
  BIC="--config.batch_size=128 --config.data.width_multiple=32"
  CALLS=20 ROWS=1000000
fi
for spec in "nmt train configs/nmt.py:de $NMTC" \
            "gran train configs/paraphrase.py:gran $GRANC" \
            "bilingual train configs/bilingual.py:de $BIC" \
            "search backtranslate configs/nmt.py:de $NMTC --batch-size 64" \
            "mine mine configs/mine.py --rows $ROWS --dim 512"; do
  set -- $spec; name=$1 program=$2 config=$3; shift 3
  timeout ${COMPILE_S:-240} $PF compile --config $config --topology local \
    --program $program --measure $CALLS --json $S/compile_$name.json "$@" \
    2>&1 | tail -n8
  pack
done
fi
say "done"
$PY lab/benchmarks/gpu/scale_record.py end $S/run.json $$; pack
