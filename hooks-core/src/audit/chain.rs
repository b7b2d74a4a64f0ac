//! The hash chain of the audit files, and the writer that keeps it ([`ChainedFile`]).
//!
//! The rule is written once, in [`AuditLog`'s docs](crate::audit::AuditLog#the-hash-chain) (rules 1
//! to 6, cited by number below); [`verify`](super::verify) checks it. In short: each line ends
//! with `"prev"`, the SHA-256 of the line before it in the same file, `\n` included; a file's
//! first line carries the last hash of the newest rotated file, or 64 zeros; writers hold the
//! file's lock while they read its end and append.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

/// The `prev` of the first line of a chain: 64 zeros.
pub const CHAIN_START: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// A SHA-256 digest.
pub(crate) type Hash = [u8; 32];

/// The SHA-256 of `line` (its `\n` included).
#[cfg(any(test, feature = "audit-verify"))]
pub(crate) fn hash(line: &[u8]) -> Hash {
    Sha256::digest(line).into()
}

/// 64 lowercase hex digits.
pub(crate) fn hex(h: &Hash) -> [u8; 64] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 64];
    for (i, b) in h.iter().enumerate() {
        out[2 * i] = DIGITS[usize::from(b >> 4)];
        out[2 * i + 1] = DIGITS[usize::from(b & 0x0f)];
    }
    out
}

/// [`hex`] as a `String`.
#[cfg(any(test, feature = "audit-verify"))]
pub(crate) fn hex_string(h: &Hash) -> String {
    hex(h).iter().map(|&b| char::from(b)).collect()
}

/// 64 lowercase hex digits back to a digest.
#[cfg(any(test, feature = "audit-verify"))]
pub(crate) fn parse_hex(text: &str) -> Option<Hash> {
    let b = text.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (i, pair) in b.chunks(2).enumerate() {
        out[i] = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

/// The files of one chain in the audit folder `dir`, oldest first: the rotated files of `name`
/// by their number, then `name` itself when the folder holds it (`audit_log.1.jsonl`,
/// `audit_log.2.jsonl`, `audit_log.jsonl` for [`AUDIT_LOG_FILE`](crate::audit::AUDIT_LOG_FILE)).
///
/// A rotated file is `STEM.N.EXT` where `N` is a number written in decimal digits only, with no
/// sign and no leading zero (`audit_log.1.jsonl`, `audit_log.12.jsonl`), at most
/// `u64::MAX`: the names [`AuditLog::rotate`](crate::audit::AuditLog::rotate) gives. Any other
/// name (`audit_log.01.jsonl`, `audit_log.+1.jsonl`, `audit_log.1.jsonl.gz`) is no part of the
/// chain. The writer (which number comes next, which file a new one follows), the verifier and
/// the trail's readers all take the chain from this rule, so they never disagree on it. The
/// live file is part of the chain when the folder holds an entry of its name, whatever it is:
/// one that cannot be opened (a dangling symlink) is then named by the reader that fails to
/// read it, never skipped.
///
/// # Errors
/// The folder's listing cannot be read (it does not exist, is not a folder, or the system
/// refuses it), or the live file's entry cannot be looked at: the [`io::Error`], never an empty
/// chain.
#[cfg(any(feature = "audit-verify", feature = "audit-report"))]
pub fn chain_files(dir: &Path, name: &str) -> io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = rotated_files(dir, name)?
        .into_iter()
        .map(|(_, path)| path)
        .collect();
    let live = dir.join(name);
    match std::fs::symlink_metadata(&live) {
        Ok(_) => files.push(live),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    Ok(files)
}

/// The rotated files of `name` in `dir`, sorted by their number (the rule of `chain_files`).
///
/// # Errors
/// The folder's listing cannot be read.
pub(crate) fn rotated_files(dir: &Path, name: &str) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let file_name = entry.file_name();
        let Some(n) = file_name.to_str().and_then(|f| rotation_number(f, name)) else {
            continue;
        };
        found.push((n, entry.path()));
    }
    crate::base::sort::sort_by(&mut found, |a, b| a.cmp(b));
    Ok(found)
}

/// `N` of a rotated file's name `STEM.N.EXT` for the chain `STEM.EXT`: decimal digits only, no
/// sign, no leading zero.
fn rotation_number(file_name: &str, name: &str) -> Option<u64> {
    let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
    file_name
        .strip_prefix(stem)?
        .strip_prefix('.')?
        .strip_suffix(ext)?
        .strip_suffix('.')
        .filter(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()) && !n.starts_with('0'))?
        .parse()
        .ok()
}

/// Where a file's last line starts and its hash (its `\n` included), given its `len`; and
/// whether the file ends with `\n`. An empty file has no last line.
pub(crate) fn last_line(file: &File, len: u64) -> io::Result<Option<(Hash, bool)>> {
    if len == 0 {
        return Ok(None);
    }
    let mut reader = file;
    // Back from the end, chunk by chunk, to the `\n` before the last line.
    const CHUNK: u64 = 8 * 1024;
    let mut buf = vec![0u8; CHUNK as usize];
    let mut last_byte = [0u8];
    reader.seek(SeekFrom::Start(len - 1))?;
    reader.read_exact(&mut last_byte)?;
    let ends_with_newline = last_byte[0] == b'\n';
    // The last line's own `\n` is not its start.
    let mut end = if ends_with_newline { len - 1 } else { len };
    let mut start = 0;
    while end > 0 {
        let from = end.saturating_sub(CHUNK);
        let chunk = &mut buf[..(end - from) as usize];
        reader.seek(SeekFrom::Start(from))?;
        reader.read_exact(chunk)?;
        if let Some(i) = chunk.iter().rposition(|&c| c == b'\n') {
            start = from + i as u64 + 1;
            break;
        }
        end = from;
    }
    // Hash from `start` to `len`.
    let mut hasher = Sha256::new();
    reader.seek(SeekFrom::Start(start))?;
    let mut left = len - start;
    while left > 0 {
        let n = left.min(CHUNK) as usize;
        reader.read_exact(&mut buf[..n])?;
        hasher.update(&buf[..n]);
        left -= n as u64;
    }
    if !ends_with_newline {
        hasher.update(b"\n");
    }
    Ok(Some((hasher.finalize().into(), ends_with_newline)))
}

/// The hash a new (empty) file named `name` in `dir` starts from: the last line of the newest
/// rotated file, or [`CHAIN_START`] (rule 3).
fn start_of_new_file(dir: &Path, name: &str) -> io::Result<Hash> {
    for (_, path) in rotated_files(dir, name)?.iter().rev() {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        if let Some((h, _)) = last_line(&file, len)? {
            return Ok(h);
        }
    }
    Ok([0; 32])
}

/// A file's identity (device, inode), to notice a rename; `None` where the platform has none.
#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

struct Open {
    file: File,
    id: Option<(u64, u64)>,
    /// The file's length after this writer's last line; `None` when unknown (then the end is
    /// read back before the next line).
    end: Option<u64>,
    /// The hash of the line at `end`.
    last: Hash,
}

/// One chained JSONL file (`dir/name`), appended to by any number of threads; other processes
/// writing to the same file are kept in line by the file lock.
pub(crate) struct ChainedFile {
    dir: PathBuf,
    name: &'static str,
    path: PathBuf,
    open: Mutex<Open>,
}

impl ChainedFile {
    /// Opens (creating) `dir/name` for reading and appending. The end of the file is read at
    /// the first line written.
    pub(crate) fn open(dir: &Path, name: &'static str) -> io::Result<ChainedFile> {
        let path = dir.join(name);
        let file = open_file(&path)?;
        let id = identity(&file.metadata()?);
        Ok(ChainedFile {
            dir: dir.to_path_buf(),
            name,
            path,
            open: Mutex::new(Open {
                file,
                id,
                end: None,
                last: [0; 32],
            }),
        })
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `object` (one serialized JSON object, without a newline) with `"prev"` added as
    /// its last member, and `\n`: one `write` on the file, under its lock. The line is made in
    /// `object` itself; `spare` holds it only after a torn last line (its `\n` first).
    ///
    /// The line's bytes before its `prev` value do not depend on the chain, so they are hashed
    /// here, before the locks are taken; under them, only the last 67 bytes are (the `prev`
    /// value, `"}` and `\n`), with the write.
    pub(crate) fn append(&self, object: &mut Vec<u8>, spare: &mut Vec<u8>) -> io::Result<()> {
        if object.pop() != Some(b'}') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "an audit line must be a JSON object",
            ));
        }
        if object.as_slice() != b"{" {
            object.push(b',');
        }
        object.extend_from_slice(b"\"prev\":\"");
        let mut head = Sha256::new();
        head.update(&object[..]);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let open = &mut *open;
        let len = self.lock_current(open)?;
        let result = self.append_locked(open, len, object, head, spare);
        let _ = open.file.unlock();
        result
    }

    /// Renames the live file to the next `NAME.N.jsonl` (nothing when it is empty) and opens a
    /// new one, under the lock; returns the rotated file's path.
    pub(crate) fn rotate(&self) -> io::Result<Option<PathBuf>> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let open = &mut *open;
        let len = self.lock_current(open)?;
        let result = (|| {
            if len == 0 {
                return Ok(None);
            }
            let next = rotated_files(&self.dir, self.name)?
                .last()
                .map_or(1, |(n, _)| n + 1);
            let (stem, ext) = self.name.rsplit_once('.').unwrap_or((self.name, ""));
            let to = self.dir.join(format!("{stem}.{next}.{ext}"));
            if to.exists() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("cannot rotate to `{}`: it exists", to.display()),
                ));
            }
            std::fs::rename(&self.path, &to)?;
            Ok(Some(to))
        })();
        let _ = open.file.unlock();
        if let Ok(Some(_)) = result {
            // The new live file is opened at the next line.
            open.end = None;
        }
        result
    }

    /// Locks the file the path names now (opening it again when it was renamed or removed) and
    /// returns its length.
    fn lock_current(&self, open: &mut Open) -> io::Result<u64> {
        for _ in 0..8 {
            lock(&open.file)?;
            match std::fs::metadata(&self.path) {
                Ok(meta) if open.id.is_none() || identity(&meta) == open.id => {
                    return Ok(meta.len());
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    let _ = open.file.unlock();
                    return Err(e);
                }
            }
            // Renamed (rotated) or removed: the chain goes on in a new file at the path.
            let _ = open.file.unlock();
            open.file = open_file(&self.path)?;
            open.id = identity(&open.file.metadata()?);
            open.end = None;
        }
        Err(io::Error::other(format!(
            "`{}` keeps being replaced while it is written",
            self.path.display()
        )))
    }

    /// Ends `line` (the object up to its `prev` value, hashed into `head`) with the chain's last
    /// hash and writes it, under the file's lock; `len` is the file's length.
    fn append_locked(
        &self,
        open: &mut Open,
        len: u64,
        line: &mut Vec<u8>,
        mut head: Sha256,
        spare: &mut Vec<u8>,
    ) -> io::Result<()> {
        let mut torn = false;
        if open.end != Some(len) {
            // Another writer, a reopened file, a new file: read the chain's end back.
            open.last = match last_line(&open.file, len)? {
                None => start_of_new_file(&self.dir, self.name)?,
                Some((h, ends_with_newline)) => {
                    torn = !ends_with_newline;
                    h
                }
            };
        }
        let tail = line.len();
        line.extend_from_slice(&hex(&open.last));
        line.extend_from_slice(b"\"}\n");
        head.update(&line[tail..]);
        let bytes: &[u8] = if torn {
            // A torn last line: end it, so this line starts on its own (still one write).
            spare.clear();
            spare.push(b'\n');
            spare.extend_from_slice(line);
            spare
        } else {
            line
        };
        match write_once(&open.file, bytes) {
            Ok(()) => {
                open.last = head.finalize().into();
                open.end = Some(len + bytes.len() as u64);
                Ok(())
            }
            Err(e) => {
                // Take back a part written before the error (the lock keeps others out).
                if open.file.metadata().is_ok_and(|m| m.len() > len) {
                    let _ = open.file.set_len(len);
                }
                open.end = None;
                Err(e)
            }
        }
    }
}

fn open_file(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
}

/// Takes the file's exclusive lock; a file system without locks is written without one.
fn lock(file: &File) -> io::Result<()> {
    match file.lock() {
        Err(e) if e.kind() == io::ErrorKind::Unsupported => Ok(()),
        other => other,
    }
}

/// One `write`: `O_APPEND` places it whole at the end; a regular file does not split it.
fn write_once(mut file: &File, line: &[u8]) -> io::Result<()> {
    let written = file.write(line)?;
    if written != line.len() {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("short write: {written} of {} bytes", line.len()),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rotated_file_is_numbered_in_plain_decimal() {
        let n = |file: &str| rotation_number(file, "audit_log.jsonl");
        assert_eq!(n("audit_log.1.jsonl"), Some(1));
        assert_eq!(n("audit_log.12.jsonl"), Some(12));
        assert_eq!(
            n("audit_log.18446744073709551615.jsonl"),
            Some(18_446_744_073_709_551_615)
        );
        for other in [
            "audit_log.jsonl",
            "audit_log.01.jsonl",
            "audit_log.+1.jsonl",
            "audit_log.-1.jsonl",
            "audit_log.0.jsonl",
            "audit_log..jsonl",
            "audit_log. 1.jsonl",
            "audit_log.1 .jsonl",
            "audit_log.1.jsonl.gz",
            "audit_log.1.json",
            "audit_log1.jsonl",
            "audit_log.x.jsonl",
            "audit_log.\u{661}.jsonl",
            "audit_log.18446744073709551616.jsonl",
            "session_summaries.1.jsonl",
        ] {
            assert_eq!(n(other), None, "{other}");
        }
        assert_eq!(
            rotation_number("session_summaries.3.jsonl", "session_summaries.jsonl"),
            Some(3)
        );
    }

    /// A fresh folder of its own for a test, removed at the end.
    struct Folder(PathBuf);

    impl Folder {
        fn new(tag: &str) -> Folder {
            let dir =
                std::env::temp_dir().join(format!("toolgate-chain-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Folder(dir)
        }
    }

    impl Drop for Folder {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_line_is_its_object_then_prev_and_a_torn_line_is_ended_first() {
        let folder = Folder::new("lines");
        let file = ChainedFile::open(&folder.0, "log.jsonl").unwrap();
        let (mut object, mut spare) = (Vec::new(), Vec::new());
        let mut append = |text: &str| {
            object.clear();
            object.extend_from_slice(text.as_bytes());
            file.append(&mut object, &mut spare)
        };
        append("{}").unwrap();
        append(r#"{"a":"}"}"#).unwrap();
        // Another writer's line, cut short by a crash.
        std::fs::OpenOptions::new()
            .append(true)
            .open(folder.0.join("log.jsonl"))
            .unwrap()
            .write_all(br#"{"torn":"#)
            .unwrap();
        append(r#"{"b":2}"#).unwrap();
        for refused in ["", "[1]", "{\"a\":1} "] {
            let e = append(refused).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{refused:?}");
        }
        append(r#"{"c":3}"#).unwrap();

        let first = format!("{{\"prev\":\"{CHAIN_START}\"}}\n");
        let prev = |line: &str| hex_string(&hash(line.as_bytes()));
        let second = format!(r#"{{"a":"}}","prev":"{}"}}"#, prev(&first)) + "\n";
        let torn = "{\"torn\":\n";
        let third = format!(r#"{{"b":2,"prev":"{}"}}"#, prev(torn)) + "\n";
        let fourth = format!(r#"{{"c":3,"prev":"{}"}}"#, prev(&third)) + "\n";
        let text = std::fs::read_to_string(folder.0.join("log.jsonl")).unwrap();
        assert_eq!(
            text.split_inclusive('\n').collect::<Vec<_>>(),
            [&*first, &*second, torn, &*third, &*fourth]
        );
    }

    #[test]
    fn hex_round_trips() {
        let h = hash(b"{\"a\":1}\n");
        let text = hex_string(&h);
        assert_eq!(
            text,
            "e346432021b04179518d9614f3560ccd71354a4ee101ddcb893d6959a9d6301c"
        );
        assert_eq!(parse_hex(&text), Some(h));
        assert_eq!(parse_hex(CHAIN_START), Some([0; 32]));
        assert_eq!(parse_hex(&text.to_uppercase()), None);
        assert_eq!(parse_hex(&text[1..]), None);
    }
}
