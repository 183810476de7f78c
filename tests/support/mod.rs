//! Test support shared by integration tests: `mod support;` from a file in
//! `tests/`, or `#[path = "../support/mod.rs"] mod support;` from a test
//! directory such as `tests/e2e/`.

pub mod servers;
