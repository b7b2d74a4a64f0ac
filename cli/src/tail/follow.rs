//! Following a file as `tail -F` does: new lines as they are appended, the next file after a
//! rotation by rename (the path names a new file: the old one is read to its end first), the
//! start again after a truncation.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use toolgate_core::audit::TrailError;

/// The sentence for a last line with no `\n`, as the library says it.
pub(crate) fn torn(path: &Path, line: u64) -> String {
    TrailError::TornLine {
        path: path.to_path_buf(),
        line,
    }
    .to_string()
}

/// Which file a path names: device and inode on Unix; elsewhere no identity (a rotation is then
/// seen only as a shorter file).
#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// One followed path.
pub(crate) struct Follower {
    path: PathBuf,
    file: Option<File>,
    identity: Option<(u64, u64)>,
    /// Bytes of the open file read so far.
    offset: u64,
    /// The start of a line whose `\n` has not been written yet.
    partial: Vec<u8>,
    /// Lines of the open file seen so far.
    line: u64,
}

impl Follower {
    /// Follows `path` from its start (it need not exist yet).
    pub(crate) fn new(path: &Path) -> Follower {
        Follower {
            path: path.to_path_buf(),
            file: None,
            identity: None,
            offset: 0,
            partial: Vec::new(),
            line: 0,
        }
    }

    /// Calls `each` with every whole line appended since the last call (its `\n` removed, blank
    /// lines skipped) and its number from 1 in its file.
    ///
    /// # Errors
    /// `each`'s error; a file that cannot be read; a rotated file whose last line has no `\n`.
    pub(crate) fn poll(
        &mut self,
        mut each: impl FnMut(&[u8], u64) -> Result<(), String>,
    ) -> Result<(), String> {
        if self.file.is_none() && !self.open()? {
            return Ok(());
        }
        self.drain(&mut each)?;
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            // Renamed away and not yet made again: the old file is still open.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(format!("cannot read `{}`: {e}", self.path.display())),
        };
        if identity(&meta) != self.identity {
            // Rotated: what was written to the old file before the rename, then the new file.
            self.drain(&mut each)?;
            if !self.partial.is_empty() {
                return Err(torn(&self.path, self.line + 1));
            }
            self.file = None;
            if self.open()? {
                self.drain(&mut each)?;
            }
        } else if meta.len() < self.offset {
            // Truncated in place: from the start again.
            if let Some(file) = &mut self.file {
                file.seek(SeekFrom::Start(0))
                    .map_err(|e| format!("cannot read `{}`: {e}", self.path.display()))?;
            }
            self.offset = 0;
            self.line = 0;
            self.partial.clear();
            self.drain(&mut each)?;
        }
        Ok(())
    }

    /// Opens the path anew; `false` when it does not exist (yet).
    fn open(&mut self) -> Result<bool, String> {
        let file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(format!("cannot read `{}`: {e}", self.path.display())),
        };
        let meta = file
            .metadata()
            .map_err(|e| format!("cannot read `{}`: {e}", self.path.display()))?;
        self.identity = identity(&meta);
        self.file = Some(file);
        self.offset = 0;
        self.line = 0;
        self.partial.clear();
        Ok(true)
    }

    /// Reads the open file to its current end, handing each whole line to `each`.
    fn drain(
        &mut self,
        each: &mut impl FnMut(&[u8], u64) -> Result<(), String>,
    ) -> Result<(), String> {
        let Some(file) = &mut self.file else {
            return Ok(());
        };
        let mut fresh = Vec::new();
        let read = file
            .read_to_end(&mut fresh)
            .map_err(|e| format!("cannot read `{}`: {e}", self.path.display()))?;
        self.offset += read as u64;
        self.partial.extend_from_slice(&fresh);
        let mut start = 0;
        while let Some(end) = self.partial[start..].iter().position(|b| *b == b'\n') {
            let line = &self.partial[start..start + end];
            self.line += 1;
            if !line.iter().all(u8::is_ascii_whitespace) {
                each(line, self.line)?;
            }
            start += end + 1;
        }
        self.partial.drain(..start);
        Ok(())
    }
}
