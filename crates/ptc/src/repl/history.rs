//! Where the REPL keeps its history, and reading and writing it without ever stopping the
//! session: a history that cannot be read or written is a one-line warning.
//!
//! The file is found, first match wins:
//! 1. `--history FILE`;
//! 2. `PTC_REPL_HISTORY`;
//! 3. `$XDG_DATA_HOME/ptc/repl_history` (when that variable is an absolute path, as the XDG
//!    Base Directory spec asks);
//! 4. `$HOME/.local/share/ptc/repl_history`.
//!
//! An empty `--history ''` or `PTC_REPL_HISTORY=` turns history off.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The environment variable that overrides the history file.
pub const HISTORY_ENV: &str = "PTC_REPL_HISTORY";

/// Entries kept in the file (older ones are dropped when it is rewritten).
pub const MAX_ENTRIES: usize = 1000;

/// A history file larger than this is not loaded (1000 entries of up to 16 KiB each).
pub const HISTORY_MAX_BYTES: u64 = 16 * ptc_files::MIB;

/// The history file to use: `Ok(None)` when history is turned off, `Err` (a sentence for
/// the warning) when no data directory can be found. `var` reads the environment, so tests
/// can pass their own.
pub fn history_path(flag: Option<&Path>, var: impl Fn(&str) -> Option<OsString>) -> Result<Option<PathBuf>, String> {
    if let Some(path) = flag {
        return Ok((!path.as_os_str().is_empty()).then(|| path.to_path_buf()));
    }
    if let Some(path) = var(HISTORY_ENV) {
        return Ok((!path.is_empty()).then(|| PathBuf::from(path)));
    }
    let absolute = |name: &str| var(name).map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(data) = absolute("XDG_DATA_HOME") {
        return Ok(Some(data.join("ptc").join("repl_history")));
    }
    if let Some(home) = absolute("HOME") {
        return Ok(Some(home.join(".local").join("share").join("ptc").join("repl_history")));
    }
    Err(format!("no data directory (set HOME or XDG_DATA_HOME, or {HISTORY_ENV}=FILE)"))
}

/// The history file of one session. After the first failure to write it, it stops trying,
/// so a read-only disk costs one warning, not one per entry.
#[derive(Debug)]
pub struct HistoryFile {
    path: Option<PathBuf>,
}

impl HistoryFile {
    /// A history at `path` (`None`: history off).
    pub fn new(path: Option<PathBuf>) -> Self {
        HistoryFile { path }
    }

    /// The file, while history is on.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Reads earlier sessions' entries into `history`. A missing file is a first session.
    pub fn load(&mut self, history: &mut impl rustyline::history::History) {
        let Some(path) = &self.path else { return };
        if !path.exists() {
            return;
        }
        // rustyline reads the file whole: a device, a FIFO or a huge file is refused first
        let limit = ptc_files::Limit::new("--history", HISTORY_MAX_BYTES)
            .raise_with("point --history at another file, or an empty value to turn history off");
        if let Err(e) = limit.check(path) {
            warn(&format!("{e}; this session's history is not saved"));
            self.path = None;
            return;
        }
        if let Err(e) = history.load(path) {
            warn(&format!("cannot read the history file {}: {e}; this session's history is not saved", path.display()));
            // do not overwrite a file we could not understand
            self.path = None;
        }
    }

    /// Appends the entries added since the last call to the file (creating its directory).
    pub fn save(&mut self, history: &mut impl rustyline::history::History) {
        let Some(path) = &self.path else { return };
        let result = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(dir) => std::fs::create_dir_all(dir).map_err(|e| e.to_string()),
            None => Ok(()),
        }
        .and_then(|()| history.append(path).map_err(|e| e.to_string()));
        if let Err(e) = result {
            warn(&format!("cannot write the history file {}: {e}; history is off for this session", path.display()));
            self.path = None;
        }
    }
}

fn warn(message: &str) {
    warn_line!("ptc repl: warning: {message}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustyline::history::{FileHistory, History};
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = vars.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn the_flag_wins_then_the_variable_then_xdg_then_home() {
        let all = env(&[("PTC_REPL_HISTORY", "/e/h"), ("XDG_DATA_HOME", "/xdg"), ("HOME", "/home/u")]);
        assert_eq!(history_path(Some(Path::new("/f/h")), &all), Ok(Some(PathBuf::from("/f/h"))));
        assert_eq!(history_path(None, &all), Ok(Some(PathBuf::from("/e/h"))));
        let no_var = env(&[("XDG_DATA_HOME", "/xdg"), ("HOME", "/home/u")]);
        assert_eq!(history_path(None, no_var), Ok(Some(PathBuf::from("/xdg/ptc/repl_history"))));
        let home_only = env(&[("HOME", "/home/u")]);
        assert_eq!(history_path(None, home_only), Ok(Some(PathBuf::from("/home/u/.local/share/ptc/repl_history"))));
    }

    #[test]
    fn a_relative_xdg_data_home_is_ignored_as_the_spec_says() {
        let vars = env(&[("XDG_DATA_HOME", "relative/dir"), ("HOME", "/home/u")]);
        assert_eq!(history_path(None, vars), Ok(Some(PathBuf::from("/home/u/.local/share/ptc/repl_history"))));
    }

    #[test]
    fn empty_values_turn_history_off() {
        let all = env(&[("PTC_REPL_HISTORY", ""), ("HOME", "/home/u")]);
        assert_eq!(history_path(None, &all), Ok(None));
        assert_eq!(history_path(Some(Path::new("")), &all), Ok(None));
    }

    #[test]
    fn no_home_at_all_is_an_explained_error() {
        let err = history_path(None, env(&[])).unwrap_err();
        assert!(err.contains("HOME") && err.contains(HISTORY_ENV), "{err}");
    }

    #[test]
    fn entries_survive_a_new_session_and_the_directory_is_created() {
        let dir = std::env::temp_dir().join(format!("ptc-history-test-{}", std::process::id()));
        let path = dir.join("nested").join("repl_history");
        let mut file = HistoryFile::new(Some(path.clone()));
        let mut first = FileHistory::new();
        file.load(&mut first);
        first.add("(def x 1)").unwrap();
        first.add("(defn f [a]\n  (* a 2))").unwrap();
        file.save(&mut first);
        assert_eq!(file.path(), Some(path.as_path()));

        let mut second = FileHistory::new();
        HistoryFile::new(Some(path.clone())).load(&mut second);
        let entries: Vec<&String> = second.iter().collect();
        assert_eq!(entries, ["(def x 1)", "(defn f [a]\n  (* a 2))"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_device_as_history_is_not_read_and_history_turns_off() {
        // rustyline would read /dev/zero as one endless line
        let mut file = HistoryFile::new(Some(PathBuf::from("/dev/zero")));
        let mut h = FileHistory::new();
        file.load(&mut h);
        assert_eq!(file.path(), None);
        assert_eq!(h.len(), 0);
    }

    #[test]
    fn an_unwritable_history_turns_itself_off() {
        // a regular file where the directory should be: create_dir_all fails
        let blocker = std::env::temp_dir().join(format!("ptc-history-blocker-{}", std::process::id()));
        std::fs::write(&blocker, "not a directory").unwrap();
        let mut file = HistoryFile::new(Some(blocker.join("repl_history")));
        let mut h = FileHistory::new();
        h.add("(+ 1 2)").unwrap();
        file.save(&mut h);
        assert_eq!(file.path(), None);
        std::fs::remove_file(&blocker).unwrap();
    }
}
