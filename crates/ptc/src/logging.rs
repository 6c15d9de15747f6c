//! One set of logging flags for every subcommand: `--log-level`, `--log-format`, `-v`/`-q`
//! and `RUST_LOG`. Logs are `tracing` events written to stderr, so they never mix with a
//! result on stdout.
//!
//! Which level applies, first match wins: `--log-level` (or `PTC_LOG_LEVEL`), then `-q`
//! (errors only) or `-v`/`-vv`/`-vvv` (info, debug, trace), then `RUST_LOG`, then the
//! subcommand's default: `info` for `ptc mcp` (a server reports what it does), `error` for
//! `ptc run` (its live view already shows model errors and retries) and `warn` for the rest
//! (a result on stdout is the whole story unless something is wrong).

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

    /// Starts logging to stderr; a bad filter is a usage error naming the flag.
    pub fn init(&self, default_level: &str) -> Result<()> {
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
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .log_internal_errors(false);
        let result = match self.log_format {
            LogFormat::Json => builder.json().try_init(),
            LogFormat::Text => builder.try_init(),
        };
        result.map_err(|e| anyhow::anyhow!("cannot start logging: {e}"))
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
