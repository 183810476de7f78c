//! Command-line definitions (clap). Parsing only; behaviour lives in
//! `cli::commands`.

use std::path::PathBuf;

use std::ffi::OsString;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::config::ConflictPolicy;
use crate::engine::Scope;

#[derive(Debug, Parser)]
#[command(
    name = "swamp",
    version,
    about = "Keep a repository's runtime data in a datastore, and move it between layouts safely",
    long_about = None,
    after_help = "Examples:
  swamp init && swamp datastore setup s3://team-bucket/swamp
  swamp plan                      # review what would change
  swamp apply                     # and make it (asks for `yes`)
  swamp datastore sync --pull -y
  swamp completions bash > ~/.local/share/bash-completion/completions/swamp

Each command has its own examples: `swamp COMMAND --help`. The man pages: `swamp man`.",
)]
pub struct Cli {
    /// Repository directory (default: the current directory or the nearest parent with .swamp.toml)
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "DIR"
    )]
    pub repo: Option<PathBuf>,
    /// Print one machine-readable JSON document on stdout (logs and progress go to stderr)
    #[arg(long, global = true, help_heading = "Global options")]
    pub json: bool,
    /// Do not colour output (same as `--color never`; the NO_COLOR
    /// environment variable does the same)
    #[arg(long, global = true, help_heading = "Global options")]
    pub no_color: bool,
    /// When to colour output: `auto` (on a terminal, unless NO_COLOR is
    /// set), `always` or `never`
    #[arg(long, global = true, help_heading = "Global options", value_name = "WHEN", value_enum, default_value_t = ColorWhen::Auto)]
    pub color: ColorWhen,
    /// How long to wait for the datastore lock when someone else holds it
    /// (e.g. `30s`, `5m`, `0` to give up at once; default: `[lock] timeout_secs`)
    #[arg(long, global = true, help_heading = "Global options", value_name = "DURATION", env = "SWAMP_LOCK_TIMEOUT", value_parser = parse_duration)]
    pub lock_timeout: Option<std::time::Duration>,
    /// List every action, swamp's own sync records included (plans of more than 50 actions are otherwise grouped by kind and directory)
    #[arg(long, global = true, help_heading = "Global options")]
    pub detail: bool,
    /// No progress display and no notes on stderr (errors still go there)
    #[arg(
        short = 'q',
        long,
        global = true,
        help_heading = "Global options",
        conflicts_with = "verbose"
    )]
    pub quiet: bool,
    /// Also list each action on stderr as it finishes
    #[arg(short = 'v', long, global = true, help_heading = "Global options")]
    pub verbose: bool,
    /// How many transfers run at once, for this run (overrides `[sync]
    /// concurrency`)
    #[arg(long, global = true, value_name = "N", help_heading = "Global options", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub transfers: Option<u16>,
    /// Write a JSON line per provider request, lock step and action
    /// (start and end) to FILE, to find a slow or failing request
    /// (`SWAMP_LOG=debug` logs the same and more to stderr)
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        help_heading = "Global options"
    )]
    pub trace: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

impl ColorWhen {
    /// Whether to colour a stream that is (or is not) a terminal.
    pub fn enabled(self, terminal: bool) -> bool {
        match self {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => terminal,
        }
    }
}

/// The colour choice, read before clap parses (clap colours its own help
/// and errors, so it must be told first): `--no-color`, `--color WHEN`,
/// then `NO_COLOR` (<https://no-color.org>: set and not empty).
pub(super) fn color_choice(args: &[OsString]) -> ColorWhen {
    let mut choice = None;
    let mut it = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(arg) = it.next() {
        match arg.as_ref() {
            "--" => break,
            "--no-color" => choice = Some(ColorWhen::Never),
            "--color" => choice = it.next().and_then(|v| ColorWhen::from_str(&v, true).ok()),
            a => {
                if let Some(v) = a.strip_prefix("--color=") {
                    choice = ColorWhen::from_str(v, true).ok();
                }
            }
        }
    }
    choice.unwrap_or_else(|| {
        if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
            ColorWhen::Never
        } else {
            ColorWhen::Auto
        }
    })
}

/// Whether `--json` was asked for, read before clap parses, so that a
/// command line clap refuses is reported as JSON too.
pub(super) fn wants_json(args: &[OsString]) -> bool {
    args.iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .any(|a| a == "--json")
}

/// Whether the words of the command line (flags aside) name a command
/// that applies a plan ([`Command::json_shape`]): its usage errors
/// are printed in the same shape as its other outcomes.
pub(super) fn names_run_command(args: &[OsString]) -> bool {
    // The top-level options that take a value as the next word, as clap
    // knows them (a usage error's path only: the definitions are built).
    let valued: Vec<String> = Cli::command()
        .get_arguments()
        .filter(|a| a.get_action().takes_values())
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect();
    let mut words: Vec<&str> = Vec::new();
    let mut value_next = false;
    for a in args.iter().skip(1).filter_map(|a| a.to_str()) {
        if a == "--" || words.len() == 3 {
            break;
        }
        if std::mem::take(&mut value_next) {
            continue;
        }
        if a.starts_with('-') {
            value_next = valued.iter().any(|v| v == a);
            continue;
        }
        words.push(a);
    }
    matches!(
        words.as_slice(),
        ["apply" | "sync" | "push" | "pull", ..]
            | ["datastore", "sync" | "setup", ..]
            | ["datastore", "config", "migrate", ..]
    )
}

/// Parses the command line with clap told the colour choice.
pub(super) fn parse(args: &[OsString], color: ColorWhen) -> Result<Cli, clap::Error> {
    let choice = match color {
        ColorWhen::Always => clap::ColorChoice::Always,
        ColorWhen::Never => clap::ColorChoice::Never,
        ColorWhen::Auto => clap::ColorChoice::Auto,
    };
    let mut command = Cli::command().color(choice);
    let matches = command
        .try_get_matches_from_mut(args)
        .map_err(|e| with_flag_tip(with_habit_tip(e, args), &command))?;
    Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command))
}

/// Other tools' words for what a top-level command does here.
const HABITS: [(&str, &str); 8] = [
    ("fetch", "pull"),
    ("download", "pull"),
    ("upload", "push"),
    ("log", "history"),
    ("revert", "undo"),
    ("rollback", "undo"),
    ("diff", "plan"),
    ("check", "doctor"),
];

/// An unknown top-level command that is another tool's word for one of
/// ours gets that one as its tip (clap suggests only look-alikes).
fn with_habit_tip(mut e: clap::Error, args: &[OsString]) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::InvalidSubcommand || e.get(ContextKind::SuggestedSubcommand).is_some()
    {
        return e;
    }
    let Some(ContextValue::String(word)) = e.get(ContextKind::InvalidSubcommand) else {
        return e;
    };
    // Only the command word itself (the first argument that is no option
    // or option value): a subcommand's unknown word is not ours to map.
    let mut rest = args.iter().skip(1).map(|a| a.to_string_lossy());
    let mut first = None;
    while let Some(a) = rest.next() {
        if !a.starts_with('-') {
            first = Some(a);
            break;
        }
        if ["--repo", "--lock-timeout", "--color", "--transfers"].contains(&a.as_ref()) {
            rest.next();
        }
    }
    if first.as_deref() != Some(word.as_str()) {
        return e;
    }
    if let Some((_, ours)) = HABITS.iter().find(|(theirs, _)| *theirs == word.as_str()) {
        e.insert(
            ContextKind::SuggestedSubcommand,
            ContextValue::Strings(vec![(*ours).to_string()]),
        );
    }
    e
}

/// An unknown `--flag` that is a typo of one the command line knows
/// (`--yse`): that one as its tip. clap's own look-alike search misses
/// short names with letters swapped.
fn with_flag_tip(mut e: clap::Error, command: &clap::Command) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument || e.get(ContextKind::SuggestedArg).is_some() {
        return e;
    }
    let Some(ContextValue::String(given)) = e.get(ContextKind::InvalidArg) else {
        return e;
    };
    let Some(given) = given.strip_prefix("--") else {
        return e;
    };
    let given = given.split_once('=').map_or(given, |(name, _)| name);
    let mut longs = Vec::new();
    let mut stack = vec![command];
    while let Some(c) = stack.pop() {
        for a in c.get_arguments() {
            longs.extend(
                a.get_long()
                    .into_iter()
                    .chain(a.get_all_aliases().into_iter().flatten()),
            );
        }
        stack.extend(c.get_subcommands());
    }
    if let Some(m) = crate::config::did_you_mean(given, &longs) {
        e.insert(
            ContextKind::SuggestedArg,
            ContextValue::String(format!("--{m}")),
        );
    }
    e
}

/// How a sync plan settles conflicts and guards.
#[derive(Debug, Args, Clone, Copy)]
pub struct SyncArgs {
    /// Settle changes on both sides: fail (default), local, remote, newer, keep-both
    #[arg(long, value_name = "POLICY", value_parser = parse_policy)]
    pub conflict: Option<ConflictPolicy>,
    /// Override the delete guards (max_delete_percent, empty side, everything changed)
    #[arg(long)]
    pub force: bool,
    /// With --force: also delete cache files whose content exists nowhere else
    #[arg(long, requires = "force")]
    pub force_delete_local: bool,
    /// Plan as a first sync: set the record of the last sync aside, so nothing is deleted on either side
    #[arg(long)]
    pub no_base: bool,
    /// Delete and overwrite for good this run: nothing set aside for `swamp undo`, no remote trash copies
    #[arg(long)]
    pub no_undo: bool,
    /// Download every file a lazy pull recorded as in the remote only (`[sync] hydration = "lazy"`)
    #[arg(long)]
    pub hydrate: bool,
}

/// `-y`, `--yes` and `--confirm` are synonyms everywhere.
#[derive(Debug, Args, Clone, Copy)]
pub struct Confirm {
    /// Apply without asking (synonyms: -y, --yes, --confirm)
    #[arg(short = 'y', long = "yes", visible_alias = "confirm", id = "yes")]
    pub yes: bool,
    /// Show the plan and change nothing, without asking (exit 0)
    #[arg(long, conflicts_with = "yes")]
    pub dry_run: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create .swamp.toml for a new repository
    #[command(after_help = "Examples:
  swamp init
  swamp init --namespace infra --datastore file:///mnt/swamp
  swamp init --namespace infra --repo-id 3f2a9c4e-8b7d-4e61-a5c0-1d2e3f4a5b6c")]
    Init {
        /// Namespace for this repository's data in a shared datastore
        #[arg(long, value_name = "NS")]
        namespace: Option<String>,
        /// `local` (default) or `file:///abs/path`
        #[arg(long, value_name = "SPEC", default_value = "local")]
        datastore: String,
        /// The repository id to use instead of a fresh one: to join a
        /// namespace this repository registered before (by default, the
        /// `repoId` of an upstream swamp `.swamp.yaml` in the directory)
        #[arg(long, value_name = "UUID")]
        repo_id: Option<uuid::Uuid>,
    },
    /// Show everything that differs between the configuration and the datastore
    #[command(after_help = "Examples:
  swamp plan
  swamp plan -o reviewed.plan && swamp apply reviewed.plan
  swamp plan --scope push --format markdown > plan.md
  swamp plan --detailed-exitcode   # exit 2 when there is something to do
  swamp plan --diff                # and what each replaced text file changes")]
    Plan {
        /// What to plan: `all` (default: the layout, and a sync with a
        /// remote datastore), `layout` (moves between placements only),
        /// `sync`, `push` or `pull` (the remote only), `config` (managed
        /// config only)
        #[arg(long, default_value = "all", value_parser = parse_scope, value_name = "SCOPE")]
        scope: Scope,
        #[command(flatten)]
        sync: SyncArgs,
        /// Save the plan to FILE for `swamp apply FILE`
        #[arg(short = 'o', long = "out", value_name = "FILE")]
        out: Option<PathBuf>,
        /// Exit 2 when the plan has changes (0 when there are none)
        #[arg(long)]
        detailed_exitcode: bool,
        /// Show a unified diff of every text file (up to 64 KiB) an upload
        /// or download replaces (one GET per remote object read)
        #[arg(long)]
        diff: bool,
        /// How to print the plan: `text` (default), `markdown` (for a
        /// pull-request comment) or `json` (same as --json)
        #[arg(long, value_name = "FORMAT", value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Plan and apply (or apply a saved plan FILE)
    #[command(after_help = "Examples:
  swamp apply                 # shows the plan, asks for `yes`
  swamp apply -y              # no question (scripts, CI)
  swamp apply reviewed.plan   # exactly a plan saved with `swamp plan -o`")]
    Apply {
        /// A plan saved with `swamp plan -o FILE` (planned again and applied
        /// only if unchanged; it carries its own scope, conflict policy and
        /// --force, so those options cannot be given with it)
        #[arg(conflicts_with_all = ["scope", "conflict", "force", "force_delete_local", "no_base", "no_undo", "hydrate"])]
        file: Option<PathBuf>,
        /// What to plan: `all` (default: the layout, and a sync with a
        /// remote datastore), `layout` (moves between placements only),
        /// `sync`, `push` or `pull` (the remote only), `config` (managed
        /// config only)
        #[arg(long, default_value = "all", value_parser = parse_scope, value_name = "SCOPE")]
        scope: Scope,
        #[command(flatten)]
        sync: SyncArgs,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Render a saved plan (or undo plan) file
    #[command(after_help = "Examples:
  swamp show reviewed.plan
  swamp show reviewed.plan --format markdown
  swamp show reviewed.plan --json")]
    Show {
        /// A file written by `swamp plan -o FILE` or `swamp undo -o FILE`
        file: PathBuf,
        /// `text` (default), `markdown` or `json` (same as --json)
        #[arg(long, value_name = "FORMAT", value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// The datastore, namespace, and pending changes
    #[command(after_help = "Examples:
  swamp status
  swamp status --json")]
    Status,
    /// Every clone's applies to the namespace (and this clone's own), newest first
    #[command(
        args_conflicts_with_subcommands = true,
        after_help = "Examples:
  swamp history
  swamp history --mine           # this clone's applies only
  swamp history show <ID>        # what one apply changed
  swamp undo <ID>                # reverse one of them"
    )]
    History {
        /// Only this clone's applies (read from this machine, no request)
        #[arg(long)]
        mine: bool,
        #[command(subcommand)]
        command: Option<HistoryCommand>,
    },
    /// Reverse an apply (default: the newest not undone yet, so each undo walks one further back): plan, review, confirm
    #[command(after_help = "Examples:
  swamp undo                  # the newest apply not undone yet; again for the one before
  swamp undo 20261202-104500-3f2a -o undo.plan && swamp apply undo.plan
  swamp undo --prune -y       # drop trash past [undo] keep_days / max_bytes")]
    Undo {
        /// The apply to reverse, as `swamp history` lists it
        id: Option<String>,
        /// Instead: prune the trash that `[undo] keep_days` and `max_bytes` say is due (planned, then confirmed)
        #[arg(long, conflicts_with = "id")]
        prune: bool,
        /// Save the undo plan to FILE for `swamp apply FILE` (applied only if planning it again gives the same plan)
        #[arg(short = 'o', long = "out", value_name = "FILE", conflicts_with_all = ["prune", "yes"])]
        out: Option<PathBuf>,
        /// Exit 2 when the undo plan has changes (0 when there are none)
        #[arg(long)]
        detailed_exitcode: bool,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Re-apply what the last undo reversed (undo that undo): plan, review, confirm
    #[command(after_help = "Examples:
  swamp undo -y && swamp undo -y   # walk back two applies
  swamp redo -y                    # and forward again, one step")]
    Redo {
        /// Save the redo plan to FILE for `swamp apply FILE`
        #[arg(short = 'o', long = "out", value_name = "FILE", conflicts_with = "yes")]
        out: Option<PathBuf>,
        /// Exit 2 when the redo plan has changes (0 when there are none)
        #[arg(long)]
        detailed_exitcode: bool,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Sync the cache with the remote datastore both ways (`datastore sync`)
    #[command(after_help = "Examples:
  swamp sync             # both ways, asks first
  swamp sync -y")]
    Sync {
        #[command(flatten)]
        sync: SyncArgs,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Upload the cache's changes to the remote datastore (`datastore sync --push`)
    #[command(after_help = "Examples:
  swamp push -y")]
    Push {
        #[command(flatten)]
        sync: SyncArgs,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Download the remote datastore's changes into the cache (`datastore sync --pull`)
    #[command(after_help = "Examples:
  swamp pull -y
  swamp pull --hydrate -y   # fetch what a lazy pull only recorded")]
    Pull {
        #[command(flatten)]
        sync: SyncArgs,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Datastore commands
    Datastore {
        #[command(subcommand)]
        command: DatastoreCommand,
    },
    /// Versioned data in the datastore's `data/` tier
    Data {
        #[command(subcommand)]
        command: DataCommand,
    },
    /// The data catalog (derived, repo-local)
    Catalog {
        #[command(subcommand)]
        command: CatalogCommand,
    },
    /// Health checks, and repairs of what they find
    Doctor {
        #[command(subcommand)]
        command: DoctorCommand,
    },
    /// Print a shell completion script
    #[command(after_help = "Examples:
  swamp completions bash > ~/.local/share/bash-completion/completions/swamp
  swamp completions zsh > \"${fpath[1]}/_swamp\"
  swamp completions fish > ~/.config/fish/completions/swamp.fish")]
    Completions {
        /// The shell to complete in
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the man page (roff), or write one per command into a directory
    #[command(after_help = "Examples:
  swamp man | man -l -
  swamp man --out-dir /usr/local/share/man/man1")]
    Man {
        /// Write swamp.1 and a page per subcommand (swamp-plan.1, …) into DIR
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
}

/// How `plan` and `show` print a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

/// Shells `swamp completions` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

#[derive(Debug, Subcommand)]
pub enum DoctorCommand {
    /// Check the datastore (config, reachability, layout, catalog, drift, sentinel, registration); exit 1 when a check fails
    #[command(after_help = "Examples:
  swamp doctor datastores
  swamp doctor datastores --repair      # preview the fixes
  swamp doctor datastores --repair -y")]
    Datastores {
        /// Preview the automatic fixes of the failed checks (apply them with -y)
        #[arg(long)]
        repair: bool,
        /// Also probe whether the credentials may write the datastore (one
        /// canary object written and removed; without it only reads are sent)
        #[arg(long)]
        check_write: bool,
        #[command(flatten)]
        confirm: Confirm,
    },
}

#[derive(Debug, Subcommand)]
pub enum DatastoreCommand {
    /// Change the datastore (`local`, `file:///abs/path`, `s3://bucket/prefix?region=…&endpoint=…`, `gs://bucket/prefix?endpoint=…`) and move the data there
    #[command(after_help = "Examples:
  swamp datastore setup s3://team-bucket/swamp?region=eu-west-1
  swamp datastore setup gs://team-bucket/swamp --hydration lazy -y
  swamp datastore setup file:///mnt/shared/swamp
  swamp datastore setup local -y   # back into the repository's .swamp/")]
    Setup {
        /// Where the datastore goes: `local`, `file:///abs/path`,
        /// `s3://bucket[/prefix][?region=R&endpoint=URL]` or
        /// `gs://bucket[/prefix][?endpoint=URL]`
        #[arg(value_name = "SPEC")]
        spec: String,
        /// What a pull does in this clone with files the cache lacks: `full` (download them) or `lazy` (record them; each is fetched on first read). This clone's setting (`swamp datastore hydration`), never written to .swamp.toml
        #[arg(long, value_name = "MODE", value_parser = parse_hydration)]
        hydration: Option<crate::config::Hydration>,
        /// Moving from a bucket: copy, and keep the old place's objects (a
        /// `moved` marker there still stops the clones on it)
        #[arg(long)]
        keep_source: bool,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Sync the cache with the remote datastore (both ways, or --push / --pull)
    #[command(after_help = "Examples:
  swamp datastore sync                      # both ways, asks first
  swamp datastore sync --pull -y
  swamp datastore sync --push --conflict local -y
  swamp datastore sync --pull --hydrate     # fetch what a lazy pull only recorded")]
    Sync {
        /// Only upload: the cache's changes go to the remote
        #[arg(long, conflicts_with = "pull")]
        push: bool,
        /// Only download: the remote's changes come into the cache
        #[arg(long)]
        pull: bool,
        #[command(flatten)]
        sync: SyncArgs,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// This clone's hydration: what its pulls do with files the cache lacks (shown, or set for this clone only)
    #[command(after_help = "Examples:
  swamp datastore hydration              # which, and where it comes from
  swamp datastore hydration lazy         # this clone fetches each file on first read
  swamp datastore hydration full         # this clone's pulls download everything
  swamp datastore hydration default      # follow .swamp.toml's [sync] hydration again

Kept in .swamp/state/clone.toml, never in .swamp.toml: the team's default
stays as it is in every other clone.")]
    Hydration {
        /// `full`, `lazy`, or `default` (drop this clone's choice); none shows it
        #[arg(value_name = "MODE", value_parser = parse_hydration_choice)]
        mode: Option<HydrationChoice>,
    },
    /// Namespaces registered in the remote datastore, with their owning repo_id
    #[command(after_help = "Examples:
  swamp datastore namespaces
  swamp datastore namespaces --json
  swamp datastore namespaces --datastore s3://team-bucket/swamp")]
    Namespaces {
        /// A datastore spec (`s3://bucket/prefix?endpoint=…`, `gs://…`, `file:///path`); no repository needed
        #[arg(long, value_name = "SPEC")]
        datastore: Option<String>,
    },
    /// Namespace of this repository's data
    Namespace {
        #[command(subcommand)]
        command: NamespaceCommand,
    },
    /// The distributed lock (inspect it, or break it)
    Lock {
        #[command(subcommand)]
        command: LockCommand,
    },
    /// Managed config: the definition directories kept in the datastore
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
}

/// Which lock: the repository's (default) or any datastore's, by URL.
#[derive(Debug, Args, Clone)]
pub struct LockWhere {
    /// A datastore spec (`s3://bucket/prefix?endpoint=…`, `gs://…`, `file:///path`); no repository needed
    #[arg(long, value_name = "SPEC")]
    pub datastore: Option<String>,
    /// The namespace inside --datastore (default: the solo layout)
    #[arg(long, value_name = "NS", requires = "datastore")]
    pub namespace: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// What one apply changed, key by key, as the team's history records it
    #[command(after_help = "Examples:
  swamp history show 20261207T081500Z-3fa29c
  swamp history show 20261207T081500Z-3fa29c --json")]
    Show {
        /// The apply, as `swamp history` lists it
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum LockCommand {
    /// Who holds the lock, since when, and until when
    #[command(after_help = "Examples:
  swamp datastore lock status
  swamp datastore lock status --datastore s3://team-bucket/swamp --namespace infra")]
    Status {
        #[command(flatten)]
        at: LockWhere,
    },
    /// Remove a stale lock (or, with --force, any lock: only when its holder is surely gone)
    #[command(after_help = "Examples:
  swamp datastore lock release
  swamp datastore lock release --force   # only when the holder is surely gone")]
    Release {
        #[command(flatten)]
        at: LockWhere,
        /// Break a lock that is held and not yet expired, or unreadable
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Preview, or with --confirm apply, publishing models/, workflows/ and vaults/ to the datastore's config/ tier (content first, sentinel last)
    #[command(after_help = "Examples:
  swamp datastore config migrate
  swamp datastore config migrate --confirm")]
    Migrate {
        #[command(flatten)]
        confirm: Confirm,
    },
}

#[derive(Debug, Subcommand)]
pub enum NamespaceCommand {
    /// Set the namespace (with --migrate, also move the data)
    #[command(after_help = "Examples:
  swamp datastore namespace set infra && swamp plan && swamp apply
  swamp datastore namespace set infra --migrate            # preview the move
  swamp datastore namespace set infra --migrate --confirm  # and make it")]
    Set {
        /// The namespace: letters, digits, `-` and `_`
        #[arg(value_name = "NS")]
        namespace: String,
        /// Also move the data now (a preview unless --confirm)
        #[arg(long)]
        migrate: bool,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Remove the namespace (with --migrate, also move the data back)
    #[command(after_help = "Examples:
  swamp datastore namespace unset --migrate
  swamp datastore namespace unset --migrate --confirm")]
    Unset {
        /// Also move the data back now (a preview unless --confirm)
        #[arg(long)]
        migrate: bool,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Preview, or with --confirm apply, the move into the namespace
    #[command(after_help = "Examples:
  swamp datastore namespace migrate
  swamp datastore namespace migrate --confirm
  swamp datastore namespace migrate --reverse --confirm")]
    Migrate {
        /// Move the data back to the solo layout (same as `unset --migrate`)
        #[arg(long)]
        reverse: bool,
        #[command(flatten)]
        confirm: Confirm,
    },
}

#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// Store a new version of NAME (from --file, or stdin)
    #[command(after_help = "Examples:
  swamp data put web/state --file state.json
  terraform output -json | swamp data put web/outputs")]
    Put {
        /// The data's name: `/`-separated segments (`model/output`)
        name: String,
        /// Read the content from this file (default: stdin, which must
        /// not be a terminal)
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        /// Store an empty version when stdin is empty (otherwise refused:
        /// an empty stdin is usually a mistake upstream in a pipe)
        #[arg(long)]
        allow_empty: bool,
    },
    /// Print a version of NAME (the latest by default)
    #[command(after_help = "Examples:
  swamp data get web/state
  swamp data get web/state --version 3 > old.json")]
    Get {
        /// The data's name, as `swamp data list` shows it
        name: String,
        /// The version number (default: the latest)
        #[arg(long, value_name = "N")]
        version: Option<u64>,
    },
    /// List names with their latest version and size
    #[command(after_help = "Examples:
  swamp data list
  swamp data list --json")]
    List,
    /// Delete every version of NAME
    #[command(after_help = "Examples:
  swamp data rm web/state")]
    Rm {
        /// The data's name, as `swamp data list` shows it
        name: String,
    },
    /// Keep only the newest N versions of each name
    #[command(after_help = "Examples:
  swamp data gc --keep 5 --dry-run
  swamp data gc --keep 5")]
    Gc {
        /// How many versions of each name to keep (the newest); required:
        /// what a gc deletes is never a default
        #[arg(long, value_name = "N")]
        keep: usize,
        /// Show what would be removed, remove nothing
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum CatalogCommand {
    /// Rebuild the catalog from the files
    #[command(after_help = "Examples:
  swamp catalog rebuild")]
    Rebuild,
}

impl Command {
    /// The datastore spec this command line names, if any: errors about
    /// its bucket or region are then about the command line, not
    /// `.swamp.toml`.
    pub fn datastore_spec(&self) -> Option<&str> {
        match self {
            Command::Init { datastore, .. } => Some(datastore),
            Command::Datastore {
                command: DatastoreCommand::Setup { spec, .. },
            } => Some(spec),
            Command::Datastore {
                command:
                    DatastoreCommand::Lock {
                        command: LockCommand::Status { at } | LockCommand::Release { at, .. },
                    },
            } => at.datastore.as_deref(),
            Command::Datastore {
                command: DatastoreCommand::Namespaces { datastore },
            } => datastore.as_deref(),
            _ => None,
        }
    }

    /// The `--json` document of the commands that apply a plan (see
    /// `cli::run_doc`): the same keys whatever the outcome, a failure's
    /// included. `None`: the command's own document, or `{error}`.
    pub(crate) fn json_shape(&self) -> Option<crate::cli::run_doc::Shape> {
        use crate::cli::run_doc::Shape;
        match self {
            Command::Apply { .. } | Command::Sync { .. } | Command::Push { .. } => Some(Shape::Run),
            Command::Pull { .. } => Some(Shape::Run),
            Command::Datastore { command } => matches!(
                command,
                DatastoreCommand::Sync { .. }
                    | DatastoreCommand::Setup { .. }
                    | DatastoreCommand::Config { .. }
            )
            .then_some(Shape::Run),
            Command::Undo { prune: true, .. } => Some(Shape::Prune),
            Command::Undo { .. } | Command::Redo { .. } => Some(Shape::Undo),
            _ => None,
        }
    }

    /// True for the commands that change nothing (the datastore, the
    /// cache, .swamp.toml, the lock): a closed stdout may end them at once.
    pub fn only_reads(&self) -> bool {
        match self {
            Command::Plan { out, .. } => out.is_none(),
            Command::Show { .. } | Command::Status | Command::History { .. } => true,
            Command::Datastore { command } => matches!(
                command,
                DatastoreCommand::Namespaces { .. }
                    | DatastoreCommand::Lock {
                        command: LockCommand::Status { .. }
                    }
            ),
            Command::Data { command } => matches!(
                command,
                DataCommand::Get { .. } | DataCommand::List | DataCommand::Gc { dry_run: true, .. }
            ),
            Command::Doctor {
                command:
                    DoctorCommand::Datastores {
                        repair, confirm, ..
                    },
            } => !repair && !confirm.yes,
            Command::Completions { .. } => true,
            Command::Man { out_dir } => out_dir.is_none(),
            _ => false,
        }
    }
}

fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(std::time::Duration::from_secs(secs));
    }
    humantime::parse_duration(s)
        .map_err(|e| format!("{s:?} is not a duration like `30s` or `5m`: {e}"))
}

fn parse_scope(s: &str) -> Result<Scope, String> {
    s.parse()
}

fn parse_policy(s: &str) -> Result<ConflictPolicy, String> {
    match s {
        "fail" => Ok(ConflictPolicy::Fail),
        "local" => Ok(ConflictPolicy::Local),
        "remote" => Ok(ConflictPolicy::Remote),
        "newer" => Ok(ConflictPolicy::Newer),
        "keep-both" => Ok(ConflictPolicy::KeepBoth),
        _ => Err(format!(
            "unknown conflict policy {s:?} (one of: fail, local, remote, newer, keep-both)"
        )),
    }
}

/// `swamp datastore hydration MODE`: a strategy for this clone, or back
/// to the repository's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HydrationChoice {
    Set(crate::config::Hydration),
    Default,
}

fn parse_hydration_choice(s: &str) -> Result<HydrationChoice, String> {
    match s {
        "default" => Ok(HydrationChoice::Default),
        _ => crate::config::Hydration::parse(s)
            .map(HydrationChoice::Set)
            .ok_or_else(|| format!("unknown hydration {s:?} (one of: full, lazy, default)")),
    }
}

fn parse_hydration(s: &str) -> Result<crate::config::Hydration, String> {
    crate::config::Hydration::parse(s)
        .ok_or_else(|| format!("unknown hydration {s:?} (one of: full, lazy)"))
}

impl SyncArgs {
    pub fn options(self) -> crate::engine::SyncOptions {
        crate::engine::SyncOptions {
            conflict: self.conflict,
            force: self.force,
            force_delete_local: self.force_delete_local,
            no_base: self.no_base,
            no_undo: self.no_undo,
            hydrate: self.hydrate,
            hydration: None,
            diff: false,
            keep_source: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::{ColorWhen, Command, color_choice, names_run_command, parse, wants_json};

    fn args(line: &str) -> Vec<std::ffi::OsString> {
        line.split(' ').map(Into::into).collect()
    }

    #[test]
    fn colour_and_json_are_read_before_clap_and_stop_at_a_double_dash() {
        // NO_COLOR is not set by the test harness; these do not read it.
        assert_eq!(
            color_choice(&args("swamp --no-color plan")),
            ColorWhen::Never
        );
        assert_eq!(
            color_choice(&args("swamp plan --color always")),
            ColorWhen::Always
        );
        assert_eq!(
            color_choice(&args("swamp --color=never plan")),
            ColorWhen::Never
        );
        assert_eq!(
            color_choice(&args("swamp data put x -- --no-color")),
            if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
                ColorWhen::Never
            } else {
                ColorWhen::Auto
            }
        );
        assert!(wants_json(&args("swamp plan --json")));
        assert!(!wants_json(&args("swamp data put x -- --json")));
        assert!(!wants_json(&args("swamp plan")));
    }

    #[test]
    fn a_usage_error_of_a_command_that_applies_is_known_by_its_words() {
        for line in [
            "swamp apply --yse",
            "swamp --json pull --bogus",
            "swamp datastore sync --x",
            "swamp datastore config migrate --y",
            "swamp --lock-timeout 5s --json push --bogus",
            "swamp --repo /r apply --yse",
        ] {
            assert!(names_run_command(&args(line)), "{line}");
        }
        for line in [
            "swamp plan --x",
            "swamp data put x -- apply",
            "swamp datastore lock status",
        ] {
            assert!(!names_run_command(&args(line)), "{line}");
        }
    }

    #[test]
    fn only_commands_that_change_nothing_may_end_at_a_closed_stdout() {
        let reads = [
            "swamp plan",
            "swamp status",
            "swamp show f",
            "swamp data list",
            "swamp data gc --keep 1 --dry-run",
            "swamp doctor datastores",
            "swamp completions bash",
            "swamp man",
        ];
        for line in reads {
            let cli = parse(&args(line), ColorWhen::Never).unwrap();
            assert!(cli.command.only_reads(), "{line}");
        }
        let writes = [
            "swamp plan -o f",
            "swamp apply -y",
            "swamp undo",
            "swamp undo x -o f",
            "swamp data gc --keep 1",
            "swamp doctor datastores --repair -y",
            "swamp man --out-dir d",
            "swamp datastore sync --pull",
        ];
        for line in writes {
            let cli = parse(&args(line), ColorWhen::Never).unwrap();
            assert!(!cli.command.only_reads(), "{line}");
        }
        let cli = parse(&args("swamp datastore setup s3://b/p -y"), ColorWhen::Never).unwrap();
        assert!(matches!(cli.command, Command::Datastore { .. }));
        assert_eq!(cli.command.datastore_spec(), Some("s3://b/p"));
    }

    /// Every argument says what it is for, and every command that does
    /// something shows examples: `--help` is the first manual people read.
    #[test]
    fn every_argument_is_documented_and_every_command_has_examples() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path}: argument {id} has no help"));
                }
            }
            let subs: Vec<_> = cmd.get_subcommands().collect();
            if subs.is_empty() && cmd.get_after_help().is_none() {
                missing.push(format!("{path}: no examples"));
            }
            for sub in subs {
                if sub.get_name() == "help" {
                    continue;
                }
                if sub.get_about().is_none() {
                    missing.push(format!("{path} {}: no description", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        let cmd = super::Cli::command();
        cmd.clone().debug_assert();
        walk(&cmd, "swamp", &mut missing);
        assert!(missing.is_empty(), "{}", missing.join("\n"));
    }
}
