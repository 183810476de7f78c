//! The one confirmation rule of every command that applies changes
//! (`apply`, `sync`/`push`/`pull`, `datastore sync`, `datastore setup`,
//! `namespace set/unset/migrate --migrate`, `config migrate`, `undo`,
//! `undo --prune`, `doctor --repair`), once its plan is shown:
//! - `-y` (`--yes`, `--confirm`): apply;
//! - `--dry-run`: change nothing, exit 0;
//! - on a terminal: ask; only `yes` applies (anything else: exit 1);
//! - otherwise (no terminal, or `--json`): change nothing, say so, exit 2
//!   ([`UNCONFIRMED_EXIT`]), the code `plan --detailed-exitcode` gives a
//!   plan with changes.
//!
//! `data rm` and `data gc` are not asked: local, and undoable.
use crate::cli::args::Confirm;
use crate::cli::output::{ask, errln, interactive};
use crate::cli::run_doc::Reason;
use crate::cli::{Ctx, Outcome};

/// What a command that applied nothing for want of confirmation exits with.
pub(crate) const UNCONFIRMED_EXIT: u8 = 2;

impl Confirm {
    /// Whether the command may get to apply (confirmed already, or it will
    /// ask): a run that cannot takes no lock and writes nothing.
    pub(crate) fn may_apply(self, ctx: &Ctx) -> bool {
        self.yes || (!self.dry_run && !ctx.json && interactive())
    }
}

/// Whether to apply the plan just shown.
pub(crate) enum Go {
    Apply,
    /// Not applied: the command ends with this outcome.
    Stop(Outcome),
}

impl Go {
    /// The outcome the command ends with, unless it applies.
    pub(crate) fn stop(self) -> Option<Outcome> {
        match self {
            Go::Apply => None,
            Go::Stop(outcome) => Some(outcome),
        }
    }
}

/// Applies the rule. `question`: what to ask on a terminal; `json`: prints
/// the document `--json` gives when nothing is applied (`"preview": true`),
/// given why and the message stderr shows too (messages about the run go
/// to stderr whatever the format: `--json` keeps stdout for the document).
pub(crate) fn decide(
    ctx: &Ctx,
    confirm: Confirm,
    question: &str,
    json: impl FnOnce(Reason, &str),
) -> Go {
    if confirm.yes {
        return Go::Apply;
    }
    if !confirm.dry_run && !ctx.json && interactive() {
        if ask(question) {
            return Go::Apply;
        }
        // Not `yes`: nothing was changed.
        errln!("\nApply cancelled.");
        return Go::Stop(Outcome::Failed);
    }
    let (reason, message) = if confirm.dry_run {
        (
            Reason::DryRun,
            format!(
                "This was a dry run; nothing changed. Run `{}` to apply it.",
                rerun_with_yes()
            ),
        )
    } else {
        (
            Reason::NotConfirmed,
            format!(
                "Nothing changed: applying needs confirmation, and there is no terminal to ask on. Run `{}` to apply it (--dry-run only previews).",
                rerun_with_yes()
            ),
        )
    };
    if ctx.json {
        json(reason, &message);
    }
    // About the run, not the plan: stderr, so `> plan.txt` holds the plan
    // alone and the terminal still says why nothing changed.
    if !ctx.quiet {
        errln!("\n{message}");
    }
    Go::Stop(if confirm.dry_run {
        Outcome::Success
    } else {
        Outcome::Unconfirmed
    })
}

/// This very command line with `-y` added and `--dry-run` taken out: what
/// to run to apply without being asked.
pub(crate) fn rerun_with_yes() -> String {
    let line = crate::cli::command_line();
    let line = line
        .split(' ')
        .filter(|w| *w != "--dry-run")
        .collect::<Vec<_>>()
        .join(" ");
    match line.find(" -- ") {
        Some(at) => format!("{} -y{}", &line[..at], &line[at..]),
        None => format!("{line} -y"),
    }
}
