//! `ptc-files`: the one way `ptc` and its crates read a file they were pointed at.
//!
//! A flag (`--tools`, `--context`, `--prompt-file`...) or a configuration field (a
//! credential `path`, an OpenAPI `schema_file`) names a file the operator chose, but the
//! name can still be `/dev/zero`, a FIFO nobody writes to, a directory or a 40 GB log.
//! Reading such a file whole would take the machine's memory or block forever. Every such
//! read goes through [`Limit`], which:
//!
//! - accepts **regular files only**: character and block devices, FIFOs, sockets and
//!   directories are refused by their type, checked on the path and again on the opened
//!   file (so a path swapped between the two checks is still caught); on Unix the file is
//!   opened non-blocking, so a FIFO never blocks the open;
//! - reads **at most `max_bytes + 1` bytes**, so an oversize file is refused without ever
//!   being held whole, also when it grows while being read or reports a size of 0 (`/proc`);
//! - explains itself: every error names the flag or field, the file, the limit and what to do.
//!
//! This crate must never do anything else: no parsing, no network, no async runtime, no
//! writes, no environment lookups. It sits below every other crate so that each of them
//! (the aggregator, the providers, the `ptc` binary) reads files the same bounded way;
//! `ptc-lisp-eval` does no I/O at all and never depends on it.
//!
//! ```
//! use ptc_files::{Limit, MIB};
//! let dir = std::env::temp_dir().join(format!("ptc-files-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("tools.json");
//! std::fs::write(&path, r#"{"tools": {}}"#).unwrap();
//! let tools = Limit::new("--tools", 4 * MIB);
//! assert_eq!(tools.read_to_string(&path).unwrap(), r#"{"tools": {}}"#);
//!
//! let tiny = Limit::new("--tools", 4).raise_with("split the file");
//! let err = tiny.read_to_string(&path).unwrap_err().to_string();
//! assert!(err.contains("larger than the 4-byte limit of --tools"), "{err}");
//! # #[cfg(unix)]
//! # {
//! let err = tools.read(std::path::Path::new("/dev/zero")).unwrap_err().to_string();
//! assert!(err.contains("is a character device, not a regular file"), "{err}");
//! # }
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

#![deny(missing_docs)]
// A `pub` item no path from the root reaches is `pub(crate)`: what is public is the API.
#![warn(unreachable_pub)]

use std::fs::{File, FileType};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// One kibibyte, for writing limits.
pub const KIB: u64 = 1024;
/// One mebibyte, for writing limits.
pub const MIB: u64 = 1024 * 1024;

/// Limit of configuration files: tools files, agent files, LLM registries, upstream
/// configurations, prompt files.
pub const CONFIG_MAX_BYTES: u64 = 4 * MIB;
/// Limit of a file holding one credential (an upstream's `{"path": ...}` secret).
pub const SECRET_MAX_BYTES: u64 = 64 * KIB;
/// Limit of an OpenAPI schema file (`schema_file` of an upstream).
pub const SCHEMA_MAX_BYTES: u64 = 16 * MIB;
/// Limit of a model script (`--llm script:FILE`) or a recording played back
/// (`--llm replay:FILE`): many answers, each possibly long.
pub const SCRIPT_MAX_BYTES: u64 = 64 * MIB;

/// How a file is read: what it is called in messages, how large it may be, and what to
/// do when it is larger.
#[derive(Debug, Clone)]
pub struct Limit {
    what: String,
    max_bytes: u64,
    advice: Option<String>,
}

impl Limit {
    /// A limit of `max_bytes` for the file named by `what` — the flag or field as the
    /// operator wrote it (`--tools`, `credential path`, `schema_file of upstream "docs"`).
    pub fn new(what: impl Into<String>, max_bytes: u64) -> Limit {
        Limit { what: what.into(), max_bytes, advice: None }
    }

    /// What to tell the operator when the file is too large (`raise it with
    /// --max-context-bytes`); without it the message says to shorten the file.
    pub fn raise_with(mut self, advice: impl Into<String>) -> Limit {
        self.advice = Some(advice.into());
        self
    }

    /// The largest file accepted, in bytes.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// Checks, without reading it, that `path` is a regular file of at most
    /// [`Limit::max_bytes`] bytes now; answers its size. For files another library reads
    /// (the REPL's history); prefer [`Limit::read`], which also bounds the read itself.
    pub fn check(&self, path: &Path) -> Result<u64, FileError> {
        let meta = std::fs::metadata(path).map_err(|error| FileError::Io {
            what: self.what.clone(),
            path: path.to_path_buf(),
            error,
        })?;
        self.check_type(path, meta.file_type())?;
        if meta.len() > self.max_bytes {
            return Err(self.too_large(path, Some(meta.len())));
        }
        Ok(meta.len())
    }

    /// The file's bytes, if it is a regular file of at most [`Limit::max_bytes`] bytes.
    pub fn read(&self, path: &Path) -> Result<Vec<u8>, FileError> {
        let io = |error| FileError::Io { what: self.what.clone(), path: path.to_path_buf(), error };
        // refuse special files before opening: opening a FIFO or a tape device has effects
        let before = std::fs::metadata(path).map_err(io)?;
        self.check_type(path, before.file_type())?;
        let file = open(path).map_err(io)?;
        let opened = file.metadata().map_err(io)?;
        self.check_type(path, opened.file_type())?;
        if opened.len() > self.max_bytes {
            return Err(self.too_large(path, Some(opened.len())));
        }
        let capacity = usize::try_from(opened.len()).unwrap_or(0);
        let (bytes, over) = read_capped(file, self.max_bytes, capacity).map_err(io)?;
        if over {
            return Err(self.too_large(path, None));
        }
        Ok(bytes)
    }

    /// The file as UTF-8 text, under the same rules as [`Limit::read`].
    pub fn read_to_string(&self, path: &Path) -> Result<String, FileError> {
        let bytes = self.read(path)?;
        String::from_utf8(bytes).map_err(|e| FileError::NotUtf8 {
            what: self.what.clone(),
            path: path.to_path_buf(),
            offset: e.utf8_error().valid_up_to(),
        })
    }

    fn check_type(&self, path: &Path, ty: FileType) -> Result<(), FileError> {
        match special_kind(ty) {
            None => Ok(()),
            Some(kind) => Err(FileError::NotRegular { what: self.what.clone(), path: path.to_path_buf(), kind }),
        }
    }

    fn too_large(&self, path: &Path, size: Option<u64>) -> FileError {
        FileError::TooLarge {
            what: self.what.clone(),
            path: path.to_path_buf(),
            max_bytes: self.max_bytes,
            size,
            advice: self.advice.clone().unwrap_or_else(|| "use a smaller file".to_string()),
        }
    }
}

/// Reads at most `max + 1` bytes of `reader`; the flag is true when there was more than
/// `max` (the bytes then hold `max + 1` bytes and the rest is left unread).
///
/// For streams that are not files (a pipe from a child process): memory stays bounded
/// whatever the other end sends.
pub fn read_capped(reader: impl Read, max: u64, capacity: usize) -> io::Result<(Vec<u8>, bool)> {
    let mut bytes = Vec::with_capacity(capacity.min(usize::try_from(max).unwrap_or(usize::MAX)));
    reader.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    let over = bytes.len() as u64 > max;
    Ok((bytes, over))
}

#[cfg(unix)]
fn open(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: a FIFO swapped in after the type check does not block the open (its
    // type is refused right after); O_NOCTTY: a terminal never becomes ours.
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path)
}

#[cfg(not(unix))]
fn open(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// What a file that is not a regular file is, in words; `None` for a regular file.
fn special_kind(ty: FileType) -> Option<&'static str> {
    if ty.is_file() {
        return None;
    }
    if ty.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ty.is_char_device() {
            return Some("a character device");
        }
        if ty.is_block_device() {
            return Some("a block device");
        }
        if ty.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if ty.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

/// `4 MiB`, `64 KiB`, `1000 bytes`: a limit as people read it.
pub fn human_bytes(n: u64) -> String {
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{} KiB", n / KIB)
    } else if n == 1 {
        "1-byte".to_string()
    } else {
        format!("{n}-byte")
    }
}

/// Why a file was not read. Every message names the flag or field, the file and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// The file could not be opened or read.
    #[error("{what} {}: cannot read it: {error}", path.display())]
    Io {
        /// The flag or field that named the file.
        what: String,
        /// The file.
        path: PathBuf,
        /// What the system said. It is part of the message, not a separate cause, so a
        /// caller printing the whole chain of causes shows it once.
        error: io::Error,
    },
    /// The path is a device, a FIFO, a socket or a directory.
    #[error(
        "{what} {}: is {kind}, not a regular file; only regular files are read here (a device, pipe or socket can send data without end, or block) — save the content to a file and give its path",
        path.display()
    )]
    NotRegular {
        /// The flag or field that named the file.
        what: String,
        /// The file.
        path: PathBuf,
        /// What it is instead (`a character device`).
        kind: &'static str,
    },
    /// The file holds more than the limit allows.
    #[error(
        "{what} {}: larger than the {} limit of {what} ({}); {advice}",
        path.display(),
        human_bytes(*max_bytes),
        match size { Some(n) => format!("{n} bytes"), None => "reading stopped one byte past it".to_string() }
    )]
    TooLarge {
        /// The flag or field that named the file.
        what: String,
        /// The file.
        path: PathBuf,
        /// The limit, in bytes.
        max_bytes: u64,
        /// The file's size when the system reported it; `None` when only reading found it
        /// too large (reading stops one byte past the limit).
        size: Option<u64>,
        /// What to do about it.
        advice: String,
    },
    /// The file is not UTF-8 text.
    #[error("{what} {}: not valid UTF-8 text (first bad byte at offset {offset}); save it as UTF-8", path.display())]
    NotUtf8 {
        /// The flag or field that named the file.
        what: String,
        /// The file.
        path: PathBuf,
        /// Bytes of valid UTF-8 before the first bad byte.
        offset: usize,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ptc-files-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_file_at_the_limit_is_read_and_one_byte_more_is_refused() {
        let d = dir("limit");
        let at = d.join("at");
        let over = d.join("over");
        std::fs::write(&at, "12345").unwrap();
        std::fs::write(&over, "123456").unwrap();
        let limit = Limit::new("--tools", 5);
        assert_eq!(limit.read(&at).unwrap(), b"12345");
        let err = limit.read(&over).unwrap_err();
        assert!(matches!(err, FileError::TooLarge { size: Some(6), max_bytes: 5, .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!(
                "--tools {}: larger than the 5-byte limit of --tools (6 bytes); use a smaller file",
                over.display()
            )
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn advice_and_sizes_read_as_people_write_them() {
        let d = dir("advice");
        let f = d.join("ctx.json");
        std::fs::write(&f, vec![b' '; 3000]).unwrap();
        let err = Limit::new("--context", 2 * KIB).raise_with("raise --max-context-bytes").read(&f).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "--context {}: larger than the 2 KiB limit of --context (3000 bytes); raise --max-context-bytes",
                f.display()
            )
        );
        assert_eq!(human_bytes(4 * MIB), "4 MiB");
        assert_eq!(human_bytes(1000), "1000-byte");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn check_looks_at_the_type_and_the_size_only() {
        let d = dir("check");
        let f = d.join("history");
        std::fs::write(&f, "(+ 1 2)\n").unwrap();
        assert_eq!(Limit::new("--history", 8).check(&f).unwrap(), 8);
        assert!(matches!(Limit::new("--history", 7).check(&f), Err(FileError::TooLarge { size: Some(8), .. })));
        assert!(matches!(Limit::new("--history", 7).check(&d), Err(FileError::NotRegular { .. })));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_directory_is_refused_by_its_type() {
        let d = dir("dir");
        let err = Limit::new("--agent", MIB).read(&d).unwrap_err();
        assert!(matches!(err, FileError::NotRegular { kind: "a directory", .. }), "{err:?}");
        assert!(err.to_string().contains("save the content to a file and give its path"), "{err}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_missing_file_names_the_flag_and_the_path() {
        let err = Limit::new("--prompt-file", MIB).read(Path::new("/nonexistent/ptc-files/x")).unwrap_err();
        assert!(err.to_string().starts_with("--prompt-file /nonexistent/ptc-files/x: cannot read it: "), "{err}");
    }

    #[test]
    fn invalid_utf8_says_where() {
        let d = dir("utf8");
        let f = d.join("bad");
        std::fs::write(&f, b"ok\xffno").unwrap();
        let err = Limit::new("--tools", MIB).read_to_string(&f).unwrap_err();
        assert!(matches!(err, FileError::NotUtf8 { offset: 2, .. }), "{err:?}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn devices_are_refused_without_reading() {
        for (path, kind) in [("/dev/zero", "a character device"), ("/dev/urandom", "a character device")] {
            let err = Limit::new("--context", u64::MAX).read(Path::new(path)).unwrap_err();
            match err {
                FileError::NotRegular { kind: k, .. } => assert_eq!(k, kind),
                other => panic!("{path}: {other:?}"),
            }
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let d = dir("fifo");
        let fifo = d.join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        // nobody writes to it: a plain open would block forever
        let err = Limit::new("--tools", MIB).read(&fifo).unwrap_err();
        assert!(matches!(err, FileError::NotRegular { kind: "a FIFO (named pipe)", .. }), "{err:?}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_reporting_size_zero_is_still_bounded() {
        // /proc files report 0 bytes but have content: the read itself must stop at the cap
        let err = Limit::new("--tools", 8).read(Path::new("/proc/self/status")).unwrap_err();
        assert!(matches!(err, FileError::TooLarge { size: None, max_bytes: 8, .. }), "{err:?}");
    }

    #[test]
    fn read_capped_stops_one_byte_past_the_cap() {
        let endless = io::repeat(b'x');
        let (bytes, over) = read_capped(endless, 1000, 0).unwrap();
        assert!(over);
        assert_eq!(bytes.len(), 1001);
        let (bytes, over) = read_capped(&b"abc"[..], 3, 16).unwrap();
        assert!(!over);
        assert_eq!(bytes, b"abc");
    }
}
