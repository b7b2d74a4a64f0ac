//! The audit folder a command reads, checked before anything is read: one clear sentence for a
//! path that is missing, a file, or a folder with no audit files.

use std::path::{Path, PathBuf};

use clap::ArgMatches;
use toolgate_core::audit::report::chain_files;
use toolgate_core::audit::{AUDIT_LOG_FILE, SESSION_SUMMARIES_FILE};

/// The `DIR` argument, when it is an audit folder.
///
/// # Errors
/// The sentence to print (exit 2): `` `X` does not exist ``, `` `X` is a file, not an audit
/// folder … ``, `` `X` holds no audit files … ``.
pub(crate) fn audit_folder(m: &ArgMatches) -> Result<PathBuf, String> {
    let dir = m
        .get_one::<PathBuf>("dir")
        .cloned()
        .ok_or_else(|| "no DIR given".to_owned())?;
    check(&dir)?;
    Ok(dir)
}

fn check(dir: &Path) -> Result<(), String> {
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(format!("`{}` does not exist", dir.display()))
        }
        Err(e) => Err(format!("cannot read `{}`: {e}", dir.display())),
        Ok(meta) if !meta.is_dir() => {
            let hint = match dir.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => {
                    format!(" (`{}`)", parent.display())
                }
                _ => String::new(),
            };
            Err(format!(
                "`{}` is a file, not an audit folder: give the folder that holds it{hint}",
                dir.display()
            ))
        }
        Ok(_) => {
            if chain_files(dir, AUDIT_LOG_FILE).is_empty()
                && chain_files(dir, SESSION_SUMMARIES_FILE).is_empty()
            {
                return Err(format!(
                    "`{}` holds no audit files ({AUDIT_LOG_FILE}, {SESSION_SUMMARIES_FILE}): is it \
                     the audit folder?",
                    dir.display()
                ));
            }
            Ok(())
        }
    }
}
