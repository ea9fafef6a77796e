//! The `clawhdf5` command-line program.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = match cli::Cli::try_parse() {
        Ok(a) => a,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                use std::io::Write;
                // Help piped into a reader that stops early is not an error.
                let _ = write!(std::io::stdout().lock(), "{e}");
                return ExitCode::SUCCESS;
            }
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                eprint!("{e}");
                return ExitCode::from(2);
            }
            eprintln!(
                "clawhdf5: {} (see clawhdf5 --help)",
                cli::first_line(&e.to_string())
            );
            return ExitCode::from(2);
        }
    };
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if cli::closed_output(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("clawhdf5: error: {}", cli::one_line(&e));
            ExitCode::FAILURE
        }
    }
}
