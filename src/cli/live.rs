//! Live progress on stderr while a command works, drawn from the core's
//! [`crate::progress`] meter: a spinner naming what is being done while
//! reading the tree, listing and planning; bytes and files done out of
//! the total, with rate and ETA, while applying (as rclone's `-P`).
//!
//! Shown only when stderr is a terminal, and never with `--json` or
//! `-q`. Every line swamp prints goes through [`with_bar_hidden`], so the
//! bar never garbles a plan or a prompt. `-v` lists each finished action.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::render::human_bytes;
use crate::progress::{Reading, meter};

struct State {
    /// Draw bars (a terminal, not --json, not -q).
    draw: bool,
    /// Print each finished action (`-v`).
    verbose: bool,
    bar: Option<ProgressBar>,
    generation: u64,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);
static STOP: AtomicBool = AtomicBool::new(false);

/// Started by `main`; stops (clearing the bar) when dropped.
pub(super) struct Live {
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Live {
    pub(super) fn start(json: bool, quiet: bool, verbose: bool) -> Live {
        let draw = !json && !quiet && std::io::stderr().is_terminal();
        let verbose = verbose && !json;
        if !draw && !verbose {
            return Live { thread: None };
        }
        if verbose {
            meter().keep_finished();
        }
        *STATE.lock().unwrap() = Some(State {
            draw,
            verbose,
            bar: None,
            generation: u64::MAX,
        });
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(|| {
                while !STOP.load(Ordering::Relaxed) {
                    if let Some(state) = STATE.lock().unwrap().as_mut() {
                        tick(state);
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
            .ok();
        Live { thread }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            STOP.store(true, Ordering::Relaxed);
            let _ = t.join();
            if let Some(state) = STATE.lock().unwrap().as_mut() {
                tick(state);
                if let Some(bar) = state.bar.take() {
                    bar.finish_and_clear();
                }
            }
        }
    }
}

/// Runs `write` with the bar off the screen (and brought up to date
/// first: a phase that ended takes its bar with it).
pub(super) fn with_bar_hidden<R>(write: impl FnOnce() -> R) -> R {
    let mut guard = match STATE.try_lock() {
        Ok(g) => g,
        // Only the progress thread holds it, briefly; a poisoned lock
        // means it died: write anyway.
        Err(std::sync::TryLockError::WouldBlock) => STATE.lock().unwrap_or_else(|e| e.into_inner()),
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
    };
    match guard.as_mut() {
        Some(state) => {
            tick(state);
            match &state.bar {
                Some(bar) => bar.suspend(write),
                None => write(),
            }
        }
        None => write(),
    }
}

/// Brings the display up to date with the meter.
fn tick(state: &mut State) {
    let now = meter().read();
    if state.verbose {
        for line in meter().take_finished() {
            let line = crate::cli::render::escape_controls(&line).into_owned();
            match &state.bar {
                Some(bar) => bar.println(format!("  {line}")),
                None => eprintln_quiet(&format!("  {line}")),
            }
        }
    }
    if !state.draw {
        return;
    }
    if now.generation != state.generation {
        state.generation = now.generation;
        if let Some(bar) = state.bar.take() {
            bar.finish_and_clear();
        }
        if !now.phase.is_empty() {
            state.bar = Some(new_bar(&now));
        }
    }
    if let Some(bar) = &state.bar {
        update(bar, &now);
    }
}

fn eprintln_quiet(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

fn new_bar(now: &Reading) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
    let template = if now.bytes_total > 0 {
        bar.set_length(now.bytes_total);
        "{spinner} {prefix} [{bar:25}] {done_bytes}/{total_bytes}{rate_eta} · {msg}"
    } else if now.files_total > 0 {
        bar.set_length(now.files_total);
        "{spinner} {prefix} [{bar:25}] {pos}/{len} actions{eta_known}{msg}"
    } else {
        "{spinner} {prefix}{msg}"
    };
    bar.set_style(
        ProgressStyle::with_template(template)
            .expect("valid template")
            .with_key("done_bytes", done_bytes)
            .with_key("total_bytes", total_bytes)
            .with_key("rate_eta", rate_eta)
            .with_key("eta_known", eta_known)
            .progress_chars("=> "),
    );
    bar.set_prefix(now.phase.clone());
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// Bytes as plans and summaries write them (`2.5 MiB`): one formatter,
/// not indicatif's two-decimal one beside ours.
fn done_bytes(state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write) {
    let _ = w.write_str(&human_bytes(state.pos()));
}

fn total_bytes(state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write) {
    let _ = w.write_str(&human_bytes(state.len().unwrap_or(0)));
}

/// `, 12 MiB/s, ETA 3s`, once something has moved: before that neither is
/// known, and `0 B/s, ETA 0s` would be a guess shown as a fact.
fn rate_eta(state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write) {
    if state.pos() > 0 {
        let _ = write!(
            w,
            ", {}/s, ETA {:#}",
            human_bytes(state.per_sec() as u64),
            indicatif::HumanDuration(state.eta())
        );
    }
}

/// `, ETA 3s`, once an action has finished.
fn eta_known(state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write) {
    if state.pos() > 0 {
        let _ = write!(w, ", ETA {:#}", indicatif::HumanDuration(state.eta()));
    }
}

fn update(bar: &ProgressBar, now: &Reading) {
    if now.bytes_total > 0 {
        bar.set_position(now.bytes_done.min(now.bytes_total));
        bar.set_message(format!("{}/{} files", now.files_done, now.files_total));
    } else if now.files_total > 0 {
        bar.set_position(now.files_done.min(now.files_total));
        // indicatif's own `{per_sec}` prints four decimals; none until an
        // action has finished.
        if now.files_done > 0 {
            bar.set_message(format!(", {:.0}/s", bar.per_sec()));
        }
    } else if now.files_done > 0 {
        bar.set_message(format!(
            ": {} ({})",
            now.files_done,
            human_bytes(now.bytes_done)
        ));
    }
}
