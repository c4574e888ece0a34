#!/usr/bin/env bash
# The README's test command under load (issue 43): a fresh clone of this checkout's HEAD,
# the command run RUNS times in a row (the first installs, as the README says; the
# others reuse that environment), hypothesis drawing fresh examples each time, beside
# BURN busy-loop processes of its own (add your own heavy job too: the figures in
# docs/installation.md ran beside the suite's certification).  The 1-minute load average
# is logged every 30 s.  Usage: benchmarks/tests_under_load.sh OUTDIR [RUNS=3] [BURN=1]
set -u
out=$(realpath -m "${1:?give an output folder}")
runs=${2:-3}
burn=${3:-1}
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
mkdir -p "$out"
[ -e "$out/clone" ] && { echo "$out/clone exists; give a new output folder" >&2; exit 2; }
git clone -q "$repo" "$out/clone" && cd "$out/clone" || exit 1
echo "commit $(git rev-parse --short HEAD)" > "$out/log"
pids=()
for _ in $(seq "$burn"); do python3 -c 'while True: pass' & pids+=($!); done
( while sleep 30; do echo "$(date +%H:%M:%S) $(cut -d' ' -f1-3 /proc/loadavg)"; done \
  >> "$out/load.txt" ) & pids+=($!)
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
for i in $(seq "$runs"); do
  start=$SECONDS
  if [ "$i" = 1 ]; then
    bash -c 'python3 -m venv .venv && . .venv/bin/activate && pip install ".[test]" && python -m pytest' > "$out/run$i.txt" 2>&1
  else
    bash -c '. .venv/bin/activate && python -m pytest' > "$out/run$i.txt" 2>&1
  fi
  echo "run $i rc=$? $((SECONDS - start)) s $(tail -1 "$out/run$i.txt")" >> "$out/log"
done
awk '{print $2}' "$out/load.txt" | sort -n | awk '{a[NR]=$1} END {if (NR) print "1-minute load: min", a[1], "median", a[int((NR+1)/2)], "max", a[NR], "(" NR " samples)"}' >> "$out/log"
cat "$out/log"
