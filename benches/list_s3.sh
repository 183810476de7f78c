#!/usr/bin/env bash
# Times a no-op `swamp datastore sync` of a big namespace against S3
# (SeaweedFS `weed mini` on loopback, no proxy in between), beside the
# sequential page walk of the same objects: `rclone lsf -R --fast-list`
# (one ListObjectsV2 page after another, nothing else) and, when
# SWAMP_BASE_BIN names an earlier swamp build, that build's no-op sync.
# The N files (default 100000) are laid out as a namespace is
# (data/<kind>/<name>/state/<v>/raw, outputs/<kind>/<method>/…,
# workflow-runs/<workflow>/…), pushed once by swamp.
#
# Also times the push that fills the bucket, a lazy clone (`[sync] hydration = "lazy"`: a fresh
# SWAMP_HOME whose first pull records the listing and downloads nothing)
# and then `swamp data get` of one file in it (one GET), and a full clone
# (a pull that downloads every file), each with its peak RSS.
#
#   benches/list_s3.sh                     # N = 100000
#   benches/list_s3.sh 20000               # a quicker check
#   RUNS=5 ...                             # no-op runs per tool (default 3)
#   SWAMP_BIN=path ...                     # that binary instead of a release build
#   SWAMP_BASE_BIN=path ...                # also time another build (e.g. before a change)
#   KEEP=1 ...                             # keep the temp directory
#
# Needs what benches/sync_s3.sh needs (python3, curl, GNU time, SeaweedFS,
# rclone, cargo). Runs alternate between the tools; the table gives medians.
# Nothing here asserts on time.
set -euo pipefail
stage() { echo "$1 [at ${SECONDS}s]" >&2; }

N="${1:-100000}"
RUNS="${RUNS:-3}"
if ! [[ "$N" =~ ^[1-9][0-9]*$ && "$RUNS" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [N]   (N and RUNS are positive integers)" >&2
    exit 64
fi

BENCH_NAME=swamp-list-bench
# shellcheck source=benches/s3_bench_setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/s3_bench_setup.sh"

stage "== writing $N files in a namespace's layout"
REPO_DIR="$WORK/swamp"
mkdir -p "$REPO_DIR/repo" "$REPO_DIR/home"
make_bucket list
# Straight to the server: the counting proxy would be the bottleneck of a
# listing made of concurrent requests.
SWAMP_HOME="$REPO_DIR/home" "$SWAMP" --repo "$REPO_DIR/repo" init \
    --datastore "s3://list/swamp?region=$REGION&endpoint=$S3" >"$WORK/init.log" 2>&1 ||
    { echo "error: swamp init failed:" >&2; cat "$WORK/init.log" >&2; exit 1; }
id=$(awk -F'"' '/^repo_id *=/ {print $2; exit}' "$REPO_DIR/repo/.swamp.toml")
CACHE="$REPO_DIR/home/repos/$id"
python3 - "$CACHE" "$N" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
n_data, n_out = n * 7 // 10, n * 2 // 10
kinds = ["ec2-instance", "s3-bucket", "dns-record", "vm", "k8s-deployment", "iam-role", "vpc", "rds-instance"]
methods = ["deploy", "refresh", "destroy", "check"]
workflows = ["nightly", "hourly-sync", "backup", "drift-check", "release"]
def write(rel, i):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(f"record {i} at {rel}\n")
i = 0
for j in range(n_data):
    name, v = divmod(j, 3)
    kind = kinds[name % len(kinds)]
    write(f"data/{kind}/{kind}-{name:06d}/state/{v + 1}/raw", i); i += 1
for j in range(n_out):
    kind, method = kinds[j % 8], methods[(j // 8) % 4]
    write(f"outputs/{kind}/{method}/{kind}-{j:06d}.yaml", i); i += 1
for j in range(n - n_data - n_out):
    write(f"workflow-runs/{workflows[j % 5]}/workflow-run-{j:06d}.yaml", i); i += 1
PY
SW=(env SWAMP_HOME="$REPO_DIR/home" "$SWAMP" --repo "$REPO_DIR/repo")
# shellcheck source=benches/timed.sh
source "$(dirname "${BASH_SOURCE[0]}")/timed.sh"

stage "== swamp push of $N files (once, to fill the bucket)"
timed "swamp push (once, into an empty bucket)" "${SW[@]}" datastore sync --push -y

touch "$WORK/rclone.conf"
RC=(env -u AWS_CA_BUNDLE rclone --config "$WORK/rclone.conf" --s3-provider Other --s3-endpoint "$S3"
    --s3-force-path-style --s3-access-key-id test --s3-secret-access-key test --s3-region "$REGION")


stage "== no-op sync and the sequential listing ($RUNS run(s) each, alternating)"
for _ in $(seq "$RUNS"); do
    timed "swamp datastore sync (no-op)" "${SW[@]}" datastore sync -y
    grep -q "No changes" "$WORK/last.log" || { echo "error: the no-op sync was not a no-op:" >&2; tail -n 5 "$WORK/last.log" >&2; exit 1; }
    if [[ -n "${SWAMP_BASE_BIN:-}" ]]; then
        timed "base swamp datastore sync (no-op)" env SWAMP_HOME="$REPO_DIR/home" "$SWAMP_BASE_BIN" --repo "$REPO_DIR/repo" datastore sync -y
    fi
    timed "rclone lsf -R --fast-list (sequential pages)" "${RC[@]}" lsf -R --fast-list ":s3:list/swamp/"
    listed=$(grep -vc '/$' "$WORK/last.log" || true)
    [[ "$listed" -ge "$N" ]] || { echo "error: rclone listed $listed objects, expected at least $N" >&2; exit 1; }
done

stage "== lazy clone: first pull records, downloads nothing ($RUNS run(s))"
CLONE="$WORK/clone"
for _ in $(seq "$RUNS"); do
    rm -rf "$CLONE"
    mkdir -p "$CLONE/repo" "$CLONE/home"
    cp "$REPO_DIR/repo/.swamp.toml" "$CLONE/repo/.swamp.toml"
    printf '\n[sync]\nhydration = "lazy"\n' >>"$CLONE/repo/.swamp.toml"
    timed "swamp lazy clone (first pull)" env SWAMP_HOME="$CLONE/home" "$SWAMP" --repo "$CLONE/repo" datastore sync --pull -y
    cached=$( (find "$CLONE/home/repos" -type f 2>/dev/null || true) | wc -l)
    [[ "$cached" -eq 0 ]] || { echo "error: the lazy clone downloaded $cached file(s)" >&2; exit 1; }
    timed "swamp data get (one file, lazy clone)" env SWAMP_HOME="$CLONE/home" "$SWAMP" --repo "$CLONE/repo" data get ec2-instance/ec2-instance-000000/state --version 1
    grep -q "record 0 at data/ec2-instance/ec2-instance-000000/state/1/raw" "$WORK/last.log" ||
        { echo "error: data get printed something else:" >&2; tail -n 5 "$WORK/last.log" >&2; exit 1; }
done

stage "== full clone: a pull that downloads every file (once)"
FULL="$WORK/full"
mkdir -p "$FULL/repo" "$FULL/home"
cp "$REPO_DIR/repo/.swamp.toml" "$FULL/repo/.swamp.toml"
timed "swamp full clone (pull, once)" env SWAMP_HOME="$FULL/home" "$SWAMP" --repo "$FULL/repo" datastore sync --pull -y
pulled=$(find "$FULL/home/repos/$id" -type f \( -path '*/data/*' -o -path '*/outputs/*' -o -path '*/workflow-runs/*' \) | wc -l)
[[ "$pulled" -eq "$N" ]] || { echo "error: the full clone holds $pulled file(s), expected $N" >&2; exit 1; }

echo
echo "no-op sync of a namespace of $N objects on SeaweedFS (loopback, no proxy), $(nproc) CPUs; medians of $RUNS"
printf '%-50s %10s %10s\n' "step" "median s" "peak MiB"
floor=$(echo "${WALLS["rclone lsf -R --fast-list (sequential pages)"]}" | median)
for label in "${LABELS[@]}"; do
    med=$(echo "${WALLS[$label]}" | median)
    rss=$(echo "${RSSES[$label]}" | median | awk '{printf "%.1f", $1 / 1024}')
    printf '%-50s %10.2f %10s   (%.2fx the sequential listing)\n' "$label" "$med" "$rss" "$(echo "$med $floor" | awk '{print $1 / $2}')"
done
