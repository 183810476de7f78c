#!/usr/bin/env bash
# How many times a push reads each file it uploads: runs `swamp datastore
# sync --push -y` of N files of SIZE bytes into an empty directory object
# store (`endpoint=file:///dir`, no server needed) under strace, and counts
# the read-only opens of each cache file. A warm plan (the hash cache knows
# every file) comes first, as it does when a user reviews before applying.
#
#   benches/push_reads.sh [N] [SIZE]          # default 200 files of 1 MiB
#   SWAMP_BIN=/path/to/other/swamp benches/push_reads.sh   # compare a build
#
# Prints opens per file and the wall and CPU time of the push (GNU time).
# Needs strace and GNU time. Nothing here asserts on time.
set -euo pipefail
N="${1:-200}"
SIZE="${2:-1048576}"
here="$(cd "$(dirname "$0")/.." && pwd)"
if [[ -z "${SWAMP_BIN:-}" ]]; then
    cargo build --quiet --release --manifest-path "$here/Cargo.toml"
    SWAMP_BIN="$here/target/release/swamp"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/repo" "$work/store/bucket"
export SWAMP_HOME="$work/home"
cd "$work/repo"
"$SWAMP_BIN" init --namespace bench --datastore "s3://bucket/p?endpoint=file://$work/store" >/dev/null
id=$(sed -n 's/^repo_id = "\(.*\)"/\1/p' .swamp.toml)
cache="$SWAMP_HOME/repos/$id/bench/outputs"
mkdir -p "$cache"
for i in $(seq 1 "$N"); do head -c "$SIZE" /dev/urandom > "$cache/f$i.bin"; done
"$SWAMP_BIN" plan --scope push >/dev/null      # warms the hash cache
strace -f -qq -e trace=openat -o "$work/trace" \
    /usr/bin/time -f '%e s wall, %U s user, %S s sys' -o "$work/time" \
    "$SWAMP_BIN" datastore sync --push -y >/dev/null
opens=$(grep -c "$cache/f[0-9]*\.bin\", O_RDONLY" "$work/trace" || true)
echo "binary: $SWAMP_BIN"
echo "files: $N x $SIZE bytes; read-only opens of them during the push: $opens ($(awk "BEGIN{print $opens/$N}") per file)"
echo "push: $(cat "$work/time") (under strace)"
