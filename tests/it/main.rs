//! The one integration-test binary: every scenario runs the real `swamp`
//! binary (or the library's store layer) against temp repositories and
//! real object servers on 127.0.0.1 (SeaweedFS for S3, fake-gcs-server
//! for GCS), started once for the whole binary by [`support::servers`].
//! Every command runs in a cleared, pinned environment
//! ([`support::pinned`]): nothing of the developer's shell leaks in.
//! Scenario names read like the bug they prevent.

#[macro_use]
mod support;

mod config_migrate;
mod diffs;
mod doctor;
mod e2e;
mod exit_codes;
mod faults;
mod history;
mod interop;
mod least_privilege;
mod lock;
mod mirror;
mod moves;
mod remote_sync;
mod render;
mod resume;
mod schemas;
mod store_conformance;
mod telemetry;
mod trust;
mod undo;
mod undo_whole;
