//! `swamp` keeps a repository's runtime data in a datastore and moves it
//! between layouts with a Terraform-style reconcile loop:
//! desired state ([`state::desired`]) + observed state ([`state::observed`])
//! → typed diff ([`plan::diff`]) → rendered plan ([`cli::render`]) →
//! idempotent apply ([`apply`]).
//!
//! [`layout`] is the one module that turns configuration into paths.

pub mod apply;
pub mod catalog;
pub mod cli;
pub mod clock;
pub mod config;
pub mod data;
pub mod digest;
pub mod doctor;
pub mod engine;
pub mod fsutil;
pub mod layout;
pub mod lock;
pub mod plan;
pub mod progress;
pub mod state;
pub mod store;
pub mod undo;
