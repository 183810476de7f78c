//! Output helpers: JSON documents on stdout, confirmation prompts, and a
//! progress bar on a terminal.

use std::io::{IsTerminal, Write};

/// Prints a JSON document, streamed (not built as a string first). A write
/// error (a closed pipe) ends the document quietly.
pub fn print_json<T: serde::Serialize + ?Sized>(value: &T) {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    if serde_json::to_writer_pretty(&mut out, value).is_ok() {
        let _ = out.write_all(b"\n");
    }
    let _ = out.flush();
}

/// A `--json` document: the plan under `plan` (streamed, see
/// [`crate::plan::file::SavedPlan::doc`]), then the fields of `rest`.
pub fn print_plan_json(plan: &crate::plan::file::SavedPlan, rest: serde_json::Value) {
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

/// True when a person can answer a prompt.
pub fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Asks on the terminal; only `yes` (or `y`) is a yes.
pub fn ask(question: &str) -> bool {
    eprint!("{question} Only 'yes' will be accepted: ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if std::io::stdin().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim(), "yes" | "y")
}

/// A progress bar on stderr when it is a terminal, hidden otherwise.
pub fn progress_bar(total: usize) -> indicatif::ProgressBar {
    if total < 2 || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} applying [{bar:30}] {pos}/{len} actions ({per_sec}, eta {eta})",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar
}
