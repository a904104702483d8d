//! `blindjoin keygen`: a party's TLS identity, a key pair and a self-signed certificate.
//!
//! The two organisations exchange fingerprints (or certificates) out of band, by a channel
//! they already trust (a phone call, a signed e-mail), and each runs with the other's
//! `--peer-fingerprint`: no certificate authority is involved.

use crate::error::{CliError, CliResult};
use blindjoin_core::channel::tls::Identity;
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `blindjoin keygen`.
#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Writes NAME.key and NAME.crt (NAME may include a directory).
    #[arg(long, value_name = "NAME")]
    pub out: PathBuf,
    /// The name in the certificate (e.g. your organisation's domain) [default: the file name].
    #[arg(long)]
    pub subject: Option<String>,
    /// Replace existing files.
    #[arg(long)]
    pub force: bool,
}

fn with_ext(base: &Path, ext: &str) -> PathBuf {
    let mut s = base.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

/// Creates `path` with `bytes` (mode 0600 if `private`), refusing to replace a file unless
/// `force`.
fn create(path: &Path, bytes: &[u8], private: bool, force: bool) -> CliResult<()> {
    let fail = |source| CliError::File {
        path: path.to_path_buf(),
        source,
    };
    let mut o = std::fs::OpenOptions::new();
    o.write(true);
    if force {
        o.create(true).truncate(true);
    } else {
        o.create_new(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(if private { 0o600 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = private;
    let mut f = o.open(path).map_err(fail)?;
    #[cfg(unix)]
    if private {
        // `mode` applies only to a new file; an existing one replaced with --force is narrowed.
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(fail)?;
    }
    f.write_all(bytes).and_then(|()| f.sync_all()).map_err(fail)
}

/// Runs `blindjoin keygen`.
pub fn run(a: &KeygenArgs) -> CliResult<()> {
    let (key_path, cert_path) = (with_ext(&a.out, "key"), with_ext(&a.out, "crt"));
    if !a.force {
        for p in [&key_path, &cert_path] {
            if p.exists() {
                return Err(CliError::Usage(format!(
                    "{}: exists; give --force to replace it",
                    p.display()
                )));
            }
        }
    }
    let subject = a.subject.clone().unwrap_or_else(|| {
        a.out
            .file_name()
            .map_or_else(|| "blindjoin".into(), |n| n.to_string_lossy().into_owned())
    });
    let (id, pem) = Identity::generate(&subject)?;
    create(&key_path, pem.key.as_bytes(), true, a.force)?;
    create(&cert_path, pem.cert.as_bytes(), false, a.force)?;
    eprintln!(
        "wrote {} (private: keep it here) and {} (give it, or the fingerprint, to the peer)",
        key_path.display(),
        cert_path.display()
    );
    println!("{}", id.fingerprint());
    Ok(())
}
