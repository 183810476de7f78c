//! STYLE.md's vocabulary, applied to every run of the end-to-end harness:
//! a phrase its "Words not used" list names, in what swamp printed, fails
//! the test that ran it. Runs with `--detail` (which lists sync records
//! by kind) or `--json` (a document, not prose) are left aside.

use std::sync::OnceLock;

/// The phrases STYLE.md lists under "### Words not used", each the code
/// span that starts a list item (`` `x` `` or ``` `` x `` ```).
pub fn banned() -> &'static [String] {
    static BANNED: OnceLock<Vec<String>> = OnceLock::new();
    BANNED.get_or_init(|| {
        let style =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/STYLE.md")).unwrap();
        let section = style
            .split("### Words not used")
            .nth(1)
            .expect("STYLE.md lists the words not used");
        let phrases: Vec<String> = section
            .lines()
            .take_while(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let item = l.strip_prefix("- ")?;
                if let Some(rest) = item.strip_prefix("`` ") {
                    return Some(rest.split(" ``").next()?.to_string());
                }
                Some(item.strip_prefix('`')?.split('`').next()?.to_string())
            })
            .collect();
        assert!(
            phrases.len() >= 5,
            "STYLE.md's list was not read: {phrases:?}"
        );
        phrases
    })
}

/// A log line (`SWAMP_LOG`, `--verbose`): `2026-12-06T20:34:55Z DEBUG …`,
/// for developers, naming actions by kind.
fn is_log(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() > 11 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[10] == b'T'
}

/// The first banned phrase `output` holds (log lines aside), and its line.
pub fn first_banned(output: &str) -> Option<(&'static str, String)> {
    output.lines().filter(|l| !is_log(l)).find_map(|line| {
        let lower = line.to_lowercase();
        let word = banned()
            .iter()
            .find(|b| lower.contains(&b.to_lowercase()))?;
        Some((word.as_str(), line.to_string()))
    })
}

/// Fails when a run of `args` printed a banned phrase.
#[track_caller]
pub fn check(args: &[&str], stdout: &str, stderr: &str) {
    if args.iter().any(|a| *a == "--detail" || *a == "--json") {
        return;
    }
    for (stream, text) in [("stdout", stdout), ("stderr", stderr)] {
        if let Some((word, line)) = first_banned(text) {
            panic!(
                "`swamp {}` printed {word:?} on {stream}, a phrase STYLE.md's vocabulary does not use:\n  {line}",
                args.join(" ")
            );
        }
    }
}

#[test]
fn the_vocabulary_check_fails_on_a_banned_phrase_and_passes_plain_output() {
    let said = "error: scope `push` needs a remote datastore\n";
    assert_eq!(
        first_banned(said).map(|(w, _)| w),
        Some("scope `"),
        "{:?}",
        banned()
    );
    let caught = std::panic::catch_unwind(|| check(&["push"], "", said));
    assert!(caught.is_err(), "a banned phrase fails the run's test");
    check(&["push", "--detail"], "1 note-progress", "");
    check(
        &["push"],
        "",
        "2026-12-06T20:34:55.419141Z DEBUG kind=\"note-progress\"\n",
    );
    check(
        &["plan"],
        "Plan: 1 to upload (3 B), sync records to update.\n",
        "",
    );
}
