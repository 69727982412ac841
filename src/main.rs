use clap::Parser;

fn main() {
    let cli = rocm_pin::cli::Cli::parse();
    match rocm_pin::cli::run(cli) {
        Ok(()) => {}
        Err(err) => {
            // One line per cause, outermost first: what failed, then why.
            let mut msg = format!("rocm-pin: error: {err}");
            for cause in err.chain().skip(1) {
                msg.push_str(&format!("\n  caused by: {cause}"));
            }
            eprintln!("{msg}");
            std::process::exit(rocm_pin::error::exit_code_for(&err));
        }
    }
}
