//! How `ptc` ends when it did not succeed: the command line's reason vocabulary and its
//! exit statuses (0 is success and has no reason).
//!
//! A failing program or mission keeps its own reason in the output (`ptc eval --output
//! json` prints the evaluator's, `ptc run --output json` the agent loop's); this enum says
//! which *kind* of failure ended the process, and so its exit status. Scripts branch on the
//! status: 1 means "it ran and did not succeed", 2 "it could not run as asked".
//!
//! This file depends on nothing outside the standard library: `cargo xtask docs` and the
//! reachability test (`tests/exit_reasons.rs`) include it as it is (`docs/reasons/cli.md`).

use std::fmt;

/// Why `ptc` exited with a failure status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Exit {
    /// A flag, argument, input file or configuration is wrong; nothing ran.
    UsageError,
    /// A program ended in an error or `(fail v)`.
    ProgramFailed,
    /// A `ptc run` mission failed.
    MissionFailed,
    /// `ptc mcp --check`: an upstream could not be started or listed.
    UpstreamUnusable,
    /// `ptc run --dry-run`: a check of the mission failed.
    DryRunFailed,
    /// A signal (SIGINT, SIGTERM, SIGHUP) ended `ptc run` and its tools.
    Interrupted,
}

impl Exit {
    /// Every reason, in the order of `docs/reasons/cli.md`.
    pub const ALL: [Exit; 6] = [
        Exit::UsageError,
        Exit::ProgramFailed,
        Exit::MissionFailed,
        Exit::UpstreamUnusable,
        Exit::DryRunFailed,
        Exit::Interrupted,
    ];

    /// Stable snake_case name (`reason` of `ptc eval --output json` for a usage error).
    pub fn as_str(self) -> &'static str {
        match self {
            Exit::UsageError => "usage_error",
            Exit::ProgramFailed => "program_failed",
            Exit::MissionFailed => "mission_failed",
            Exit::UpstreamUnusable => "upstream_unusable",
            Exit::DryRunFailed => "dry_run_failed",
            Exit::Interrupted => "interrupted",
        }
    }

    /// The exit status. A signal's is 128 + its number; [`Exit::code`] gives SIGINT's (130)
    /// and [`Exit::signalled`] the one a given signal asks for.
    pub fn code(self) -> u8 {
        match self {
            Exit::UsageError | Exit::DryRunFailed => 2,
            Exit::ProgramFailed | Exit::MissionFailed | Exit::UpstreamUnusable => 1,
            Exit::Interrupted => 128 + 2,
        }
    }

    /// The status as the help and the docs show it: the code, or how it is made.
    pub fn status(self) -> &'static str {
        match self {
            Exit::Interrupted => "128+n",
            Exit::UsageError | Exit::DryRunFailed => "2",
            Exit::ProgramFailed | Exit::MissionFailed | Exit::UpstreamUnusable => "1",
        }
    }

    /// Which commands end so.
    pub fn commands(self) -> &'static str {
        match self {
            Exit::UsageError => "every command",
            Exit::ProgramFailed => "`ptc eval`, scripts (`ptc FILE`), piped `ptc repl`",
            Exit::MissionFailed => "`ptc run`",
            Exit::UpstreamUnusable => "`ptc mcp --check`",
            Exit::DryRunFailed => "`ptc run --dry-run`",
            Exit::Interrupted => "`ptc run`",
        }
    }

    /// One line saying what happened and where the details are.
    pub fn description(self) -> &'static str {
        match self {
            Exit::UsageError => {
                "A flag, argument, input file or configuration is wrong; nothing ran. The message is on stderr (`ptc: ...`), or the `usage_error` envelope with `--output json`."
            }
            Exit::ProgramFailed => {
                "A program ended in an error or `(fail v)`. The evaluator's reason is printed: `Eval error: ...` (`Parse`, `Timeout`... by phase) on stderr, or the envelope's `reason`."
            }
            Exit::MissionFailed => {
                "The mission failed (turns, budget, a model error, `(fail ...)`). The agent loop's reason is printed: `Failed (reason): ...` on stderr, or `fail.reason` with `--output json`."
            }
            Exit::UpstreamUnusable => {
                "An upstream could not be started or listed: `FAILED  name (transport, ms): problem` on stdout."
            }
            Exit::DryRunFailed => {
                "A check of the mission (a template variable, a price, the tools) failed; the dry run lists it."
            }
            Exit::Interrupted => {
                "Signal n ended the run (130 SIGINT, 143 SIGTERM, 129 SIGHUP); its tools' processes were killed first."
            }
        }
    }

    /// The status for a process ended by the signal numbered `signal`: 128 + `signal` for
    /// [`Exit::Interrupted`], [`Exit::code`] for the others.
    pub fn with_signal(self, signal: i32) -> u8 {
        match self {
            Exit::Interrupted => u8::try_from(128 + signal).unwrap_or(u8::MAX),
            other => other.code(),
        }
    }
}

/// The exit statuses for `ptc --help`: `0 success` and a line per reason (with its
/// meaning when `long`).
pub fn summary(long: bool) -> String {
    let mut out = String::from("Exit status:\n  0      success");
    for e in Exit::ALL {
        out.push_str(&format!("\n  {:<6} {:<18} {}", e.status(), e.as_str(), e.commands()));
        if long {
            out.push_str(&format!("\n         {}", e.description()));
        }
    }
    out
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e.code())
    }
}
