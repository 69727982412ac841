use clap::{Args, CommandFactory};

#[derive(Args, Debug)]
#[command(after_help = "Example:\n  rocm-pin completions bash > /etc/bash_completion.d/rocm-pin")]
pub struct CompletionsArgs {
    /// The shell to generate completions for
    pub shell: clap_complete::Shell,
}

pub fn run(args: CompletionsArgs) -> anyhow::Result<()> {
    let mut cmd = super::Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "rocm-pin", &mut std::io::stdout());
    Ok(())
}
