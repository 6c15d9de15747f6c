//! One set of logging flags for every subcommand: `--log-level`, `--log-format`, `-v`/`-q`
//! and `RUST_LOG`. Logs are `tracing` events written to stderr, so they never mix with a
//! result on stdout.
//!
//! Which level applies, first match wins: `--log-level` (or `PTC_LOG_LEVEL`), then `-q`
//! (errors only) or `-v`/`-vv`/`-vvv` (info, debug, trace), then `RUST_LOG`, then the
//! subcommand's default: `info` for `ptc mcp` (a server reports what it does), `error` for
//! `ptc run` (its live view already shows model errors and retries) and `warn` for the rest
//! (a result on stdout is the whole story unless something is wrong).

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};

/// The logging flags, global: they may follow any subcommand.
#[derive(Args, Debug)]
pub struct LogArgs {
    /// error, warn, info, debug or trace, or a filter such as `info,ptc_subagent=debug`
    /// [default: info for `mcp`, error for `run`, warn otherwise; RUST_LOG when set].
    #[arg(long, global = true, env = "PTC_LOG_LEVEL", value_name = "LEVEL")]
    log_level: Option<String>,
    /// Log lines as text or as JSON objects (one per line).
    #[arg(long, global = true, env = "PTC_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// More log output: -v info, -vv debug, -vvv trace.
    #[arg(short = 'v', long = "verbose", global = true, action = clap::ArgAction::Count, conflicts_with = "quiet")]
    verbose: u8,
    /// Only errors in the log.
    #[arg(short = 'q', long = "quiet", global = true)]
    quiet: bool,
}

/// How log lines are written.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    /// human-readable lines
    Text,
    /// JSON lines
    Json,
}

impl LogArgs {
    /// The filter these flags ask for, given the subcommand's default level and `RUST_LOG`.
    fn filter(&self, default_level: &str, rust_log: Option<&str>) -> String {
        let chosen = if let Some(level) = &self.log_level {
            level.clone()
        } else if self.quiet {
            "error".to_string()
        } else if self.verbose > 0 {
            match self.verbose {
                1 => "info",
                2 => "debug",
                _ => "trace",
            }
            .to_string()
        } else if let Some(env) = rust_log.filter(|s| !s.trim().is_empty()) {
            // RUST_LOG is a whole filter already: take it as it is
            return env.to_string();
        } else {
            default_level.to_string()
        };
        // the MCP SDK and the HTTP stack are chatty at info; they speak up from warn, unless
        // the filter names them itself
        let mut filter = chosen;
        for quiet_crate in ["rmcp", "hyper"] {
            if !filter.contains(quiet_crate) && !matches!(filter.as_str(), "debug" | "trace") {
                filter.push_str(&format!(",{quiet_crate}=warn"));
            }
        }
        filter
    }

    /// Starts logging to stderr; a bad filter is a usage error naming the flag. Keep the
    /// guard until the process ends: dropping it writes the lines still waiting.
    pub fn init(&self, default_level: &str) -> Result<LogGuard> {
        if let Some(level) = &self.log_level {
            check_level(level)?;
        }
        let rust_log = std::env::var("RUST_LOG").ok();
        let text = self.filter(default_level, rust_log.as_deref());
        let filter = tracing_subscriber::EnvFilter::try_new(&text).with_context(|| {
            format!(
                "invalid log level or filter {text:?}: use error, warn, info, debug or trace (or a RUST_LOG filter)"
            )
        })?;
        // A log line that cannot be written (stderr closed, its reader gone) is dropped: by
        // default the formatter reports the failed write with `eprintln!`, which panics on
        // the same broken stderr, in whatever task logged, so a server stopped answering
        // and ignored SIGTERM once whoever started it went away.
        let writer = Stderr::start();
        let guard = LogGuard(writer.clone());
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(writer)
            .with_ansi(false)
            .log_internal_errors(false);
        let result = match self.log_format {
            LogFormat::Json => builder.json().try_init(),
            LogFormat::Text => builder.try_init(),
        };
        result.map_err(|e| anyhow::anyhow!("cannot start logging: {e}"))?;
        Ok(guard)
    }
}

/// Lines waiting for the writer thread beyond this are written by the thread that logs
/// (a stderr nobody reads then blocks the logger, as a plain write would).
const MAX_PENDING: usize = 1 << 20;

/// stderr for log lines. A line at `info` or below (a server's line per call) is handed
/// to a writer thread, which writes every line waiting in one `write`: under load, one
/// system call (and one wake-up of whoever reads stderr) for many lines, and none on the
/// thread answering the call. A `warn` or `error` line is written at once, after the
/// lines waiting before it, so lines keep their order and nothing that explains a failure
/// waits. Without a writer thread (the OS refused one) every line is written at once.
#[derive(Clone)]
struct Stderr(Arc<Shared>);

struct Shared {
    pending: Mutex<Pending>,
    ready: Condvar,
    /// Where lines go (stderr); its lock orders the writes.
    out: Mutex<Box<dyn std::io::Write + Send>>,
}

#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    /// No writer thread (never started, or stopped by [`LogGuard`]): write at once.
    direct: bool,
}

impl Stderr {
    fn start() -> Stderr {
        let stderr = Stderr::to(Box::new(std::io::stderr()));
        let _ = WRITER.set(stderr.0.clone());
        stderr
    }

    /// A writer of lines to `out`, with its writer thread.
    fn to(out: Box<dyn std::io::Write + Send>) -> Stderr {
        let shared =
            Arc::new(Shared { pending: Mutex::new(Pending::default()), ready: Condvar::new(), out: Mutex::new(out) });
        let writer = shared.clone();
        let started = std::thread::Builder::new().name("ptc-log".into()).spawn(move || {
            // signals are for the threads that handle them (`ptc run` waits for SIGTERM on
            // one of its own): this one must never be picked to take one
            #[cfg(unix)]
            let _ = nix::sys::signal::SigSet::all().thread_block();
            writer.write_loop()
        });
        if started.is_err() {
            shared.lock().direct = true;
        }
        Stderr(shared)
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The writer thread: waits for lines, then writes all that are waiting at once.
    fn write_loop(&self) {
        loop {
            let mut pending = self.lock();
            while pending.bytes.is_empty() && !pending.direct {
                pending = self.ready.wait(pending).unwrap_or_else(PoisonError::into_inner);
            }
            if pending.direct {
                return;
            }
            drop(pending);
            // let a busy server's next lines join these: one write for many
            std::thread::sleep(std::time::Duration::from_millis(1));
            // the output's lock first, then the lines: a line written at once by another
            // thread meanwhile takes the same lock, so it cannot overtake these
            let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
            let bytes = std::mem::take(&mut self.lock().bytes);
            let _ = out.write_all(&bytes);
            let _ = out.flush();
        }
    }

    /// Writes the waiting lines, then `line`, now.
    fn write_now(&self, line: &[u8]) -> std::io::Result<()> {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        let waiting = std::mem::take(&mut self.lock().bytes);
        let _ = out.write_all(&waiting);
        let written = out.write_all(line);
        let _ = out.flush();
        written
    }
}

/// The process's log writer, for [`flush`].
static WRITER: std::sync::OnceLock<Arc<Shared>> = std::sync::OnceLock::new();

/// Writes the log lines still waiting (before `std::process::exit`, which skips
/// [`LogGuard`]).
pub fn flush() {
    if let Some(shared) = WRITER.get() {
        let _ = shared.write_now(b"");
    }
}

/// Writes the log lines still waiting, and every later line at once, when dropped.
pub struct LogGuard(Stderr);

impl Drop for LogGuard {
    fn drop(&mut self) {
        let shared = &self.0.0;
        shared.lock().direct = true;
        shared.ready.notify_all();
        let _ = shared.write_now(b"");
    }
}

/// One log line's writer (`tracing_subscriber` writes each line with one `write_all`).
struct Line<'a> {
    shared: &'a Shared,
    later: bool,
}

impl std::io::Write for Line<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.later {
            let mut pending = self.shared.lock();
            if !pending.direct && pending.bytes.len() < MAX_PENDING {
                let was_empty = pending.bytes.is_empty();
                pending.bytes.extend_from_slice(buf);
                drop(pending);
                if was_empty {
                    self.shared.ready.notify_one();
                }
                return Ok(buf.len());
            }
        }
        self.shared.write_now(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Stderr {
    type Writer = Line<'a>;

    fn make_writer(&'a self) -> Line<'a> {
        Line { shared: &self.0, later: false }
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> Line<'a> {
        // tracing orders levels by verbosity: INFO and DEBUG and TRACE are >= INFO
        Line { shared: &self.0, later: *meta.level() >= tracing::Level::INFO }
    }
}

/// A bare word must be a level: the filter syntax would take `--log-level verbose` for a
/// crate named `verbose` and log nothing, silently.
fn check_level(level: &str) -> Result<()> {
    const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];
    let bare = !level.contains(['=', ',', '[']);
    if bare && !LEVELS.contains(&level.trim().to_ascii_lowercase().as_str()) {
        anyhow::bail!(
            "unknown log level {level:?}: use error, warn, info, debug or trace (or a filter such as info,ptc_subagent=debug)"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output the test can read.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Captured {
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
        }
    }

    /// Writes `line` as the subscriber does for an event at `level`.
    fn log(w: &Stderr, level: tracing::Level, line: &str) {
        use std::io::Write;
        let mut writer = Line { shared: &w.0, later: level >= tracing::Level::INFO };
        writer.write_all(line.as_bytes()).expect("a line is taken");
    }

    #[test]
    fn log_lines_keep_their_order_and_none_is_lost() {
        let out = Captured::default();
        let w = Stderr::to(Box::new(out.clone()));
        let mut want = String::new();
        for i in 0..2_000 {
            let level = if i % 97 == 0 { tracing::Level::WARN } else { tracing::Level::INFO };
            let line = format!("line {i} {level}\n");
            log(&w, level, &line);
            want.push_str(&line);
        }
        // a warning is written at once, after every line logged before it
        let written = out.text();
        let last_warning = "line 1940 WARN\n";
        let through_it = want.find(last_warning).map_or(usize::MAX, |i| i + last_warning.len());
        assert!(written.len() >= through_it, "the last warning is out: {written}");
        assert!(want.starts_with(&written), "written out of order");
        // the guard writes what is still waiting, and later lines go out at once
        drop(LogGuard(w.clone()));
        assert_eq!(out.text(), want);
        log(&w, tracing::Level::INFO, "after\n");
        assert_eq!(out.text(), format!("{want}after\n"));
    }

    #[test]
    fn only_info_and_more_verbose_lines_wait() {
        // make_writer_for relies on tracing ordering levels by verbosity
        use tracing::Level;
        assert!(Level::INFO >= Level::INFO && Level::DEBUG >= Level::INFO && Level::TRACE >= Level::INFO);
        assert!(Level::WARN < Level::INFO && Level::ERROR < Level::INFO);
    }

    #[test]
    fn the_writer_thread_writes_waiting_lines_soon() {
        let out = Captured::default();
        let w = Stderr::to(Box::new(out.clone()));
        log(&w, tracing::Level::INFO, "one\n");
        let start = std::time::Instant::now();
        while out.text().is_empty() && start.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(out.text(), "one\n");
        drop(LogGuard(w));
    }

    #[test]
    fn lines_beyond_the_cap_are_written_by_the_logger() {
        let out = Captured::default();
        // no writer thread: the waiting lines stay until someone writes them
        let shared =
            Shared { pending: Mutex::default(), ready: Condvar::new(), out: Mutex::new(Box::new(out.clone())) };
        let w = Stderr(Arc::new(shared));
        w.0.lock().bytes = vec![b'x'; MAX_PENDING - 1];
        log(&w, tracing::Level::INFO, "under\n");
        assert_eq!(out.text(), "", "under the cap, the line waits");
        log(&w, tracing::Level::INFO, "over\n");
        assert!(out.text().ends_with("under\nover\n"), "the line went out after the waiting ones");
        assert_eq!(out.text().len(), MAX_PENDING - 1 + 11);
        drop(LogGuard(w));
    }

    fn args(level: Option<&str>, verbose: u8, quiet: bool) -> LogArgs {
        LogArgs { log_level: level.map(str::to_string), log_format: LogFormat::Text, verbose, quiet }
    }

    #[test]
    fn a_bare_word_must_be_a_level() {
        assert!(check_level("verbose").is_err());
        assert!(check_level("DEBUG").is_ok());
        assert!(check_level("info,ptc_subagent=debug").is_ok());
    }

    #[test]
    fn an_explicit_level_wins_over_everything() {
        assert_eq!(args(Some("debug"), 2, false).filter("warn", Some("trace")), "debug");
    }

    #[test]
    fn verbosity_counts_up_and_quiet_means_errors() {
        assert_eq!(args(None, 1, false).filter("warn", None), "info,rmcp=warn,hyper=warn");
        assert_eq!(args(None, 2, false).filter("warn", None), "debug");
        assert_eq!(args(None, 5, false).filter("warn", None), "trace");
        assert_eq!(args(None, 0, true).filter("info", Some("debug")), "error,rmcp=warn,hyper=warn");
    }

    #[test]
    fn rust_log_applies_when_no_flag_is_given() {
        assert_eq!(args(None, 0, false).filter("warn", Some("ptc_subagent=debug")), "ptc_subagent=debug");
        assert_eq!(args(None, 0, false).filter("warn", Some("  ")), "warn,rmcp=warn,hyper=warn");
        assert_eq!(args(None, 0, false).filter("info", None), "info,rmcp=warn,hyper=warn");
    }
}
