#![warn(clippy::too_many_lines)]
// The subcommands' doc comments are clap's --help text, where `<version>` is how a value is
// written; rustdoc would read it as an unclosed HTML tag.
#![allow(rustdoc::invalid_html_tags)]

mod cli;
mod cli_shared;

fn main() {
    let cli = cli::parse();
    cli_shared::finish(cli::run(cli));
}
