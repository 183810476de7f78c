//! The data workload: being written.
