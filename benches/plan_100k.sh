#!/usr/bin/env bash
# Times `swamp plan` and a namespace migration on a repository holding N
# small datastore files (default 100000), next to peer baselines over the
# same tree (a bare `find` walk, sha256sum of every file, rsync --dry-run).
#
#   benches/plan_100k.sh            # N = 100000
#   benches/plan_100k.sh 2000       # a quick check
#   RUNS=5 benches/plan_100k.sh     # repeat the cheap steps 5 times (default 3)
#   APPLY_RUNS=3 ...                # migration round trips (default: RUNS for
#                                   # N <= 10000, else 1: each moves every file twice)
#   KEEP=1 ...                      # keep the temp directory for inspection
#   SWAMP_BIN=/path/to/swamp ...    # time that binary instead of building one
#   PLAN_ONLY=1 ...                 # stop after the no-op plans and the peer baselines
#
# Each step runs under `/usr/bin/time -v` (Debian/Ubuntu: `apt-get install
# time`) for wall time and peak RSS; the table reports medians over the runs.
# "cold hash cache" deletes swamp's (dev, inode, size, mtime) → sha256 cache
# before each run, so every file is read and hashed; the OS page cache stays
# warm (the files were just written), as it does for the peer baselines.
set -euo pipefail

N="${1:-100000}"
RUNS="${RUNS:-3}"
if [[ -z "${APPLY_RUNS:-}" ]]; then
    if [[ "$N" =~ ^[0-9]+$ && "$N" -le 10000 ]]; then APPLY_RUNS="$RUNS"; else APPLY_RUNS=1; fi
fi
if ! [[ "$N" =~ ^[1-9][0-9]*$ && "$RUNS" =~ ^[1-9][0-9]*$ && "$APPLY_RUNS" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [N]   (N, RUNS and APPLY_RUNS are positive integers)" >&2
    exit 64
fi

TIME=/usr/bin/time
if ! "$TIME" -v true >/dev/null 2>&1; then
    echo "error: $TIME (GNU time, with -v) is missing; install it with \`apt-get install time\`" >&2
    exit 1
fi
command -v python3 >/dev/null || { echo "error: python3 is needed to create the files" >&2; exit 1; }

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -n "${SWAMP_BIN:-}" ]]; then
    # Another build to compare (e.g. one of an earlier commit).
    SWAMP="$SWAMP_BIN"
else
    echo "== building the release binary" >&2
    (cd "$ROOT" && cargo build --release --quiet)
    SWAMP="$ROOT/target/release/swamp"
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/swamp-bench.XXXXXX")"
cleanup() {
    if [[ "${KEEP:-0}" == 1 ]]; then
        echo "kept $WORK" >&2
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

export SWAMP_HOME="$WORK/home"
export NO_COLOR=1
REPO="$WORK/repo"
mkdir -p "$REPO" "$SWAMP_HOME"
"$SWAMP" --repo "$REPO" init >/dev/null
swamp() { "$SWAMP" --repo "$REPO" "$@"; }

# ------------------------------------------------------------ the tree

echo "== writing $N files" >&2
gen_start=$(date +%s.%N)
python3 - "$REPO/.swamp" "$N" <<'PY'
import hashlib, os, sys

root, n = sys.argv[1], int(sys.argv[2])
n_data = n * 7 // 10              # data/<kind>/<instance>/state/<v>/raw, 3 versions a name
n_out = n * 2 // 10               # outputs/<kind>/<method>/<instance>-<date>.yaml
n_runs = n - n_data - n_out       # workflow-runs/<workflow>/workflow-run-<n>.yaml
kinds = ["ec2-instance", "s3-bucket", "dns-record", "vm", "k8s-deployment",
         "iam-role", "vpc", "rds-instance"]
methods = ["deploy", "refresh", "destroy", "check"]
workflows = ["nightly", "hourly-sync", "backup", "drift-check", "release"]
made = set()

def write(rel, i, header):
    path = os.path.join(root, rel)
    d = os.path.dirname(path)
    if d not in made:
        os.makedirs(d, exist_ok=True)
        made.add(d)
    digest = hashlib.sha256(f"{rel}:{i}".encode()).hexdigest()
    body = (f"{header}\nindex: {i}\npath: {rel}\nchecksum_seed: {digest}\n"
            f"status: {'ok' if i % 7 else 'degraded'}\n"
            f"notes: >\n  synthetic benchmark record {i}; {digest[:32]}\n"
            f"  region us-east-{i % 4 + 1}, zone {chr(97 + i % 6)}, owner team-{i % 13}\n"
            f"metrics: [{i % 97}, {i % 89}, {i % 83}, {i % 79}, {i % 73}, {i % 71}]\n")
    with open(path, "w") as f:
        f.write(body)

i = 0
for j in range(n_data):
    name, v = divmod(j, 3)
    kind = kinds[name % len(kinds)]
    write(f"data/{kind}/{kind}-{name:06d}/state/{v + 1}/raw", i, f"# {kind} state v{v + 1}")
    i += 1
for j in range(n_out):
    kind = kinds[j % len(kinds)]
    method = methods[(j // len(kinds)) % len(methods)]
    write(f"outputs/{kind}/{method}/{kind}-{j:06d}-2026-11-{j % 28 + 1:02d}.yaml", i,
          f"model: {kind}\nmethod: {method}")
    i += 1
for j in range(n_runs):
    wf = workflows[j % len(workflows)]
    write(f"workflow-runs/{wf}/workflow-run-{j:06d}.yaml", i, f"workflow: {wf}\nrun: {j}")
    i += 1
PY
gen_end=$(date +%s.%N)
COUNT=$(find "$REPO/.swamp" -type f | wc -l)
BYTES=$(du -sb "$REPO/.swamp" | cut -f1)
GEN_S=$(echo "$gen_end $gen_start" | awk '{printf "%.1f", $1 - $2}')
echo "   $COUNT files, $((BYTES / 1024 / 1024)) MiB on disk (du), written in ${GEN_S}s" >&2
[[ "$COUNT" -eq "$N" ]] || { echo "error: expected $N files, found $COUNT" >&2; exit 1; }

# ------------------------------------------------------------ timing

declare -a LABELS=()
declare -A WALLS=() RSSES=()

# timed LABEL CMD...: one run under /usr/bin/time -v; output to $WORK/last.log.
timed() {
    local label="$1"
    shift
    local tout="$WORK/time.out"
    if ! "$TIME" -v -o "$tout" "$@" >"$WORK/last.log" 2>&1; then
        echo "error: step \`$label\` failed: $*" >&2
        tail -n 20 "$WORK/last.log" >&2
        grep -i "exit status" "$tout" >&2 || true
        exit 1
    fi
    local wall rss
    wall=$(awk -F': ' '/Elapsed \(wall clock\) time/ {print $2}' "$tout" |
        awk -F: '{ if (NF == 3) printf "%.2f", $1 * 3600 + $2 * 60 + $3; else printf "%.2f", $1 * 60 + $2 }')
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tout")
    if [[ -z "${WALLS[$label]+x}" ]]; then
        LABELS+=("$label")
        WALLS[$label]=""
        RSSES[$label]=""
    fi
    WALLS[$label]+="$wall "
    RSSES[$label]+="$rss "
    printf '   %-44s %8.2f s  %8.1f MiB\n' "$label" "$wall" "$(echo "$rss" | awk '{print $1 / 1024}')" >&2
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
minimum() { tr ' ' '\n' | grep -v '^$' | sort -g | head -n 1; }
maximum() { tr ' ' '\n' | grep -v '^$' | sort -g | tail -n 1; }

expect_converged() {
    local code=0
    swamp plan --detailed-exitcode >"$WORK/check.log" 2>&1 || code=$?
    if [[ "$code" -ne 0 ]]; then
        echo "error: expected a converged (empty) plan, got exit $code:" >&2
        tail -n 20 "$WORK/check.log" >&2
        exit 1
    fi
}

count_under() { find "$1" -type f -not -name '_catalog.db*' 2>/dev/null | wc -l; }

# The hash cache's file name has changed between versions (hash-cache.tsv,
# then .bin): remove whichever this build writes, and check it wrote one.
STATE="$REPO/.swamp/state"

echo "== swamp plan, solo layout, nothing to do ($RUNS runs each)" >&2
for _ in $(seq "$RUNS"); do
    rm -f "$STATE"/hash-cache.*
    timed "swamp plan (cold hash cache)" "$SWAMP" --repo "$REPO" plan
    compgen -G "$STATE/hash-cache.*" >/dev/null \
        || { echo "error: the plan wrote no hash cache under $STATE" >&2; exit 1; }
done
grep -q "No changes" "$WORK/last.log" || { echo "error: the solo plan is not empty" >&2; cat "$WORK/last.log" >&2; exit 1; }
for _ in $(seq "$RUNS"); do
    timed "swamp plan (warm hash cache)" "$SWAMP" --repo "$REPO" plan
done

echo "== peer baselines over the same tree ($RUNS runs each)" >&2
for _ in $(seq "$RUNS"); do
    timed "find -type f (directory walk only)" bash -c 'find "$1" -type f >/dev/null' _ "$REPO/.swamp"
done
for _ in $(seq "$RUNS"); do
    timed "find | xargs sha256sum" bash -c 'find "$1" -type f -print0 | xargs -0 sha256sum >/dev/null' _ "$REPO/.swamp"
done
if command -v rsync >/dev/null; then
    mkdir -p "$WORK/rsync-dest"
    for _ in $(seq "$RUNS"); do
        timed "rsync -a --dry-run (to an empty dir)" rsync -a --dry-run "$REPO/.swamp/" "$WORK/rsync-dest/"
    done
else
    echo "   (rsync is not installed; skipping its baseline: apt-get install rsync)" >&2
fi

report() {
    echo
    echo "swamp plan benchmark: N=$N files ($((BYTES / 1024 / 1024)) MiB on disk), $(nproc) CPUs, $(uname -sr)"
    echo "files written in ${GEN_S}s; times are wall-clock medians (min-max) over the runs; RSS is the median peak"
    echo
    printf '%-46s %4s %10s %19s %10s\n' "step" "runs" "median s" "min-max s" "peak MiB"
    printf '%-46s %4s %10s %19s %10s\n' "----" "----" "--------" "---------" "--------"
    for label in "${LABELS[@]}"; do
        runs=$(echo "${WALLS[$label]}" | wc -w)
        med=$(echo "${WALLS[$label]}" | median)
        lo=$(echo "${WALLS[$label]}" | minimum)
        hi=$(echo "${WALLS[$label]}" | maximum)
        rss=$(echo "${RSSES[$label]}" | median | awk '{printf "%.1f", $1 / 1024}')
        printf '%-46s %4d %10.2f %19s %10s\n' "$label" "$runs" "$med" "$(printf '%.2f-%.2f' "$lo" "$hi")" "$rss"
    done
}

if [[ "${PLAN_ONLY:-0}" == 1 ]]; then
    report
    exit 0
fi

echo "== namespace migration: $N moves" >&2
cp "$REPO/.swamp.toml" "$WORK/solo.swamp.toml"
for _ in $(seq "$RUNS"); do
    cp "$WORK/solo.swamp.toml" "$REPO/.swamp.toml"
    timed "swamp datastore namespace set bench" "$SWAMP" --repo "$REPO" datastore namespace set bench
done
for _ in $(seq "$RUNS"); do
    timed "swamp plan ($N moves)" "$SWAMP" --repo "$REPO" plan
done
grep -q "$N to move" "$WORK/last.log" || {
    echo "error: expected a plan with $N moves:" >&2
    tail -n 5 "$WORK/last.log" >&2
    exit 1
}
PLAN_LINES=$(wc -l <"$WORK/last.log")
for _ in $(seq "$RUNS"); do
    timed "swamp plan --json ($N moves)" "$SWAMP" --repo "$REPO" plan --json
done

for round in $(seq "$APPLY_RUNS"); do
    if [[ "$round" -gt 1 ]]; then
        swamp datastore namespace set bench >/dev/null
    fi
    timed "swamp apply -y ($N moves)" "$SWAMP" --repo "$REPO" apply -y
    expect_converged
    moved=$(count_under "$REPO/.swamp/bench")
    [[ "$moved" -eq "$N" ]] || { echo "error: $moved of $N files under .swamp/bench" >&2; exit 1; }
    timed "swamp datastore namespace unset --migrate -y" "$SWAMP" --repo "$REPO" datastore namespace unset --migrate -y
    expect_converged
    back=$(( $(count_under "$REPO/.swamp/data") + $(count_under "$REPO/.swamp/outputs") + $(count_under "$REPO/.swamp/workflow-runs") ))
    [[ "$back" -eq "$N" ]] || { echo "error: $back of $N files back in the solo layout" >&2; exit 1; }
done

# The filesystem floor: the tier directories moved with mv(1), there and back.
for _ in $(seq "$RUNS"); do
    timed "mv of the tier directories (there and back)" bash -c '
        cd "$1/.swamp" && mkdir -p mvbench &&
        mv data outputs workflow-runs mvbench/ && mv mvbench/data mvbench/outputs mvbench/workflow-runs . &&
        rmdir mvbench' _ "$REPO"
done

# ------------------------------------------------------------ report

report
echo
echo "lines the human plan of $N moves prints: ${PLAN_LINES:-?}"
