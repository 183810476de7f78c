#!/usr/bin/env bash
# The main job on the embedded default (the `local` datastore, no cloud
# account): copies examples/homelab to a temp dir, shows the plan that
# moves its data into a namespace, applies it, shows it converged, moves
# it back, and ends with the health checks.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cargo build --quiet --release --manifest-path "$here/Cargo.toml"
swamp="$here/target/release/swamp"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$here/examples/homelab" "$work/homelab"
export SWAMP_HOME="$work/home"
cd "$work/homelab"

run() { printf '\n$ swamp %s\n' "$*"; "$swamp" "$@"; }

run status
run data list
run datastore namespace set homelab --migrate
run datastore namespace set homelab --migrate --confirm
run plan --detailed-exitcode
run data get ec2-instance/web-1/state
run datastore namespace unset --migrate --confirm
run status
run doctor datastores
