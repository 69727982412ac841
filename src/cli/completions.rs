use clap::{Args, CommandFactory};

#[derive(Args, Debug)]
#[command(after_help = "Example:\n  rocm-pin completions bash > /etc/bash_completion.d/rocm-pin")]
pub struct CompletionsArgs {
    /// The shell to generate completions for
    pub shell: clap_complete::Shell,
}

pub fn run(args: CompletionsArgs) -> anyhow::Result<()> {
    let mut cmd = super::Cli::command();
    // Into a buffer first: clap_complete unwraps its own writes, which panics on a closed pipe.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "rocm-pin", &mut script);
    rocm_pin_core::output::write_stdout_bytes(&script)
}
