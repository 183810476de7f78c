//! Output helpers: every line for people goes through [`out!`]/[`outln!`]
//! (stdout) and [`errln!`] (stderr), which never panic; JSON documents on
//! stdout; confirmation prompts; a progress bar on a terminal.
//!
//! A closed stdout (`swamp plan | head -1`) ends a command that only reads
//! quietly, with exit 0, as git and ripgrep do. A command that changes
//! things (see [`finish_when_closed`]) goes on and finishes what it was
//! asked to do, with its output dropped: stopping it part-way would leave
//! work half done for a reader that is already gone.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static FINISH_WHEN_CLOSED: AtomicBool = AtomicBool::new(false);
/// The exit code a read ends with when its reader goes away.
static CLOSED_EXIT: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Prints to stdout; see the module doc for a closed stdout.
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::output::write_stdout(format_args!($($arg)*)) };
}

/// Prints a line to stdout; see the module doc for a closed stdout.
macro_rules! outln {
    () => { $crate::cli::output::write_stdout(format_args!("\n")) };
    ($($arg:tt)*) => {
        $crate::cli::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Prints a line to stderr; a closed stderr is ignored.
macro_rules! errln {
    () => { $crate::cli::output::write_stderr(format_args!("\n")) };
    ($($arg:tt)*) => {
        $crate::cli::output::write_stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {errln, out, outln};

/// From now on a closed stdout does not end the process: this command
/// changes things, and finishes (or stops at an action boundary) on its own.
pub(super) fn finish_when_closed() {
    FINISH_WHEN_CLOSED.store(true, Ordering::SeqCst);
}

/// A read whose outcome is known before it prints (`plan
/// --detailed-exitcode`: changes, 2; conflicts, 3) ends with that code if
/// its reader goes away, not 0: a script piping it through `head` under
/// `pipefail` still learns the outcome.
pub(super) fn exit_when_closed(code: u8) {
    CLOSED_EXIT.store(code, Ordering::SeqCst);
}

#[doc(hidden)]
pub(super) fn write_stdout(args: std::fmt::Arguments<'_>) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let written = super::live::with_bar_hidden(|| std::io::stdout().lock().write_fmt(args));
    if let Err(e) = written {
        stdout_failed(e);
    }
}

#[doc(hidden)]
/// Every line the CLI writes to stderr (errors, warnings, notes) passes
/// through the redaction: a server's message quoted in a warning can
/// carry a credential as well as an error can.
pub(super) fn write_stderr(args: std::fmt::Arguments<'_>) {
    let text = args.to_string();
    let text = crate::telemetry::redact::redact(&text);
    super::live::with_bar_hidden(|| {
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    });
}

/// Stdout could not be written. A reader that went away (`EPIPE`) is not
/// an error; anything else (a full disk behind a redirect) is said once.
fn stdout_failed(e: std::io::Error) {
    STDOUT_CLOSED.store(true, Ordering::SeqCst);
    let broken_pipe = e.kind() == std::io::ErrorKind::BrokenPipe;
    if !broken_pipe {
        write_stderr(format_args!("error: could not write to stdout: {e}\n"));
    }
    if !FINISH_WHEN_CLOSED.load(Ordering::SeqCst) {
        // Only a reader: nothing is half done. The locks it took are
        // released as on Ctrl-C.
        crate::engine::locks::release_all();
        std::process::exit(if broken_pipe {
            i32::from(CLOSED_EXIT.load(Ordering::SeqCst))
        } else {
            1
        });
    }
}

/// Prints a JSON document, streamed (not built as a string first). A
/// closed stdout is handled as for [`out!`].
pub(super) fn print_json<T: serde::Serialize + ?Sized>(value: &T) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let written = super::live::with_bar_hidden(|| {
        let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        serde_json::to_writer_pretty(&mut out, value)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush())
    });
    if let Err(e) = written {
        stdout_failed(e);
    }
}

/// A `--json` document: the plan under `plan` (streamed, see
/// [`crate::plan::file::SavedPlan::doc`]), then the fields of `rest`.
pub(super) fn print_plan_json(plan: &crate::plan::file::SavedPlan, rest: serde_json::Value) {
    struct WithPlan<'a>(crate::plan::file::PlanDoc<'a>, serde_json::Value);
    impl serde::Serialize for WithPlan<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let rest = self.1.as_object();
            let mut map = s.serialize_map(Some(1 + rest.map_or(0, |r| r.len())))?;
            map.serialize_entry("plan", &self.0)?;
            for (k, v) in rest.into_iter().flatten() {
                map.serialize_entry(k, v)?;
            }
            map.end()
        }
    }
    print_json(&WithPlan(plan.doc(), rest));
}

/// A plan's `--json` form written aside (an unnamed temp file), so that the
/// plan itself can be let go before the verifying plan observes: at
/// 100,000 actions it is the largest thing an apply holds.
pub(super) struct SpilledPlan(std::fs::File);

impl SpilledPlan {
    pub(super) fn new(plan: &crate::plan::file::SavedPlan) -> std::io::Result<SpilledPlan> {
        SpilledPlan::of(&plan.doc())
    }

    fn of<T: serde::Serialize>(value: &T) -> std::io::Result<SpilledPlan> {
        let mut file = tempfile::tempfile()?;
        {
            let mut w = std::io::BufWriter::with_capacity(1 << 16, &mut file);
            serde_json::to_writer_pretty(&mut w, value)?;
            w.flush()?;
        }
        Ok(SpilledPlan(file))
    }
}

/// [`print_plan_json`] with the plan read back from where it was spilled:
/// the same bytes, as one document.
pub(super) fn print_spilled_plan_json(plan: SpilledPlan, rest: serde_json::Value) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let written = super::live::with_bar_hidden(|| {
        let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        write_with_spilled_plan(&mut out, plan, &rest)?;
        out.flush()
    });
    if let Err(e) = written {
        stdout_failed(e);
    }
}

/// Writes `{"plan": <spilled>, <rest's fields>}` as `to_writer_pretty`
/// would: each value one level in (JSON text holds no raw newline but
/// between tokens, so indenting after each one is exact).
fn write_with_spilled_plan(
    out: &mut impl Write,
    plan: SpilledPlan,
    rest: &serde_json::Value,
) -> std::io::Result<()> {
    use std::io::{BufRead, Seek};
    fn indented(out: &mut impl Write, mut from: impl BufRead) -> std::io::Result<()> {
        loop {
            let chunk = from.fill_buf()?;
            if chunk.is_empty() {
                return Ok(());
            }
            let n = chunk.len();
            for piece in chunk.split_inclusive(|b| *b == b'\n') {
                out.write_all(piece)?;
                if piece.ends_with(b"\n") {
                    out.write_all(b"  ")?;
                }
            }
            from.consume(n);
        }
    }
    let SpilledPlan(mut file) = plan;
    file.rewind()?;
    out.write_all(b"{\n  \"plan\": ")?;
    indented(out, std::io::BufReader::with_capacity(1 << 16, file))?;
    for (k, v) in rest.as_object().into_iter().flatten() {
        out.write_all(b",\n  ")?;
        serde_json::to_writer(&mut *out, k)?;
        out.write_all(b": ")?;
        indented(out, serde_json::to_vec_pretty(v)?.as_slice())?;
    }
    out.write_all(b"\n}\n")
}

/// The width of the terminal stdout is, if it is one.
pub(super) fn terminal_width() -> Option<u16> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let size = rustix::termios::tcgetwinsize(std::io::stdout()).ok()?;
    (size.ws_col >= 40).then_some(size.ws_col)
}

/// True when a person can answer a prompt.
pub(super) fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Asks on the terminal, as Terraform does: only the word `yes` is a yes.
pub(super) fn ask(question: &str) -> bool {
    // Nothing is in progress while a person reads and answers.
    crate::progress::meter().idle();
    write_stderr(format_args!(
        "{question}\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: "
    ));
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if std::io::stdin().read_line(&mut answer).is_err() {
        return false;
    }
    answer.trim() == "yes"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spilled_plan_prints_the_very_document_print_plan_json_would() {
        let plan = serde_json::json!({
            "format_version": 1,
            "actions": [{"kind": "upload", "path": "a\nb", "sizes": [1, 2]}, {}],
            "empty": [],
            "summary": {"upload": 1, "nested": {"deep": [[], {}]}},
        });
        let rest = serde_json::json!({
            "applied": {"completed": 2, "nested": {"list": [1, {"a": "x\ny"}], "empty": {}}},
            "converged": false,
            "remaining": null,
        });
        let mut want = serde_json::to_vec_pretty(&serde_json::json!({
            "plan": plan,
            "applied": rest["applied"],
            "converged": false,
            "remaining": null,
        }))
        .unwrap();
        want.push(b'\n');
        let mut got = Vec::new();
        write_with_spilled_plan(&mut got, SpilledPlan::of(&plan).unwrap(), &rest).unwrap();
        assert_eq!(
            String::from_utf8(got).unwrap(),
            String::from_utf8(want).unwrap()
        );
    }
}
