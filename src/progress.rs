//! Live counters of long work (what is being done, files and bytes done
//! out of how many), for the command line to show while it happens. The
//! core only counts, here, with atomics; it never prints. One meter per
//! process: a command does one thing at a time, and every layer can reach
//! it without threading a handle through each call.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) struct Meter {
    phase: Mutex<String>,
    files_done: AtomicU64,
    files_total: AtomicU64,
    bytes_done: AtomicU64,
    bytes_total: AtomicU64,
    /// Bumped on every `start`/`phase`, so a reader can tell a new phase.
    generation: AtomicU64,
    /// What finished, for `-v` (taken by the reader).
    finished: Mutex<Vec<String>>,
    log_finished: std::sync::atomic::AtomicBool,
}

/// A reading of the meter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Reading {
    pub phase: String,
    pub files_done: u64,
    pub files_total: u64,
    pub bytes_done: u64,
    pub bytes_total: u64,
    pub generation: u64,
}

static METER: Meter = Meter {
    phase: Mutex::new(String::new()),
    files_done: AtomicU64::new(0),
    files_total: AtomicU64::new(0),
    bytes_done: AtomicU64::new(0),
    bytes_total: AtomicU64::new(0),
    generation: AtomicU64::new(0),
    finished: Mutex::new(Vec::new()),
    log_finished: std::sync::atomic::AtomicBool::new(false),
};

/// The process's meter.
pub(crate) fn meter() -> &'static Meter {
    &METER
}

impl Meter {
    /// Work of known size begins: `files` items of `bytes` in all.
    pub(crate) fn start(&self, phase: &str, files: u64, bytes: u64) {
        self.files_done.store(0, Ordering::Relaxed);
        self.bytes_done.store(0, Ordering::Relaxed);
        self.files_total.store(files, Ordering::Relaxed);
        self.bytes_total.store(bytes, Ordering::Relaxed);
        *self.phase.lock().unwrap() = phase.to_string();
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Work of unknown size begins (a spinner with `phase`); what it
    /// counts with [`Meter::add`] is shown as it goes.
    pub(crate) fn phase(&self, phase: &str) {
        self.start(phase, 0, 0);
    }

    /// `files` items of `bytes` finished.
    pub(crate) fn add(&self, files: u64, bytes: u64) {
        self.files_done.fetch_add(files, Ordering::Relaxed);
        self.bytes_done.fetch_add(bytes, Ordering::Relaxed);
    }

    /// A step finished: `files` (0 or 1) and `bytes` of the totals,
    /// described for `-v` when asked for.
    pub(crate) fn finished(&self, files: u64, bytes: u64, what: impl FnOnce() -> String) {
        self.add(files, bytes);
        if self.log_finished.load(Ordering::Relaxed) {
            self.finished.lock().unwrap().push(what());
        }
    }

    /// Keep what [`Meter::finished`] describes, for [`Meter::take_finished`].
    pub(crate) fn keep_finished(&self) {
        self.log_finished.store(true, Ordering::Relaxed);
    }

    pub(crate) fn take_finished(&self) -> Vec<String> {
        std::mem::take(&mut *self.finished.lock().unwrap())
    }

    /// Nothing is going on any more.
    pub(crate) fn idle(&self) {
        self.start("", 0, 0);
    }

    /// Files done and in all, read without a lock (for an interrupt).
    pub(crate) fn files(&self) -> (u64, u64) {
        (
            self.files_done.load(Ordering::Relaxed),
            self.files_total.load(Ordering::Relaxed),
        )
    }

    pub(crate) fn read(&self) -> Reading {
        Reading {
            generation: self.generation.load(Ordering::Acquire),
            phase: self.phase.lock().unwrap().clone(),
            files_done: self.files_done.load(Ordering::Relaxed),
            files_total: self.files_total.load(Ordering::Relaxed),
            bytes_done: self.bytes_done.load(Ordering::Relaxed),
            bytes_total: self.bytes_total.load(Ordering::Relaxed),
        }
    }
}
