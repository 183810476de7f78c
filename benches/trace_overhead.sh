#!/usr/bin/env bash
# What `--trace FILE` and SWAMP_LOG cost a push: N small files pushed to a
# directory bucket (`endpoint=file://`, no server in the way), each run
# into a fresh bucket, with no tracing, with `--trace`, and with
# SWAMP_LOG=debug to /dev/null. Medians of RUNS runs; `cp -r` of the same
# tree is the filesystem floor.
#
#   bash benches/trace_overhead.sh [N] [RUNS]      (SWAMP_BIN=... to reuse a build)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
n="${1:-2000}"
runs="${2:-5}"
swamp="${SWAMP_BIN:-$here/target/release/swamp}"
[ -x "$swamp" ] || cargo build --release --manifest-path "$here/Cargo.toml" --bin swamp
swamp="$(realpath "$swamp")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export SWAMP_HOME="$work/home" USER=bench
ms() { echo $(( $(date +%s%N) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# One push of a fresh tree into a fresh bucket, as `mode` says; prints ms.
one() {
    local mode="$1"
    rm -rf "$work/repo" "$work/bkt" "$SWAMP_HOME"
    mkdir -p "$work/repo" "$work/bkt/b"
    (cd "$work/repo" && "$swamp" init -q --datastore "s3://b/p?endpoint=file://$work/bkt" >/dev/null)
    local root
    root="$SWAMP_HOME/repos/$(cd "$work/repo" && "$swamp" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["repo_id"])')"
    mkdir -p "$root/outputs/a"
    for f in $(seq "$n"); do echo "$f" > "$root/outputs/a/f$f.txt"; done
    sync
    local t0 t1
    t0=$(ms)
    case "$mode" in
        none) (cd "$work/repo" && "$swamp" -q datastore sync --push -y >/dev/null) ;;
        trace) (cd "$work/repo" && "$swamp" -q --trace "$work/t.jsonl" datastore sync --push -y >/dev/null) ;;
        log) (cd "$work/repo" && SWAMP_LOG=debug "$swamp" -q datastore sync --push -y >/dev/null 2>/dev/null) ;;
        cp) cp -r "$root/outputs" "$work/bkt/copy" && sync ;;
    esac
    t1=$(ms)
    echo $((t1 - t0))
}
# The modes take turns, run after run: the disk's state drifts as runs go.
for i in $(seq "$runs"); do
    for mode in none trace log cp; do
        echo "$mode $(one "$mode")" >> "$work/times"
    done
done
of() { awk -v m="$1" '$1 == m {print $2}' "$work/times" | median; }
base=$(of none); tr=$(of trace); lg=$(of log); floor=$(of cp)
lines=$(wc -l < "$work/t.jsonl")
echo "push of $n files, median of $runs runs (ms): none $base, --trace $tr ($lines lines), SWAMP_LOG=debug $lg; cp -r floor $floor"
awk -v b="$base" -v t="$tr" -v l="$lg" 'BEGIN {printf "ratios to none: --trace %.2f, SWAMP_LOG=debug %.2f\n", t/b, l/b}'
