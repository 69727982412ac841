//! `rocm-pin repo`: publish .debs as a (signed) apt repository; `rocm-pin repo keygen`.

use rocm_pin_core::outln;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use rocm_pin_core::exit::usage;
use rocm_pin_core::ops::repo::{self, RepoOptions};

const REPO_EXAMPLES: &str = "\
Examples:
  rocm-pin repo keygen --out repo-key.asc
  rocm-pin repo out/*.deb --out /srv/rocm-pin-repo --suite noble --sign-key repo-key.asc

  # on a client (the key from keygen, or archive-key.gpg from the repository):
  install -m644 repo-key.pub.gpg /usr/share/keyrings/rocm-pin.gpg
  echo 'deb [signed-by=/usr/share/keyrings/rocm-pin.gpg] https://HOST/rocm-pin-repo noble main' \\
    > /etc/apt/sources.list.d/rocm-pin.list

With --flat the sources line is `deb [signed-by=…] https://HOST/rocm-pin-repo ./`.
Running it again on the same --out adds packages and keeps the ones already there; a package
whose name, version and architecture are already published with different bytes is refused.";

#[derive(Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = REPO_EXAMPLES
)]
pub struct RepoArgs {
    #[command(subcommand)]
    pub command: Option<RepoCommand>,

    /// .deb files to publish
    #[arg(value_name = "DEB", required = true)]
    pub debs: Vec<PathBuf>,

    /// Repository directory (created if missing; an existing repository is extended)
    #[arg(long, value_name = "DIR", required = true)]
    pub out: Option<PathBuf>,

    /// Suite (also the Codename) under dists/
    #[arg(long, value_name = "NAME", default_value = repo::DEFAULT_SUITE)]
    pub suite: String,

    /// Component under dists/<suite>/ and pool/
    #[arg(long, value_name = "NAME", default_value = repo::DEFAULT_COMPONENT)]
    pub component: String,

    /// Armored OpenPGP secret key (from `rocm-pin repo keygen`): writes InRelease and Release.gpg
    #[arg(long, value_name = "KEY.asc")]
    pub sign_key: Option<PathBuf>,

    /// Write a flat repository (Packages and Release at the top, sources line `URL ./`)
    #[arg(long)]
    pub flat: bool,

    /// Print the summary as JSON on stdout
    #[arg(long)]
    pub json: bool,

    /// No progress output
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Subcommand, Debug)]
pub enum RepoCommand {
    /// Make an Ed25519 OpenPGP signing key: KEY.asc (secret, mode 0600), KEY.pub.asc and
    /// KEY.pub.gpg (public; the .gpg is what `signed-by=` wants)
    Keygen(KeygenArgs),
}

#[derive(Args, Debug)]
pub struct KeygenArgs {
    /// Secret key file to create (never overwritten)
    #[arg(long, value_name = "KEY.asc")]
    pub out: PathBuf,

    /// User ID stored in the key
    #[arg(long, default_value = "rocm-pin repository signing key")]
    pub user_id: String,
}

pub fn run(args: RepoArgs) -> anyhow::Result<()> {
    if let Some(RepoCommand::Keygen(k)) = args.command {
        let files = repo::keygen(&k.out, &k.user_id)?;
        outln!("secret key:  {} (keep it private)", files.secret.display());
        outln!("public key:  {}", files.public_asc.display());
        outln!("signed-by:   {}", files.public_gpg.display());
        outln!("fingerprint: {}", files.fingerprint);
        return Ok(());
    }
    let Some(out) = args.out else {
        return Err(usage("--out DIR is required"));
    };
    let opts = RepoOptions {
        suite: args.suite,
        component: args.component,
        sign_key: args.sign_key,
        flat: args.flat,
        ..RepoOptions::new(out)
    };
    let listener = rocm_pin_core::progress::for_cli(args.quiet || args.json);
    let summary = repo::publish(&args.debs, &opts, listener.as_ref())?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        outln!(
            "{}: {} added, {} already present, {} packages in total ({})",
            opts.out.display(),
            summary.added.len(),
            summary.unchanged.len(),
            summary.total,
            summary.architectures.join(", ")
        );
        match &summary.signed_by {
            Some(fp) => outln!("signed by {fp}: {}", summary.release.display()),
            None => outln!(
                "unsigned (clients need [trusted=yes]; pass --sign-key to sign): {}",
                summary.release.display()
            ),
        }
    }
    Ok(())
}
