#!/usr/bin/env bash
# Times a namespace migration that must move file by file (the files were
# written just now, so apply's whole-directory rename does not vouch for
# them), beside `mv` of the tier directory (the filesystem floor), and
# counts the fsyncs each makes (strace). N files (default 5000) in 50
# directories of `outputs/`.
#
#   benches/moves_per_file.sh [N]     # RUNS=3 by default
#   SWAMP_BIN=path ...                # that binary instead of a release build
#   SWAMP_BASE_BIN=path ...           # also time an earlier build
#
# Needs python3 and strace. Nothing here asserts on time.
set -euo pipefail
N="${1:-5000}"
RUNS="${RUNS:-3}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "${SWAMP_BIN:-}" ]]; then (cd "$ROOT" && cargo build --release --quiet); fi
SWAMP="${SWAMP_BIN:-$ROOT/target/release/swamp}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/swamp-moves.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

fill() {
    python3 - "$1" "$N" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    p = os.path.join(root, f"d{i % 50:02}", f"f{i:06}.yaml")
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(f"{i}\n")
PY
}
# One run of `label`: a fresh repo, then the migration; prints seconds and fsyncs.
run_swamp() {
    local bin="$1" d="$WORK/run"
    rm -rf "$d" && mkdir -p "$d"
    (cd "$d" && SWAMP_HOME="$d/home" "$bin" init >/dev/null 2>&1)
    fill "$d/.swamp/outputs"
    local s e
    s=$(date +%s.%N)
    (cd "$d" && SWAMP_HOME="$d/home" strace -f -qq --seccomp-bpf -c -e trace=fsync,fdatasync -o "$WORK/st" \
        "$bin" datastore namespace set ns --migrate -y >"$WORK/out" 2>&1) ||
        { echo "error: the migration failed:" >&2; tail -n 5 "$WORK/out" >&2; exit 1; }
    e=$(date +%s.%N)
    local moved
    moved=$(find "$d/.swamp/ns" -type f | wc -l)
    [[ "$moved" -eq "$N" ]] || { echo "error: $moved of $N files moved" >&2; exit 1; }
    echo "$(echo "$e - $s" | bc) $(awk '/total/ {print $4}' "$WORK/st")"
}
run_mv() {
    local d="$WORK/run"
    rm -rf "$d" && mkdir -p "$d/a" "$d/b"
    fill "$d/a/outputs"
    local s e
    s=$(date +%s.%N)
    mv "$d/a/outputs" "$d/b/outputs" && sync -f "$d/b"
    e=$(date +%s.%N)
    echo "$(echo "$e - $s" | bc) -"
}
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
declare -A T=() F=()
labels=("swamp (per-file moves)" "mv of the tier dir")
[[ -n "${SWAMP_BASE_BIN:-}" ]] && labels+=("base swamp (per-file moves)")
for _ in $(seq "$RUNS"); do
    for label in "${labels[@]}"; do
        case "$label" in
            "swamp (per-file moves)") out=$(run_swamp "$SWAMP") ;;
            "base swamp (per-file moves)") out=$(run_swamp "$SWAMP_BASE_BIN") ;;
            *) out=$(run_mv) ;;
        esac
        T[$label]+="${out%% *} "
        F[$label]="${out##* }"
        echo "   $label: $out" >&2
    done
done
echo "per-file moves of $N files written just now, $(nproc) CPUs; medians of $RUNS"
printf '%-32s %10s %8s\n' step "median s" fsyncs
for label in "${labels[@]}"; do
    printf '%-32s %10.3f %8s\n' "$label" "$(echo "${T[$label]}" | tr ' ' '\n' | grep -v '^$' | median)" "${F[$label]}"
done
