#!/usr/bin/env bash
# Where a sync's peak heap goes (issue 43, item 3: a million objects in
# 300 MB): N files of 4 KiB (default 100000) pushed into SeaweedFS, synced
# again (a no-op), pulled into a new clone and moved to another bucket of
# the server, each under heaptrack, with
# swamp built with the system allocator (`--features system-alloc`:
# heaptrack cannot see into mimalloc). Prints each step's peak heap, bytes
# per file, and the swamp functions holding it at the peak (the innermost
# two swamp frames of each allocation). Heap sizes do not depend on the
# build profile, so the debug build (quicker to build, slower to run)
# answers as well as a release one.
#
#   benches/heap_profile.sh             # N = 100000 (about 6 minutes)
#   benches/heap_profile.sh 20000       # a quick check of the script
#   TOP=20 ...                          # lines per step (default 12)
#   KEEP=1 / SWAMP_BIN=path             # as in the other benches (the
#                                       # binary must use the system allocator)
set -euo pipefail
stage() { echo "$1 [at ${SECONDS}s]" >&2; }

N="${1:-100000}"
TOP="${TOP:-12}"
if ! [[ "$N" =~ ^[1-9][0-9]*$ && "$TOP" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [N]   (N and TOP are positive integers)" >&2
    exit 64
fi
command -v heaptrack >/dev/null && command -v heaptrack_print >/dev/null ||
    { echo "error: heaptrack is needed (apt-get install heaptrack)" >&2; exit 1; }
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "${SWAMP_BIN:-}" ]]; then
    stage "== building swamp with the system allocator (cargo build --features system-alloc)"
    (cd "$ROOT" && cargo build --quiet --features system-alloc)
    export SWAMP_BIN="$ROOT/target/debug/swamp"
fi
BENCH_NAME=swamp-heap
# shellcheck source=benches/s3_bench_setup.sh
source "$ROOT/benches/s3_bench_setup.sh"

REPO_DIR="$WORK/swamp"
CLONE="$WORK/clone"
mkdir -p "$REPO_DIR/repo" "$REPO_DIR/home" "$CLONE/repo" "$CLONE/home"
make_bucket heap
SWAMP_HOME="$REPO_DIR/home" "$SWAMP" --repo "$REPO_DIR/repo" init \
    --datastore "s3://heap/swamp?region=$REGION&endpoint=$S3" >"$WORK/init.log" 2>&1 ||
    { echo "error: swamp init failed:" >&2; cat "$WORK/init.log" >&2; exit 1; }
id=$(awk -F'"' '/^repo_id *=/ {print $2; exit}' "$REPO_DIR/repo/.swamp.toml")
SRC="$REPO_DIR/home/repos/$id/outputs/bench"
stage "== writing $N files of 4 KiB under $SRC"
write_bench_files "$SRC" "$N"
cp "$REPO_DIR/repo/.swamp.toml" "$CLONE/repo/.swamp.toml"

# profiled STEP HOME REPO ARGS...: one swamp run under heaptrack.
profiled() {
    local step="$1" home="$2" repo="$3"
    shift 3
    stage "== $step"
    SWAMP_HOME="$home" heaptrack -o "$WORK/$step" "$SWAMP" --repo "$repo" "$@" >"$WORK/$step.log" 2>&1 ||
        { echo "error: $step failed:" >&2; tail -n 20 "$WORK/$step.log" >&2; exit 1; }
}
profiled push "$REPO_DIR/home" "$REPO_DIR/repo" datastore sync --push -y
profiled noop "$REPO_DIR/home" "$REPO_DIR/repo" datastore sync -y
grep -q "No changes" "$WORK/noop.log" || { echo "error: the no-op sync was not a no-op" >&2; exit 1; }
profiled pull "$CLONE/home" "$CLONE/repo" datastore sync --pull -y
# The datastore moved to another bucket of the server: a server-side copy
# of each object, each old one copied into the old place's trash and
# deleted.
make_bucket heap-moved
profiled move "$REPO_DIR/home" "$REPO_DIR/repo" datastore setup \
    "s3://heap-moved/swamp?region=$REGION&endpoint=$S3" -y

for step in push noop pull move; do
    heaptrack_print -f "$WORK/$step.zst" --flamegraph-cost-type peak -F "$WORK/$step.folded" >/dev/null 2>&1
    python3 - "$WORK/$step.folded" "$step" "$N" "$TOP" <<'PY'
import collections, re, sys
folded, step, n, top = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
held = collections.Counter()
for line in open(folded):
    stack, _, size = line.rstrip().rpartition(" ")
    # Methods of swamp's types implementing a trait (`<swamp::X as Y>::f`)
    # are swamp's too.
    ours = [re.sub(r"::h[0-9a-f]{16}( \(.*\))?$", "", f) for f in stack.split(";")
            if f.startswith("swamp::") or f.startswith("<swamp::")]
    held[" <- ".join(ours[-2:][::-1]) if ours else "(outside swamp)"] += int(size)
total = sum(held.values())
print(f"\n{step}: peak heap {total / 1e6:.1f} MB, {total / n:.0f} bytes a file")
for where, size in held.most_common(top):
    print(f"  {size / 1e6:8.2f} MB  {size / n:5.0f} B/file  {where}")
PY
done
