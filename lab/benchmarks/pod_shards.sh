#!/usr/bin/env bash
# Rows read and peak RSS of each process of an NMT run with data.parts=4,
# over 1, 2 and 4 processes (8 CPU devices in all, launch/local_processes.sh):
# the 9,999 OpenNMT WMT de-en pairs of the data folder written as 8 gzipped
# TSV shards (a pod's sharded corpus), 2 updates of a 24-unit model.
#   bash lab/benchmarks/pod_shards.sh OUT [PROCESS_COUNTS...]   (default: 1 2 4)
#   PARTS=1 bash lab/benchmarks/pod_shards.sh OUT 4   (every process reads all)
# Each process's peak RSS is /usr/bin/time's; the rows it read are the pairs
# of its parts' encoded caches (the files of the other parts are not opened).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: $0 OUT [PROCESS_COUNTS...]}; shift
counts=("${@:-1 2 4}")
mkdir -p "$out/shards"
data=${PARAFLAX_DATA_DIR:-../shared/data}/opennmt_wmt_ende_10k
.venv/bin/python - "$data" "$out/shards" <<'EOF'
import gzip, sys
data, shards = sys.argv[1:]
read = lambda f: gzip.open(f"{data}/{f}", "rt", encoding="utf-8").read()
# OpenNMT's source side is English: German first, English second.
pairs = [(de.strip(), en.strip()) for en, de in
         zip(read("src-train.txt.gz").splitlines(),
             read("tgt-train.txt.gz").splitlines())
         if de.strip() and en.strip() and "\t" not in de + en]
for k in range(8):
  with gzip.open(f"{shards}/part-{k:02d}.tsv.gz", "wt", encoding="utf-8") as f:
    f.writelines(f"{s}\t{t}\n" for s, t in pairs[k::8])
print(f"{len(pairs)} pairs in 8 shards")
EOF
timed=$out/paraflax_timed
printf '#!/bin/bash\nexec /usr/bin/time -f "peak_rss_kb=%%M" %q "$@"\n' \
  "$PWD/.venv/bin/paraflax" > "$timed"
chmod +x "$timed"
for procs in ${counts[@]}; do
  w=$out/p$procs.parts${PARTS:-4}
  rm -rf "$w" "$w.logs"
  PARAFLAX=$timed launch/local_processes.sh "$procs" $((8 / procs)) \
    configs/nmt.py:de "$w" \
    "--config.data.train=('tsv:$out/shards/*.tsv.gz',)" \
    --config.data.parts="${PARTS:-4}" --config.vocab.size=600 --config.model.emb_dim=24 \
    --config.model.hidden=24 --config.model.attention_dim=24 \
    --config.batch_size=32 --config.data.max_len=32 \
    --config.data.width_multiple=32 --config.train_steps=2 \
    --config.log_every=1 --config.eval_every=1000 \
    --config.checkpoint.every=1000 --config.evals.dev.sentences=4 \
    > "$w.out" 2>&1
  for ((i = 0; i < procs; i++)); do
    log=$w.logs/process_$i.log
    echo "processes=$procs process=$i $(grep -o 'peak_rss_kb=[0-9]*' "$log")" \
      "skipped (over max_len) of read: $(grep -o 'train[a-z0-9 ]*: [0-9]* of [0-9]*' "$log" | tr '\n' ' ')"
  done
  .venv/bin/python - "$w" <<'EOF'
import glob, json, sys
for f in sorted(glob.glob(f"{sys.argv[1]}/data_cache/bitext*/settings.json")):
  r = json.load(open(f))
  print(f"  {f.split('/')[-2]}: {r['info']['pairs']} pairs read, {r['rows']} kept")
print("  losses:", [json.loads(l)["loss"] for l in open(f"{sys.argv[1]}/metrics.jsonl") if '"loss"' in l])
EOF
done
