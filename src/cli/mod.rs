//! The command line: argument parsing ([`args`]), the error type and exit
//! codes ([`error`]), output helpers ([`output`]) and one module per
//! command group ([`commands`]). Library modules never print.
use crate::cli::output::errln;

mod args;
mod commands;
mod confirm;
mod error;
mod hints;
mod live;
mod locking;
mod logging;
mod output;
pub mod render;
mod run_doc;

use std::path::PathBuf;
use std::process::ExitCode;

use std::io::IsTerminal;

pub use args::Cli;
pub use error::{CliError, ErrorKind};

use crate::config::{self, Config};
use crate::layout::Layout;

/// Global options every command sees.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub json: bool,
    pub color: bool,
    pub repo_arg: Option<PathBuf>,
    /// `--lock-timeout`: overrides `[lock] timeout_secs`.
    pub lock_timeout: Option<std::time::Duration>,
    /// `--detail`: every action of a long plan, not groups.
    pub detail: bool,
    /// `--format markdown` (plan and show): plans as Markdown.
    pub markdown: bool,
    /// `-q`: no progress, no notes on stderr.
    pub quiet: bool,
    /// `--transfers N`: overrides `[sync] concurrency` for this run.
    pub transfers: Option<u16>,
}

impl Ctx {
    /// A plan for people, grouped when long unless `--detail`.
    pub fn render_plan(&self, plan: &crate::plan::Plan) -> String {
        if self.markdown {
            crate::cli::render::render_markdown(plan, self.detail)
        } else {
            crate::cli::render::render_styled(plan, self.detail, self.style())
        }
    }

    /// How tables are drawn on stdout: fitted to a terminal's width, and
    /// coloured when colour is on.
    pub fn style(&self) -> crate::cli::render::Style {
        crate::cli::render::Style {
            width: output::terminal_width(),
            color: self.color,
        }
    }

    /// This context with `--format` applied (`json` is `--json`).
    pub fn with_format(&self, format: args::Format) -> Ctx {
        let mut ctx = self.clone();
        match format {
            args::Format::Text => {}
            args::Format::Markdown => ctx.markdown = true,
            args::Format::Json => ctx.json = true,
        }
        ctx
    }
}

/// An opened repository.
#[derive(Debug, Clone)]
pub struct Repo {
    pub root: PathBuf,
    pub config: Config,
    pub layout: Layout,
}

impl Ctx {
    /// Where `init` creates a repository: `--repo` or the current directory.
    pub fn repo_dir(&self) -> PathBuf {
        self.repo_arg.clone().unwrap_or_else(|| PathBuf::from("."))
    }

    /// The repository `--repo` names, or the one the current directory is
    /// in (searching up through its parents).
    pub fn repo_root(&self) -> Result<PathBuf, config::ConfigError> {
        match &self.repo_arg {
            Some(dir) => config::repo_at(dir),
            None => config::find_repo(std::path::Path::new(".")),
        }
    }

    pub fn open_repo(&self) -> Result<Repo, CliError> {
        let root = self.repo_root()?;
        let config = Config::load(&root)?;
        Repo::new(root, config)
    }
}

impl Repo {
    pub fn new(root: PathBuf, config: Config) -> Result<Repo, CliError> {
        let home = Layout::default_swamp_home()?;
        let layout = Layout::new(&root, &config, &home)?;
        Ok(Repo {
            root,
            config,
            layout,
        })
    }
}

/// What a command asks the process to exit with when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// `--detailed-exitcode` and the plan has changes.
    Changes,
    /// The plan has conflicts (the plan was still shown).
    Conflicts,
    /// The command printed its own failure report.
    Failed,
    /// A plan with changes was shown and not applied: no `-y`, and no
    /// terminal to ask on (see `confirm`).
    Unconfirmed,
}

impl Outcome {
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Outcome::Success => 0,
            Outcome::Changes => 2,
            Outcome::Conflicts => ErrorKind::Conflicts.exit_code(),
            Outcome::Failed => ErrorKind::Failure.exit_code(),
            Outcome::Unconfirmed => confirm::UNCONFIRMED_EXIT,
        }
    }
}

pub fn main() -> ExitCode {
    #[cfg(feature = "failpoints")]
    let _failpoints = fail::FailScenario::setup();

    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let color = args::color_choice(&args);
    let cli = match args::parse(&args, color) {
        Ok(cli) => cli,
        Err(e) => {
            let shape = args::names_run_command(&args).then_some(run_doc::Shape::Run);
            return usage_error(&e, args::wants_json(&args), shape);
        }
    };
    if let Err(code) = start_logging(&cli) {
        return code;
    }
    let ctx = Ctx {
        json: cli.json,
        color: color.enabled(std::io::stdout().is_terminal()),
        repo_arg: cli.repo.clone(),
        lock_timeout: cli.lock_timeout,
        detail: cli.detail,
        markdown: false,
        quiet: cli.quiet,
        transfers: cli.transfers,
    };
    let _live = live::Live::start(ctx.json, ctx.quiet, cli.verbose);
    if !cli.command.only_reads() {
        output::finish_when_closed();
    }
    // Ctrl-C (or SIGTERM) releases the locks this process holds; whatever
    // was half done is resumed by planning again.
    let _ = ctrlc::set_handler(|| {
        crate::engine::locks::release_all();
        // Straight to stderr: the main thread may hold the progress
        // display's lock, blocked on a full pipe.
        use std::io::{IsTerminal, Write};
        let mut stderr = std::io::stderr();
        // The progress line goes: the message starts a clean line.
        let clear = if stderr.is_terminal() {
            "\r\x1b[2K"
        } else {
            "\n"
        };
        // How far the apply got: what finished stays done.
        let got = match crate::progress::meter().files() {
            (done, total) if total > 0 => format!(" after {done} of {total} file(s)"),
            _ => String::new(),
        };
        let _ = writeln!(
            stderr,
            "{clear}Interrupted{got}; released the datastore lock. What finished stays done: run `swamp plan` to see what is left."
        );
        std::process::exit(130);
    });
    let spec_arg = cli.command.datastore_spec().map(str::to_string);
    let shape = cli.command.json_shape();
    match commands::run(&ctx, cli.command) {
        Ok(outcome) => ExitCode::from(outcome.exit_code()),
        Err(mut err) => {
            // A bucket or region given on the command line: say to fix
            // the command line (a name no server accepts is bad input
            // there), not .swamp.toml.
            if let (Some(spec), Some(setting)) = (&spec_arg, err.setting) {
                err.hints = vec![setting.hint_for_spec(spec)];
                if setting == error::Setting::BucketName {
                    err.kind = ErrorKind::Usage;
                }
            }
            // A datastore that stopped answering: say what to run once it
            // is back, whatever the command was.
            if let Some(target) = crate::engine::outage() {
                err.hints = vec![format!(
                    "{target} did not answer; once it is up again, run `{}` again (what completed stays done)",
                    command_line(),
                )];
            }
            tracing::debug!(target: "swamp::cli", error = %err, "the command failed");
            if let (true, Some(shape)) = (ctx.json, shape) {
                output::print_json(&run_doc::RunDoc::failed(&err, shape));
            } else if ctx.json {
                output::print_json(&err.to_json());
            } else {
                // Messages echo keys and paths: never raw control
                // characters (and, as every stderr line, no credential a
                // server's error quoted: see `output::write_stderr`).
                errln!("{}", crate::cli::render::escape_controls(&err.to_string()));
            }
            ExitCode::from(err.kind.exit_code())
        }
    }
}

/// `SWAMP_LOG` and `--trace`, set up; a bad filter or an unwritable trace
/// file is bad input, reported before the command runs.
fn start_logging(cli: &args::Cli) -> Result<(), ExitCode> {
    logging::init(cli.trace.as_deref()).map_err(|e| {
        let hint = match e {
            logging::LoggingError::Filter { .. } => {
                "unset SWAMP_LOG, or give a filter such as `debug` or `swamp::store=trace,info`"
            }
            logging::LoggingError::TraceFile { .. } => {
                "give --trace a file in a directory that exists and can be written"
            }
        };
        let err = CliError::usage(e.to_string()).hint(hint);
        if cli.json {
            output::print_json(&err.to_json());
        } else {
            errln!("{}", crate::cli::render::escape_controls(&err.to_string()));
        }
        ExitCode::from(err.kind.exit_code())
    })
}

/// A command line clap refused (or `--help`/`--version`, which are not
/// errors). Under `--json` the refusal is one JSON document on stdout, like
/// every other error.
fn usage_error(e: &clap::Error, json: bool, shape: Option<run_doc::Shape>) -> ExitCode {
    use clap::error::ErrorKind as K;
    if matches!(
        e.kind(),
        K::DisplayHelp | K::DisplayVersion | K::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    if !json {
        let _ = e.print();
        return ExitCode::from(ErrorKind::Usage.exit_code());
    }
    // clap's text: "error: MESSAGE\n\n  tip: …\n\nUsage: …\n\nFor more
    // information, try '--help'." The message and tips are kept; the usage
    // line and the pointer to --help become the hint.
    let text = e.render().to_string();
    let mut message = String::new();
    let mut tips = Vec::new();
    let mut usage = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(m) = line.strip_prefix("error: ") {
            message = m.to_string();
        } else if let Some(t) = line.strip_prefix("tip: ") {
            tips.push(t.to_string());
        } else if let Some(u) = line.strip_prefix("Usage: ") {
            usage = Some(u.to_string());
        }
    }
    if message.is_empty() {
        message = text
            .lines()
            .next()
            .unwrap_or("invalid command line")
            .to_string();
    }
    let mut hint = tips.join("; ");
    if let Some(u) = usage {
        if !hint.is_empty() {
            hint.push_str("; ");
        }
        hint.push_str(&format!("usage: {u} (see --help)"));
    }
    if hint.is_empty() {
        hint = "see `swamp --help`, or `swamp COMMAND --help`".to_string();
    }
    let err = CliError::usage(message).hint(hint);
    if let Some(shape) = shape {
        output::print_json(&run_doc::RunDoc::failed(&err, shape));
    } else {
        output::print_json(&err.to_json());
    }
    ExitCode::from(ErrorKind::Usage.exit_code())
}

/// This process's command line, quoted for a shell where needed.
pub(crate) fn command_line() -> String {
    crate::journal::command_line()
}
