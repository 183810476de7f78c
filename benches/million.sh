#!/usr/bin/env bash
# A million files on this machine (issue 29): N files of 4 KiB (default
# 1000000) pushed, listed, cloned lazily and pulled by swamp against S3
# (SeaweedFS `weed mini` on loopback, no proxy in between), each step beside
# its peer on the same files and the same server, then the local steps
# (a warm no-op plan beside `find`, N moves applied) through
# benches/plan_100k.sh. Last on S3, the datastore moved to another bucket
# of the server (`datastore setup NEWSPEC -y`: a server-side copy of each
# object, then each old object copied into the old place's trash and
# deleted; MOVE=0 leaves it out). Wall time and peak RSS per step; the
# closing table sets each figure against its target (issue 29's, and
# issue 43's 300 MB for every swamp step). Nothing here asserts on time.
#
#   benches/million.sh                  # N = 1000000 (about an hour on 2 cores)
#   benches/million.sh 20000            # a quick check of the script
#   RUNS=3 ...                          # no-op and listing runs (default 3)
#   LOCAL=0 ...                         # leave out the local steps
#   MOVE=0 ...                          # leave out the bucket move
#   KEEP=1 / SWAMP_BIN=path             # as in the other benches
#
# Peers: curl `--parallel --parallel-max 64` (one unsigned PUT / GET per
# file on kept-alive connections: no listing, no checks) is the ceiling of a
# push and a pull; `aws s3 ls --recursive` (one ListObjectsV2 page after
# another) is the sequential listing a no-op sync and a lazy clone are set
# against. The lazy clone's GETs are counted by SeaweedFS's own request
# counter. Needs what benches/sync_s3.sh needs, plus the aws CLI
# (`python3 -m pip install awscli` if missing).
set -euo pipefail
stage() { echo "$1 [at ${SECONDS}s]" >&2; }

N="${1:-1000000}"
RUNS="${RUNS:-3}"
if ! [[ "$N" =~ ^[1-9][0-9]*$ && "$RUNS" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [N]   (N and RUNS are positive integers)" >&2
    exit 64
fi
if ! command -v aws >/dev/null; then
    stage "== installing the aws CLI (python3 -m pip install awscli)"
    python3 -m pip install --quiet awscli
fi

BENCH_NAME=swamp-million-bench
# shellcheck source=benches/s3_bench_setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/s3_bench_setup.sh"

TIMED_WIDTH=40
# shellcheck source=benches/timed.sh
source "$(dirname "${BASH_SOURCE[0]}")/timed.sh"
med() { echo "${WALLS[$1]}" | median; }

# SeaweedFS's own count of S3 requests of one type (GET, PUT, LIST...), all buckets.
weed_requests_of() {
    curl -s "http://127.0.0.1:$METRICS_PORT/metrics" |
        awk -v t="$1" '/^SeaweedFS_s3_request_total[{]/ && $0 ~ "type=\"" t "\"" {s += $NF} END {printf "%d\n", s}'
}

# ------------------------------------------------------------ the files

REPO_DIR="$WORK/swamp"
mkdir -p "$REPO_DIR/repo" "$REPO_DIR/home"
make_bucket million
make_bucket curl
SWAMP_HOME="$REPO_DIR/home" "$SWAMP" --repo "$REPO_DIR/repo" init \
    --datastore "s3://million/swamp?region=$REGION&endpoint=$S3" >"$WORK/init.log" 2>&1 ||
    { echo "error: swamp init failed:" >&2; cat "$WORK/init.log" >&2; exit 1; }
id=$(awk -F'"' '/^repo_id *=/ {print $2; exit}' "$REPO_DIR/repo/.swamp.toml")
CACHE="$REPO_DIR/home/repos/$id"
SRC="$CACHE/outputs/bench"
stage "== writing $N files of 4 KiB (1,000 a directory) under $SRC"
write_bench_files "$SRC" "$N"
(cd "$SRC" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$WORK/src.sha256"
[[ "$(wc -l <"$WORK/src.sha256")" -eq "$N" ]] || { echo "error: expected $N files under $SRC" >&2; exit 1; }
same_tree() {
    local n
    n=$(find "$1" -type f | wc -l)
    [[ "$n" -eq "$N" ]] || { echo "error: $1 holds $n files, expected $N" >&2; return 1; }
    (cd "$1" && sha256sum --quiet -c "$WORK/src.sha256") >/dev/null ||
        { echo "error: $1 differs from the source tree" >&2; return 1; }
}
# curl_config LOCAL URL OUT upload|download: one transfer per source file.
curl_config() {
    python3 - "$WORK/src.sha256" "$@" <<'PY'
import sys
sums, local, url, out, mode = sys.argv[1:]
key = "upload-file" if mode == "upload" else "output"
with open(sums) as s, open(out, "w") as f:
    for line in s:
        rel = line.rstrip("\n").split("  ", 1)[1][2:]
        f.write(f'url = "{url}/{rel}"\n{key} = "{local}/{rel}"\n')
PY
}
CURL_CMD=(curl --silent --show-error --fail --parallel --parallel-max 64 --create-dirs)
SW=(env SWAMP_HOME="$REPO_DIR/home" "$SWAMP" --repo "$REPO_DIR/repo")
AWS=(aws --endpoint-url "$S3" --no-sign-request)

# ------------------------------------------------------------ push

stage "== push of $N files into an empty bucket: swamp, then curl (once each)"
timed "swamp push" "${SW[@]}" datastore sync --push -y
curl_config "$SRC" "$S3/curl/bench" "$WORK/curl-push.cfg" upload
timed "curl --parallel 64 push" "${CURL_CMD[@]}" -K "$WORK/curl-push.cfg"

# ------------------------------------------------------------ no-op and listing

stage "== no-op sync and the sequential listing ($RUNS run(s) each, alternating)"
for _ in $(seq "$RUNS"); do
    timed "swamp no-op sync" "${SW[@]}" datastore sync -y
    grep -q "No changes" "$WORK/last.log" || { echo "error: the no-op sync was not a no-op:" >&2; tail -n 5 "$WORK/last.log" >&2; exit 1; }
    timed "aws s3 ls --recursive" "${AWS[@]}" s3 ls --recursive s3://million/swamp/
    listed=$(grep -c 'swamp/outputs/bench/' "$WORK/last.log" || true)
    [[ "$listed" -eq "$N" ]] || { echo "error: aws s3 ls listed $listed objects, expected $N" >&2; exit 1; }
done

# ------------------------------------------------------------ lazy clone

stage "== lazy clone: the first pull records the listing, downloads nothing ($RUNS run(s))"
CLONE="$WORK/clone"
LAZY_GETS=""
for _ in $(seq "$RUNS"); do
    rm -rf "$CLONE"
    mkdir -p "$CLONE/repo" "$CLONE/home"
    cp "$REPO_DIR/repo/.swamp.toml" "$CLONE/repo/.swamp.toml"
    env SWAMP_HOME="$CLONE/home" "$SWAMP" --repo "$CLONE/repo" datastore hydration lazy >"$WORK/hydration.log" 2>&1 ||
        { echo "error: datastore hydration lazy failed:" >&2; cat "$WORK/hydration.log" >&2; exit 1; }
    g0=$(weed_requests_of GET)
    timed "swamp lazy clone" env SWAMP_HOME="$CLONE/home" "$SWAMP" --repo "$CLONE/repo" datastore sync --pull -y
    g1=$(weed_requests_of GET)
    LAZY_GETS+="$((g1 - g0)) "
    cached=$( (find "$CLONE/home/repos" -type f -path '*/outputs/*' 2>/dev/null || true) | wc -l)
    [[ "$cached" -eq 0 ]] || { echo "error: the lazy clone downloaded $cached file(s)" >&2; exit 1; }
done
# Which objects a lazy clone reads: one more (untimed) through the counting proxy.
rm -rf "$CLONE"
mkdir -p "$CLONE/repo" "$CLONE/home"
sed "s#$S3#$ENDPOINT#g" "$REPO_DIR/repo/.swamp.toml" >"$CLONE/repo/.swamp.toml"
env SWAMP_HOME="$CLONE/home" "$SWAMP" --repo "$CLONE/repo" datastore hydration lazy >"$WORK/hydration.log" 2>&1
curl -sf "$ENDPOINT/__counts?reset=1" >/dev/null
env SWAMP_HOME="$CLONE/home" "$SWAMP" --repo "$CLONE/repo" datastore sync --pull -y >"$WORK/lazy-counted.log" 2>&1 ||
    { echo "error: the counted lazy clone failed:" >&2; tail -n 20 "$WORK/lazy-counted.log" >&2; exit 1; }
curl -sf "$ENDPOINT/__counts?reset=1" >"$WORK/lazy-counts.json"
grep -q '"ListObjectsV2"' "$WORK/lazy-counts.json" ||
    { echo "error: the counted lazy clone did not list through the proxy" >&2; exit 1; }
LAZY_FILE_GETS=$(python3 - "$WORK/lazy-counts.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
keys = d["get_keys"]
files = [k for k in keys if not any(p.startswith(".") for p in k.split("/")[3:])]
others = sorted(set(k.split("/", 3)[3] for k in keys if k not in files))
print(len(files), d["by_op"].get("GetObject", 0), d["by_op"].get("ListObjectsV2", 0), " ".join(others) or "-")
PY
)
read -r LAZY_FILE_GETS LAZY_ALL_GETS LAZY_LISTS LAZY_OTHERS <<<"$LAZY_FILE_GETS"
echo "   counted lazy clone: $LAZY_FILE_GETS GET(s) of files, $LAZY_ALL_GETS GET(s) in all ($LAZY_OTHERS), $LAZY_LISTS LIST(s)" >&2

# ------------------------------------------------------------ pull

stage "== pull of $N files into an empty cache: swamp, then curl (once each)"
FULL="$WORK/full"
mkdir -p "$FULL/repo" "$FULL/home"
cp "$REPO_DIR/repo/.swamp.toml" "$FULL/repo/.swamp.toml"
timed "swamp pull" env SWAMP_HOME="$FULL/home" "$SWAMP" --repo "$FULL/repo" datastore sync --pull -y
same_tree "$FULL/home/repos/$id/outputs/bench"
rm -rf "$FULL"
curl_config "$WORK/curl-pull" "$S3/curl/bench" "$WORK/curl-pull.cfg" download
timed "curl --parallel 64 pull" "${CURL_CMD[@]}" -K "$WORK/curl-pull.cfg"
same_tree "$WORK/curl-pull"
rm -rf "$WORK/curl-pull"

# ------------------------------------------------------------ bucket move

if [[ "${MOVE:-1}" == 1 ]]; then
    stage "== the datastore moved to another bucket of the server (once)"
    make_bucket million-moved
    timed "swamp bucket move" "${SW[@]}" datastore setup \
        "s3://million-moved/swamp?region=$REGION&endpoint=$S3" -y
    moved=$(bucket_count million-moved swamp/outputs/)
    [[ "$moved" -eq "$N" ]] || { echo "error: s3://million-moved/swamp/outputs/ holds $moved objects, expected $N" >&2; exit 1; }
fi

# ------------------------------------------------------------ report

ratio() { echo "$1 $2" | awk '{printf "%.2f", $1 / $2}'; }
verdict() { echo "$1 $2" | awk '{print ($1 <= $2) ? "met" : "MISSED"}'; }
S3_REPORT="$WORK/s3-report.txt"
{
    echo "A million-file run against S3: N=$N files of 4 KiB, SeaweedFS on loopback (no proxy), $(nproc) CPUs"
    echo "medians over the runs (push and pull once each); peak RSS is the largest of the runs"
    echo
    printf '%-40s %5s %10s %10s\n' "step" "runs" "median s" "peak MiB"
    for label in "${LABELS[@]}"; do
        printf '%-40s %5d %10.2f %10.1f\n' "$label" "$(echo "${WALLS[$label]}" | wc -w)" "$(med "$label")" \
            "$(echo "${RSSES[$label]}" | maximum | awk '{print $1 / 1024}')"
    done
    echo
    echo "targets (issue 29):"
    r=$(ratio "$(med "swamp push")" "$(med "curl --parallel 64 push")")
    printf '  %-52s %6sx  (<= 1.2x)  %s\n' "push / curl push" "$r" "$(verdict "$r" 1.2)"
    r=$(ratio "$(med "swamp pull")" "$(med "curl --parallel 64 pull")")
    printf '  %-52s %6sx  (<= 1.2x)  %s\n' "pull / curl pull" "$r" "$(verdict "$r" 1.2)"
    r=$(ratio "$(med "swamp no-op sync")" "$(med "aws s3 ls --recursive")")
    printf '  %-52s %6sx  (<= 0.5x)  %s\n' "no-op sync / aws s3 ls --recursive" "$r" "$(verdict "$r" 0.5)"
    r=$(ratio "$(med "swamp lazy clone")" "$(med "aws s3 ls --recursive")")
    printf '  %-52s %6sx  (<= 1.5x)  %s\n' "lazy clone / aws s3 ls --recursive" "$r" "$(verdict "$r" 1.5)"
    printf '  %-52s %7s  (0)       %s\n' "GETs of files by a lazy clone (counting proxy)" "$LAZY_FILE_GETS" \
        "$([[ "$LAZY_FILE_GETS" -eq 0 ]] && echo met || echo MISSED)"
    echo "    (all its GETs: $LAZY_ALL_GETS, of swamp's own records: $LAZY_OTHERS; SeaweedFS counted $(echo "$LAZY_GETS" | maximum) at most in a timed run; $LAZY_LISTS LIST page(s))"
    peak=0
    for label in "${LABELS[@]}"; do
        [[ "$label" == swamp* ]] || continue
        m=$(echo "${RSSES[$label]}" | maximum)
        [[ "$m" -gt "$peak" ]] && peak="$m"
    done
    mb=$(echo "$peak" | awk '{printf "%.1f", $1 * 1024 / 1e6}')
    printf '  %-52s %7s  (<= 500 MB) %s\n' "peak RSS of any swamp step (MB)" "$mb" "$(verdict "$mb" 500)"
    echo "targets (issue 43): every swamp step's peak RSS <= 300 MB (300 bytes an object)"
    for label in "${LABELS[@]}"; do
        [[ "$label" == swamp* ]] || continue
        mb=$(echo "${RSSES[$label]}" | maximum | awk '{printf "%.1f", $1 * 1024 / 1e6}')
        per=$(echo "${RSSES[$label]}" | maximum | awk -v n="$N" '{printf "%.0f", $1 * 1024 / n}')
        printf '  %-52s %7s  (<= 300 MB) %s  (%s bytes an object)\n' "peak RSS of $label (MB)" "$mb" "$(verdict "$mb" 300)" "$per"
    done
} >"$S3_REPORT"
echo
cat "$S3_REPORT"

if [[ "${LOCAL:-1}" == 1 ]]; then
    # The local steps write their own tree; free the S3 side's disk first.
    stop_pid "$WEED_PID"
    WEED_PID=""
    rm -rf "$WORK/weed-data" "$REPO_DIR" "$CLONE"
    stage "== the local steps: benches/plan_100k.sh $N"
    echo
    RUNS="$RUNS" APPLY_RUNS=1 SWAMP_BIN="$SWAMP" "$ROOT/benches/plan_100k.sh" "$N"
    echo "targets (issue 29): a warm no-op plan <= 0.5x find -type f; $N moves applied <= 10 s; peak RSS <= 500 MB"
fi
