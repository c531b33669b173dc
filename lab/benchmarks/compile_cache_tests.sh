# The session compilation cache on tests/test_training.py: off, then on.
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD PARAFLAX_DATA_DIR=${PARAFLAX_DATA_DIR:-../shared/data}
for side in off on; do
  echo "== $side start $(date -u +%T) load $(cat /proc/loadavg)"
  if [ $side = off ]; then export PARAFLAX_COMPILATION_CACHE=off; else unset PARAFLAX_COMPILATION_CACHE; fi
  /usr/bin/time -f "$side wall %e s user %U s sys %S s" .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_training.py --durations=15 2>&1 | grep -v "^$" | tail -25
  echo "== $side end $(date -u +%T) load $(cat /proc/loadavg)"
done
