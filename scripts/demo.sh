#!/usr/bin/env bash
# The main job on the embedded default (the `local` datastore, no cloud
# account): copies examples/homelab to a temp dir, shows the plan that
# moves its data into a namespace, applies it, shows it converged, moves
# it back, and ends with the health checks.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
# A debug build: the demo moves a handful of files, and this is the
# quickest build a fresh machine can make (about 5 minutes on 2 cores, the
# first time; a release build takes about 15). It is also the profile the
# tests build, so `scripts/test.sh` afterwards reuses it. Cargo's own
# progress shows from the first second.
if [ -n "${SWAMP_BIN:-}" ]; then
    # A binary built already (the test suite runs the demo with its own).
    swamp="$SWAMP_BIN"
else
    echo "Building swamp (debug profile; the first build on a fresh machine takes a few minutes)..." >&2
    cargo build --manifest-path "$here/Cargo.toml" --bin swamp
    swamp="$here/target/debug/swamp"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$here/examples/homelab" "$work/homelab"
export SWAMP_HOME="$work/home"
cd "$work/homelab"

run() { printf '\n$ swamp %s\n' "$*"; "$swamp" "$@"; }

run status
run data list
run datastore namespace set homelab --migrate --dry-run
run datastore namespace set homelab --migrate --confirm
run plan --detailed-exitcode
run data get ec2-instance/web-1/state
run datastore namespace unset --migrate --confirm
run status
run doctor datastores
