# The argument checks of the launchers, sourced by each (not run): every
# check that fails prints what is wrong and exits with status 2.

# need_args N USAGE ARGS...: at least N arguments, else the usage line.
need_args() {
  local n=$1 usage=$2
  shift 2
  (($# >= n)) || { echo "$usage" >&2; exit 2; }
}

# need_config CONFIG: the config's file (CONFIG up to a :preset) exists.
need_config() {
  [[ -f ${1%%:*} ]] || { echo "$0: config file ${1%%:*} not found" >&2
    exit 2; }
}

# take_config_workdir ARGS...: the arguments CONFIG WORKDIR
# [--config.key=value ...], checked: sets `config`, `workdir` and
# `overrides` (the rest, an array).
take_config_workdir() {
  need_args 2 "usage: $0 CONFIG WORKDIR [--config.key=value ...]" "$@"
  config=$1 workdir=$2 overrides=("${@:3}")
  need_config "$config"
}

# need_paraflax: sets `paraflax` to $PARAFLAX, or .venv/bin/paraflax, and
# checks that it runs.
need_paraflax() {
  paraflax=${PARAFLAX:-.venv/bin/paraflax}
  [[ -x $paraflax ]] || { echo "$0: $paraflax not found; install first" \
    "(README) or set PARAFLAX to the paraflax command" >&2; exit 2; }
}
