#![warn(unreachable_pub)]
//! `swamp` keeps a repository's runtime data in a datastore and moves it
//! between layouts with a Terraform-style reconcile loop:
//! desired state ([`state::desired`]) + observed state ([`state::tree`])
//! → typed diff ([`plan::compose`]) → rendered plan ([`cli::render`]) →
//! idempotent apply ([`apply`]).
//!
//! [`layout`] is the one module that turns configuration into paths.

pub(crate) mod apply;
pub(crate) mod catalog;
pub mod cli;
pub(crate) mod clock;
pub mod config;
pub(crate) mod data;
pub mod digest;
pub mod doctor;
pub(crate) mod engine;
pub mod fsutil;
pub(crate) mod journal;
pub mod layout;
pub(crate) mod lock;
pub mod plan;
pub(crate) mod progress;
pub mod state;
pub mod store;
pub mod telemetry;
#[cfg(test)]
pub(crate) mod testutil;
