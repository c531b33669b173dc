# Sourced by the GPU scripts (scale.sh, session.sh) from the repository
# root: the carried wheels installed, the environment paraflax runs in on
# the lent machine, and what the machine is. PYTHON names a local
# interpreter with its own packages (no wheels installed); PLATFORM=cpu
# lets jax's backend be the CPU.
PLATFORM=${PLATFORM:-cuda}
PY=${PYTHON:-python3}
if [ -d .whl ] && [ -z "$PYTHON" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
# .devdata/spm/, where prepare.sh's user put a sentencepiece cache that
# holds the de-en models, saves the subword training of every NMT start.
mkdir -p /tmp/spm && cp .devdata/spm/* /tmp/spm/ 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export PARAFLAX_DATA_DIR=$PWD/.devdata PARAFLAX_COMPILATION_CACHE=/tmp/xla \
  PARAFLAX_SENTENCEPIECE_CACHE=/tmp/spm
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null
$PY -c "import jax, flax, optax; print('jax', jax.__version__, 'flax', \
flax.__version__, 'optax', optax.__version__, jax.devices()); \
assert jax.default_backend() == 'gpu' or '$PLATFORM' == 'cpu'" || exit 1
lscpu | grep -E "^Model name|^CPU\(s\)"
