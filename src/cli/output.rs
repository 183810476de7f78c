//! Output helpers: JSON documents on stdout, confirmation prompts, and a
//! progress bar on a terminal.

use std::io::{IsTerminal, Write};

pub fn print_json(value: &serde_json::Value) {
    let mut out = serde_json::to_string_pretty(value).expect("json serialises");
    out.push('\n');
    let _ = std::io::stdout().write_all(out.as_bytes());
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
