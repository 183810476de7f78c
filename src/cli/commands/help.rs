//! `swamp completions SHELL` and `swamp man`: generated from the clap
//! definitions, so they never drift from the real command line.

use std::path::Path;

use clap::CommandFactory;

use crate::cli::args::{Cli, Shell};
use crate::cli::output::outln;
use crate::cli::{CliError, Ctx, Outcome};

pub(super) fn completions(shell: Shell) -> Result<Outcome, CliError> {
    use clap_complete::Shell as S;
    let shell = match shell {
        Shell::Bash => S::Bash,
        Shell::Zsh => S::Zsh,
        Shell::Fish => S::Fish,
        Shell::Elvish => S::Elvish,
        Shell::Powershell => S::PowerShell,
    };
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "swamp", &mut script);
    crate::cli::output::out!("{}", String::from_utf8_lossy(&script));
    Ok(Outcome::Success)
}

pub(super) fn man(ctx: &Ctx, out_dir: Option<&Path>) -> Result<Outcome, CliError> {
    let command = Cli::command();
    let Some(dir) = out_dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(command)
            .render(&mut page)
            .map_err(|e| CliError::failure(format!("could not render the man page: {e}")))?;
        crate::cli::output::out!("{}", String::from_utf8_lossy(&page));
        return Ok(Outcome::Success);
    };
    if !dir.is_dir() {
        return Err(
            CliError::usage(format!("{} is not a directory", dir.display()))
                .hint("create it first, or pass an existing directory to --out-dir"),
        );
    }
    let mut written = Vec::new();
    write_pages(command, dir, &mut written)?;
    if ctx.json {
        crate::cli::output::print_json(&serde_json::json!({ "written": written }));
    } else {
        outln!("Wrote {} man page(s) to {}.", written.len(), dir.display());
    }
    Ok(Outcome::Success)
}

/// One page per command, named as git names its pages (`swamp-data-put.1`).
fn write_pages(
    command: clap::Command,
    dir: &Path,
    written: &mut Vec<String>,
) -> Result<(), CliError> {
    let command = command.disable_help_subcommand(true);
    for sub in command.get_subcommands() {
        if sub.is_hide_set() {
            continue;
        }
        let name = format!("{}-{}", command.get_name(), sub.get_name());
        let sub = sub
            .clone()
            .name(name.clone())
            .bin_name(name.replace('-', " "));
        write_pages(sub, dir, written)?;
    }
    let file = format!("{}.1", command.get_name());
    let mut page = Vec::new();
    clap_mangen::Man::new(command)
        .render(&mut page)
        .map_err(|e| CliError::failure(format!("could not render {file}: {e}")))?;
    crate::fsutil::atomic_write(&dir.join(&file), &page).map_err(|e| {
        CliError::failure(format!(
            "could not write {}: {e}",
            dir.join(&file).display()
        ))
    })?;
    written.push(file);
    Ok(())
}
