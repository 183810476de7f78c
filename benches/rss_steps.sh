#!/usr/bin/env bash
# Peak RSS of each step a million objects must fit in 300 MB (issue 43,
# item 3), for two swamp binaries side by side on the same files and
# server: N files of 4 KiB (default 200000) pushed into an empty bucket,
# synced again (a no-op), pulled into a new clone, cloned lazily, and the
# datastore moved to another bucket of the server (server-side copies).
# Each binary runs every step on its own buckets; the table gives each
# step's peak RSS (MiB) and that over N (bytes per object, the fixed cost
# of a process included: at a million it is a few bytes of each). Nothing
# here asserts; wall times are shown for information.
#
#   benches/rss_steps.sh                          # N = 200000
#   OLD_BIN=path SWAMP_BIN=path benches/rss_steps.sh 50000
#   KEEP=1 ...                                    # as in the other benches
set -euo pipefail
stage() { echo "$1 [at ${SECONDS}s]" >&2; }

N="${1:-200000}"
[[ "$N" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [N]" >&2; exit 64; }
BENCH_NAME=swamp-rss-steps
# shellcheck source=benches/s3_bench_setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/s3_bench_setup.sh"
TIMED_WIDTH=28
# shellcheck source=benches/timed.sh
source "$(dirname "${BASH_SOURCE[0]}")/timed.sh"
BINS=("$SWAMP")
NAMES=(new)
if [[ -n "${OLD_BIN:-}" ]]; then
    BINS+=("$OLD_BIN")
    NAMES+=(old)
fi

SRC_FILES="$WORK/files"
stage "== writing $N files of 4 KiB"
write_bench_files "$SRC_FILES" "$N"

for k in "${!BINS[@]}"; do
    bin="${BINS[$k]}" name="${NAMES[$k]}"
    stage "== $name: ${bin}"
    home="$WORK/$name/home" repo="$WORK/$name/repo"
    mkdir -p "$home" "$repo"
    make_bucket "$name-a"
    make_bucket "$name-b"
    SWAMP_HOME="$home" "$bin" --repo "$repo" init \
        --datastore "s3://$name-a/swamp?region=$REGION&endpoint=$S3" >"$WORK/init.log" 2>&1 ||
        { echo "error: swamp init failed:" >&2; cat "$WORK/init.log" >&2; exit 1; }
    id=$(awk -F'"' '/^repo_id *=/ {print $2; exit}' "$repo/.swamp.toml")
    mkdir -p "$home/repos/$id/outputs"
    cp -r "$SRC_FILES" "$home/repos/$id/outputs/bench"
    SW=(env SWAMP_HOME="$home" "$bin" --repo "$repo")
    timed "$name push" "${SW[@]}" datastore sync --push -y
    timed "$name no-op" "${SW[@]}" datastore sync -y
    grep -q "No changes" "$WORK/last.log" || { echo "error: the no-op sync was not a no-op" >&2; exit 1; }
    for kind in pull lazy; do
        c="$WORK/$name/$kind"
        mkdir -p "$c/repo" "$c/home"
        cp "$repo/.swamp.toml" "$c/repo/.swamp.toml"
        if [[ "$kind" == lazy ]]; then
            env SWAMP_HOME="$c/home" "$bin" --repo "$c/repo" datastore hydration lazy >/dev/null
        fi
        timed "$name $kind" env SWAMP_HOME="$c/home" "$bin" --repo "$c/repo" datastore sync --pull -y
        rm -rf "$c"
    done
    timed "$name move" "${SW[@]}" datastore setup "s3://$name-b/swamp?region=$REGION&endpoint=$S3" -y
    rm -rf "$WORK/$name"
done

echo
printf '%-28s %10s %10s %12s\n' "step" "wall s" "peak MiB" "B/object"
for label in "${LABELS[@]}"; do
    rss=$(echo "${RSSES[$label]}" | maximum)
    printf '%-28s %10.2f %10.1f %12.0f\n' "$label" "$(echo "${WALLS[$label]}" | median)" \
        "$(echo "$rss" | awk '{print $1 / 1024}')" "$(echo "$rss $N" | awk '{print $1 * 1024 / $2}')"
done
