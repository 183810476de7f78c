//! One module per command group; `run` dispatches.

mod data;
mod datastore;
mod init;
mod reconcile;
mod status;

use super::args::{CatalogCommand, Command, DataCommand, DatastoreCommand, NamespaceCommand};
use super::{CliError, Ctx, Outcome};

pub fn run(ctx: &Ctx, command: Command) -> Result<Outcome, CliError> {
    match command {
        Command::Init {
            namespace,
            datastore,
        } => init::run(ctx, namespace.as_deref(), &datastore),
        Command::Plan {
            scope,
            out,
            detailed_exitcode,
        } => reconcile::plan(ctx, scope, out.as_deref(), detailed_exitcode),
        Command::Apply {
            file: Some(file),
            confirm: _,
            scope: _,
        } => reconcile::apply_saved(ctx, &file),
        Command::Apply {
            file: None,
            scope,
            confirm,
        } => reconcile::apply(ctx, scope, confirm.yes),
        Command::Show { file } => reconcile::show(ctx, &file),
        Command::Status => status::run(ctx),
        Command::Datastore { command } => match command {
            DatastoreCommand::Setup { spec, confirm } => datastore::setup(ctx, &spec, confirm.yes),
            DatastoreCommand::Namespace { command } => match command {
                NamespaceCommand::Set {
                    namespace,
                    migrate,
                    confirm,
                } => datastore::namespace_set(ctx, &namespace, migrate, confirm.yes),
                NamespaceCommand::Unset { migrate, confirm } => {
                    datastore::namespace_unset(ctx, migrate, confirm.yes)
                }
                NamespaceCommand::Migrate { reverse, confirm } => {
                    datastore::namespace_migrate(ctx, reverse, confirm.yes)
                }
            },
        },
        Command::Data { command } => match command {
            DataCommand::Put { name, file } => data::put(ctx, &name, file.as_deref()),
            DataCommand::Get { name, version } => data::get(ctx, &name, version),
            DataCommand::List => data::list(ctx),
            DataCommand::Rm { name } => data::rm(ctx, &name),
            DataCommand::Gc { keep, dry_run } => data::gc(ctx, keep, dry_run),
        },
        Command::Catalog {
            command: CatalogCommand::Rebuild,
        } => data::catalog_rebuild(ctx),
    }
}
