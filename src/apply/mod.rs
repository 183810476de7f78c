//! Apply: being written.
