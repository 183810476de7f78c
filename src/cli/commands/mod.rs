//! One module per command group; `run` dispatches.

mod config;
mod data;
mod datastore;
mod doctor;
mod help;
mod history;
mod init;
mod lock;
mod reconcile;
mod status;
mod undo;

use super::args::{
    CatalogCommand, Command, ConfigCommand, DataCommand, DatastoreCommand, DoctorCommand,
    LockCommand, NamespaceCommand,
};
use super::{CliError, Ctx, Outcome};

pub(super) fn run(ctx: &Ctx, command: Command) -> Result<Outcome, CliError> {
    match command {
        Command::Init {
            namespace,
            datastore,
            repo_id,
        } => init::run(ctx, namespace.as_deref(), &datastore, repo_id),
        Command::Plan {
            scope,
            sync,
            out,
            detailed_exitcode,
            diff,
            format,
        } => reconcile::plan(
            &ctx.with_format(format),
            scope,
            crate::engine::SyncOptions {
                diff,
                ..sync.options()
            },
            out.as_deref(),
            detailed_exitcode,
        ),
        Command::Apply {
            file: Some(file), ..
        } => reconcile::apply_saved(ctx, &file),
        Command::Apply {
            file: None,
            scope,
            sync,
            confirm,
        } => reconcile::apply(ctx, scope, sync.options(), confirm),
        Command::Show { file, format } => reconcile::show(&ctx.with_format(format), &file),
        Command::Status => status::run(ctx),
        Command::History { mine, command } => history::run(ctx, mine, command),
        Command::Undo {
            prune: true,
            detailed_exitcode,
            confirm,
            ..
        } => undo::prune(ctx, confirm, detailed_exitcode),
        Command::Undo {
            id,
            detailed_exitcode,
            confirm,
            out,
            ..
        } => undo::run(
            ctx,
            id.as_deref(),
            confirm,
            detailed_exitcode,
            out.as_deref(),
        ),
        Command::Redo {
            detailed_exitcode,
            confirm,
            out,
        } => undo::redo(ctx, confirm, detailed_exitcode, out.as_deref()),
        // Git's habits: `datastore sync`, `--push`, `--pull` at the top.
        Command::Sync { sync, confirm } => {
            reconcile::apply(ctx, crate::engine::Scope::Sync, sync.options(), confirm)
        }
        Command::Push { sync, confirm } => {
            reconcile::apply(ctx, crate::engine::Scope::Push, sync.options(), confirm)
        }
        Command::Pull { sync, confirm } => {
            reconcile::apply(ctx, crate::engine::Scope::Pull, sync.options(), confirm)
        }
        Command::Datastore { command } => datastore_command(ctx, command),
        Command::Data { command } => match command {
            DataCommand::Put {
                name,
                file,
                allow_empty,
            } => data::put(ctx, &name, file.as_deref(), allow_empty),
            DataCommand::Get { name, version } => data::get(ctx, &name, version),
            DataCommand::List => data::list(ctx),
            DataCommand::Rm { name } => data::rm(ctx, &name),
            DataCommand::Gc { keep, dry_run } => data::gc(ctx, keep, dry_run),
        },
        Command::Catalog {
            command: CatalogCommand::Rebuild,
        } => data::catalog_rebuild(ctx),
        Command::Doctor {
            command:
                DoctorCommand::Datastores {
                    repair,
                    check_write,
                    confirm,
                },
        } => doctor::datastores(ctx, repair, check_write, confirm),
        Command::Completions { shell } => help::completions(shell),
        Command::Man { out_dir } => help::man(ctx, out_dir.as_deref()),
    }
}

/// `swamp datastore …`.
fn datastore_command(ctx: &Ctx, command: DatastoreCommand) -> Result<Outcome, CliError> {
    match command {
        DatastoreCommand::Setup {
            spec,
            hydration,
            keep_source,
            confirm,
        } => {
            let options = crate::engine::SyncOptions {
                hydration,
                keep_source,
                ..Default::default()
            };
            datastore::setup(ctx, &spec, options, confirm)
        }
        DatastoreCommand::Sync {
            push,
            pull,
            sync,
            confirm,
        } => {
            let scope = match (push, pull) {
                (true, _) => crate::engine::Scope::Push,
                (_, true) => crate::engine::Scope::Pull,
                _ => crate::engine::Scope::Sync,
            };
            reconcile::apply(ctx, scope, sync.options(), confirm)
        }
        DatastoreCommand::Hydration { mode } => datastore::hydration(ctx, mode),
        DatastoreCommand::Namespaces { datastore: spec } => {
            datastore::namespaces(ctx, spec.as_deref())
        }
        DatastoreCommand::Lock { command } => match command {
            LockCommand::Status { at } => lock::status(ctx, &at),
            LockCommand::Release { at, force } => lock::release(ctx, &at, force),
        },
        DatastoreCommand::Config {
            command: ConfigCommand::Migrate { confirm },
        } => config::migrate(ctx, confirm),
        DatastoreCommand::Namespace { command } => match command {
            NamespaceCommand::Set {
                namespace,
                migrate,
                confirm,
            } => datastore::namespace_set(ctx, &namespace, migrate, confirm),
            NamespaceCommand::Unset { migrate, confirm } => {
                datastore::namespace_unset(ctx, migrate, confirm)
            }
            NamespaceCommand::Migrate { reverse, confirm } => {
                datastore::namespace_migrate(ctx, reverse, confirm)
            }
        },
    }
}
