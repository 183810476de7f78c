#!/usr/bin/env bash
# Times pulls of N files of 4 KiB (default 10000) into an empty cache
# straight from SeaweedFS (`weed mini` on loopback, no counting proxy in
# between, which would cap every tool at its own rate), beside curl
# `--parallel --parallel-max 64` (one GET per file, no checks, no fsync:
# the ceiling), `rclone copy --transfers 32 --checkers 32` (no fsync
# either) and, with SWAMP_BASE_BIN, an earlier swamp build. Runs
# alternate between the tools; each pull lands in a new directory that is
# kept until the script ends (on ext4 without a journal, files created
# right after a mass delete pay for a scan of the freed inodes). Reports
# wall, user and system CPU, peak RSS, and the CPU SeaweedFS spent serving
# each tool (the server shares the machine's cores).
#
#   benches/pull_direct.sh                 # N = 10000, 3 rounds
#   benches/pull_direct.sh 2000            # a quicker check
#   ROUNDS=5 ...                           # rounds (default 3)
#   SWAMP_BIN=path ...                     # that binary instead of a release build
#   SWAMP_BASE_BIN=path ...                # also time another build (e.g. before a change)
#   TMPDIR=/dev/shm ...                    # land on tmpfs (no filesystem cost at all)
#   RCLONE=0 ...                           # leave rclone out
#   KEEP=1 ...                             # keep the temp directory
#   WEED_PROFILE=DIR ...                   # perf-record SeaweedFS during each pull
#                                          # (DIR/<tool>-<run>.data, for perf report)
#
# Needs what benches/sync_s3.sh needs (python3, curl, GNU time, SeaweedFS,
# rclone, cargo). Nothing here asserts on time.
set -euo pipefail
stage() { echo "$1 [at ${SECONDS}s]" >&2; }

N="${1:-10000}"
ROUNDS="${ROUNDS:-3}"
if ! [[ "$N" =~ ^[1-9][0-9]*$ && "$ROUNDS" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [N]   (N and ROUNDS are positive integers)" >&2
    exit 64
fi

BENCH_NAME=swamp-pull-bench
# shellcheck source=benches/s3_bench_setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/s3_bench_setup.sh"

stage "== writing $N files of 4 KiB and pushing them once"
python3 - "$WORK/src/bench" "$N" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
per_dir = max(1, -(-n // 100))   # about 100 directories
for i in range(n):
    d = os.path.join(root, f"{i // per_dir:04d}")
    if i % per_dir == 0:
        os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i:06d}.txt"), "w") as f:
        f.write(os.urandom(2048).hex())   # 4096 distinct bytes
PY
(cd "$WORK/src/bench" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$WORK/src.sha256"
make_bucket pull-bench
mkdir -p "$WORK/origin/repo" "$WORK/origin/home"
SWAMP_HOME="$WORK/origin/home" "$SWAMP" --repo "$WORK/origin/repo" init \
    --datastore "s3://pull-bench/swamp?region=$REGION&endpoint=$S3" >/dev/null
id=$(awk -F'"' '/^repo_id *=/ {print $2; exit}' "$WORK/origin/repo/.swamp.toml")
mkdir -p "$WORK/origin/home/repos/$id/outputs"
cp -a "$WORK/src/bench" "$WORK/origin/home/repos/$id/outputs/bench"
SWAMP_HOME="$WORK/origin/home" "$SWAMP" --repo "$WORK/origin/repo" datastore sync --push -y >/dev/null
(cd "$WORK/src/bench" && find . -type f | sort) |
    awk -v s="$S3/pull-bench/swamp/outputs/bench" -v d="DEST" \
        '{p = substr($0, 3); print "url = \"" s "/" p "\"\noutput = \"" d "/" p "\""}' >"$WORK/curl.cfg"

# Same content (paths and bytes) under DIR as the source tree?
same_tree() {
    local n
    n=$(find "$1" -type f | wc -l)
    [[ "$n" -eq "$N" ]] || { echo "error: $1 holds $n files, expected $N" >&2; exit 1; }
    (cd "$1" && sha256sum --quiet -c "$WORK/src.sha256") >/dev/null ||
        { echo "error: $1 differs from the source tree" >&2; exit 1; }
}

declare -A WALL=() USR=() SYS=() RSS=() WEEDCPU=()
TOOLS=()
CLK_TCK=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
run=0
# timed TOOL CMD...: one pull under GNU time, SeaweedFS's CPU measured around it.
timed() {
    local tool="$1" out="$WORK/time.out" w0 w1
    shift
    [[ -n "${WALL[$tool]+x}" ]] || { TOOLS+=("$tool"); WALL[$tool]=""; }
    local perf_pid=""
    if [[ -n "${WEED_PROFILE:-}" ]]; then
        mkdir -p "$WEED_PROFILE"
        perf record -q -F 999 -g -p "$WEED_PID" -o "$WEED_PROFILE/${tool%% *}-$run.data" 2>/dev/null &
        perf_pid=$!
        sleep 0.5
    fi
    w0=$(cpu_ticks "$WEED_PID")
    "$TIME" -f '%e %U %S %M' -o "$out" "$@" >"$WORK/last.log" 2>&1 ||
        { echo "error: $tool failed:" >&2; tail -n 20 "$WORK/last.log" >&2; exit 1; }
    w1=$(cpu_ticks "$WEED_PID")
    if [[ -n "$perf_pid" ]]; then
        kill -INT "$perf_pid" 2>/dev/null || true
        wait "$perf_pid" 2>/dev/null || true
    fi
    read -r wall usr sys rss <"$out"
    WALL[$tool]+="$wall "
    USR[$tool]+="$usr "
    SYS[$tool]+="$sys "
    RSS[$tool]+="$rss "
    WEEDCPU[$tool]+="$(awk -v a="$w0" -v b="$w1" -v hz="$CLK_TCK" 'BEGIN {printf "%.2f", (b - a) / hz}') "
    printf '   %-12s %6.2f s  (user %s, sys %s, %d MiB)\n' "$tool" "$wall" "$usr" "$sys" $((rss / 1024)) >&2
}
swamp_pull() {
    local tool="$1" bin="$2" dir
    run=$((run + 1))
    dir="$WORK/pull-$run"
    mkdir -p "$dir/repo" "$dir/home"
    cp "$WORK/origin/repo/.swamp.toml" "$dir/repo/"
    timed "$tool" env SWAMP_HOME="$dir/home" "$bin" --repo "$dir/repo" datastore sync --pull -y
    same_tree "$dir/home/repos/$id/outputs/bench"
}

touch "$WORK/rclone.conf"
RC=(env -u AWS_CA_BUNDLE rclone --config "$WORK/rclone.conf" --s3-provider Other --s3-endpoint "$S3"
    --s3-force-path-style --s3-access-key-id test --s3-secret-access-key test --s3-region "$REGION")

stage "== $ROUNDS round(s) of pulls"
for _ in $(seq "$ROUNDS"); do
    swamp_pull swamp "$SWAMP"
    if [[ -n "${SWAMP_BASE_BIN:-}" ]]; then swamp_pull "swamp (base)" "$SWAMP_BASE_BIN"; fi
    if [[ "${RCLONE:-1}" == 1 ]]; then
        run=$((run + 1))
        timed "rclone -t32" "${RC[@]}" copy --transfers 32 --checkers 32 \
            ":s3:pull-bench/swamp/outputs/bench" "$WORK/pull-$run"
        same_tree "$WORK/pull-$run"
    fi
    run=$((run + 1))
    sed "s#DEST#$WORK/pull-$run#" "$WORK/curl.cfg" >"$WORK/curl-$run.cfg"
    timed "curl ‖64" curl --silent --show-error --fail --parallel --parallel-max 64 --create-dirs -K "$WORK/curl-$run.cfg"
    same_tree "$WORK/pull-$run"
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo
echo "pull of $N files of 4 KiB from SeaweedFS on loopback, medians of $ROUNDS (filesystem: $(df -T "$WORK" | awk 'NR == 2 {print $2}'))"
printf '%-14s %8s %8s %8s %9s %10s %9s\n' tool wall user sys "RSS MiB" "weed CPU" "/ curl"
curl_wall=$(echo "${WALL[curl ‖64]}" | median)
for tool in "${TOOLS[@]}"; do
    w=$(echo "${WALL[$tool]}" | median)
    printf '%-14s %7.2fs %7.2fs %7.2fs %9d %9.2fs %8.2fx\n' "$tool" "$w" \
        "$(echo "${USR[$tool]}" | median)" "$(echo "${SYS[$tool]}" | median)" \
        $(($(echo "${RSS[$tool]}" | median | cut -d. -f1) / 1024)) \
        "$(echo "${WEEDCPU[$tool]}" | median)" "$(awk -v a="$w" -v b="$curl_wall" 'BEGIN {printf "%.2f", a / b}')"
done
