//! End-to-end tests: the real `swamp` binary against real temp repos, in a
//! pinned environment (temp `SWAMP_HOME`, no colour, paths and ids
//! filtered in snapshots). Scenario names read like the bug they prevent.

mod common;
mod config_errors;
mod crash;
mod data;
mod doctor;
mod layout_migration;
mod operator;
mod portable;
mod saved_plans;
mod setup;
