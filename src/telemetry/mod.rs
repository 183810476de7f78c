//! What a run sent and did, for people debugging a real bucket: one
//! `tracing` event per provider request (target `swamp::request`), per
//! lock step (`swamp::lock`) and per action's start and end
//! (`swamp::action`), and the requests counted by class so an apply can
//! report what it sent beside what its plan estimated.
//!
//! Owns: the request classes and counters ([`requests`]), and the secrets a
//! run holds, to be cut from anything written ([`redact`]). Does not own
//! where events go: `cli::logging` installs the subscriber (stderr under
//! `SWAMP_LOG`, JSON lines under `--trace FILE`); with none installed,
//! events cost a disabled-callsite check and requests are still counted.

pub mod redact;
pub mod requests;

pub use requests::{Class, Request, RequestCounts};
