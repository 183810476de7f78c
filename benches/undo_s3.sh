#!/usr/bin/env bash
# What undo costs (issue 10), against S3 (SeaweedFS `weed mini` on loopback):
# N files of 4 KiB (default 10000) pushed into an empty bucket, all of them
# overwritten and pushed, then all deleted and pushed, by `swamp datastore
# sync` with undo (the default: every overwritten or deleted object is first
# copied server-side into the apply's remote trash) and with `--no-undo`;
# then, for the undo runs, a no-op sync with the trash in the bucket and
# `swamp undo` of the delete. rclone runs the same three phases with and
# without `--backup-dir` (its analogue: a server-side copy into a backup
# prefix before each overwrite or delete). For each: wall time and the HTTP
# requests by S3 operation, counted by benches/count_proxy.py.
#
#   benches/undo_s3.sh            # N = 10000, RUNS = 2
#   RUNS=3 benches/undo_s3.sh 2000
#   SWAMP_BIN=path/to/swamp ...   # skip the release build
#   KEEP=1 ...                    # keep the temp directory
#
# Needs what benches/sync_s3.sh needs. Times are medians of RUNS; compare
# the ratios of one run of the script, not absolute times across runs.
set -euo pipefail

N="${1:-10000}"
RUNS="${RUNS:-2}"
if ! [[ "$N" =~ ^[1-9][0-9]*$ && "$RUNS" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [N]   (N and RUNS are positive integers)" >&2
    exit 64
fi
stage() { echo "$1 [at ${SECONDS}s]" >&2; }

BENCH_NAME=swamp-undo-bench
# shellcheck source=benches/s3_bench_setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/s3_bench_setup.sh"

# ------------------------------------------------------------ measuring

mkdir -p "$WORK/counts" "$WORK/src"
RESULTS="$WORK/results.tsv"
: >"$RESULTS"

# timed PHASE TOOL CMD...: wall time and the requests the proxy counted.
timed() {
    local phase="$1" tool="$2"
    shift 2
    local cfile="$WORK/counts/$(date +%s%N).json" t0 t1
    curl -sf "$ENDPOINT/__counts?reset=1" >/dev/null
    t0=$(date +%s.%N)
    if ! "$@" >"$WORK/last.log" 2>&1; then
        echo "error: $tool ($phase) failed: $*" >&2
        tail -n 30 "$WORK/last.log" >&2
        exit 1
    fi
    t1=$(date +%s.%N)
    curl -sf "$ENDPOINT/__counts?reset=1" >"$cfile"
    local wall
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')
    printf '%s\t%s\t%s\t%s\n' "$phase" "$tool" "$wall" "$cfile" >>"$RESULTS"
    printf '   %-10s %-26s %8.2f s  %7d requests\n' "$phase" "$tool" "$wall" \
        "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["requests"])' "$cfile")" >&2
}

# write_files DIR SEED: N files of 4 KiB (distinct per seed) in about 100 directories.
write_files() {
    python3 - "$1" "$N" "$2" <<'PY'
import os, random, sys
root, n, seed = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = random.Random(seed)
per_dir = max(1, -(-n // 100))
for i in range(n):
    d = os.path.join(root, f"{i // per_dir:04d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i:06d}.txt"), "w") as f:
        f.write(rng.randbytes(2048).hex())
PY
}
write_files "$WORK/src/v1" one
write_files "$WORK/src/v2" two


# ------------------------------------------------------------ swamp

# swamp_round RUN FLAG: push, overwrite, delete in a fresh bucket; FLAG is
# "" (undo) or "--no-undo".
swamp_round() {
    local run="$1" flag="$2" label bucket dir cache id
    label="swamp${flag:+ $flag}"
    bucket="swamp${flag:+-noundo}-$run"
    dir="$WORK/$bucket"
    make_bucket "$bucket"
    mkdir -p "$dir/repo" "$dir/home"
    SWAMP_HOME="$dir/home" "$SWAMP" --repo "$dir/repo" init \
        --datastore "s3://$bucket/swamp?region=$REGION&endpoint=$ENDPOINT" >/dev/null 2>&1
    id=$(awk -F'"' '/^repo_id *=/ {print $2; exit}' "$dir/repo/.swamp.toml")
    cache="$dir/home/repos/$id"
    local SW=(env SWAMP_HOME="$dir/home" "$SWAMP" --repo "$dir/repo")
    mkdir -p "$cache/outputs"
    cp -a "$WORK/src/v1" "$cache/outputs/bench"
    timed push "$label" "${SW[@]}" datastore sync --push $flag -y
    rm -rf "$cache/outputs/bench"
    cp -a "$WORK/src/v2" "$cache/outputs/bench"
    # Changing or deleting every file trips a delete guard
    # (`everything-changed`, `max_delete_percent`): --force, as an operator
    # who means it would.
    timed overwrite "$label" "${SW[@]}" datastore sync --push --force $flag -y
    rm -rf "$cache/outputs/bench"
    timed delete "$label" "${SW[@]}" datastore sync --push --force $flag -y
    local trash
    trash=$(bucket_count "$bucket" "swamp/.swamp/trash/")
    echo "   ($label: $trash object(s) in the remote trash)" >&2
    if [[ -z "$flag" ]]; then
        [[ "$trash" -eq $((2 * N)) ]] || { echo "error: expected $((2 * N)) trash objects, found $trash" >&2; exit 1; }
        timed no-op "$label (trash listed)" "${SW[@]}" datastore sync -y
        timed undo "swamp undo (of the delete)" "${SW[@]}" undo -y
        [[ $(bucket_count "$bucket" "swamp/outputs/") -eq "$N" ]] ||
            { echo "error: undo did not bring back $N objects" >&2; exit 1; }
    else
        [[ "$trash" -eq 0 ]] || { echo "error: --no-undo left $trash trash objects" >&2; exit 1; }
    fi
}

# ------------------------------------------------------------ rclone

touch "$WORK/rclone.conf"
RC=(env -u AWS_CA_BUNDLE rclone --config "$WORK/rclone.conf" --s3-provider Other --s3-endpoint "$ENDPOINT"
    --s3-force-path-style --s3-access-key-id test --s3-secret-access-key test --s3-region "$REGION"
    --transfers 32 --checkers 32)
rclone_round() {
    local run="$1" backup="$2" label bucket extra=()
    label="rclone -t32${backup:+ --backup-dir}"
    bucket="rclone${backup:+-backup}-$run"
    make_bucket "$bucket"
    [[ -n "$backup" ]] && extra=(--backup-dir ":s3:$bucket/trash")
    timed push "$label" "${RC[@]}" "${extra[@]}" sync "$WORK/src/v1" ":s3:$bucket/bench"
    timed overwrite "$label" "${RC[@]}" "${extra[@]}" sync "$WORK/src/v2" ":s3:$bucket/bench"
    mkdir -p "$WORK/empty"
    timed delete "$label" "${RC[@]}" "${extra[@]}" sync "$WORK/empty" ":s3:$bucket/bench"
}

for run in $(seq "$RUNS"); do
    stage "== round $run of $RUNS: push, overwrite, delete of $N files"
    swamp_round "$run" ""
    swamp_round "$run" "--no-undo"
    rclone_round "$run" ""
    rclone_round "$run" "yes"
done

# ------------------------------------------------------------ report

stage "== report"
python3 - "$RESULTS" "$N" <<'PY'
import collections, json, statistics, sys
rows = collections.OrderedDict()
for line in open(sys.argv[1]):
    phase, tool, wall, cfile = line.rstrip("\n").split("\t")
    rows.setdefault((phase, tool), []).append((float(wall), json.load(open(cfile))))
n = int(sys.argv[2])
print(f"\nundo cost, N={n} files of 4 KiB, SeaweedFS on loopback; wall = median of the runs; requests = median, by S3 operation")
print(f"{'phase':<10} {'tool':<28} {'wall s':>7} {'requests':>9}  by operation")
med = {}
for (phase, tool), runs in rows.items():
    wall = statistics.median(w for w, _ in runs)
    reqs = statistics.median(d["requests"] for _, d in runs)
    ops = collections.Counter()
    for _, d in runs:
        ops.update(d["by_op"])
    ops = " ".join(f"{k}={round(v / len(runs))}" for k, v in sorted(ops.items()))
    med[(phase, tool)] = (wall, reqs)
    print(f"{phase:<10} {tool:<28} {wall:>7.2f} {reqs:>9.0f}  {ops}")
print("\nratios (same phase): undo / --no-undo, and rclone --backup-dir / rclone")
for phase in ("push", "overwrite", "delete"):
    for a, b in (("swamp", "swamp --no-undo"), ("rclone -t32 --backup-dir", "rclone -t32")):
        if (phase, a) in med and (phase, b) in med:
            (wa, ra), (wb, rb) = med[(phase, a)], med[(phase, b)]
            print(f"{phase:<10} {a + ' / ' + b:<52} wall {wa / wb:5.2f}  requests {ra / max(rb, 1):5.2f}")
PY
