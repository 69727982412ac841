#![warn(clippy::too_many_lines)]
// The subcommands' doc comments are clap's --help text, where `<version>` is how a value is
// written; rustdoc would read it as an unclosed HTML tag.
#![allow(rustdoc::invalid_html_tags)]

mod cli;

use rocm_pin_core::output;

fn main() {
    let cli = cli::parse();
    match cli::run(cli) {
        Ok(()) => {}
        // The reader of our stdout went away (`| head`): end as any Unix filter does there.
        Err(err) if output::is_stdout_closed(&err) => output::exit_by_sigpipe(),
        Err(err) => {
            // One line per cause, outermost first: what failed, then why.
            let mut msg = format!("rocm-pin: error: {err}");
            for cause in err.chain().skip(1) {
                msg.push_str(&format!("\n  caused by: {cause}"));
            }
            // The safety net: a message quoting what a root, an image or a .deb said never
            // drives the terminal (the newlines that lay the message out are kept).
            let msg = output::escaped_keeping_lines(&msg);
            output::write_stderr(format_args!("{msg}\n"));
            std::process::exit(rocm_pin_core::error::exit_code_for(&err));
        }
    }
}
