//! The data catalog (SQLite, WAL): being written.
