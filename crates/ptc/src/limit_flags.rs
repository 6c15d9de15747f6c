//! One set of sandbox-limit flags shared by `eval`, `repl`, `mcp` and `run`.
//!
//! The flags are made from the library's limit table ([`Limits::table`]): one flag per
//! limit, named after it (`max_heap_bytes` → `--max-heap-bytes`, environment variable
//! `PTC_MAX_HEAP_BYTES`; the flag wins), its help made from the limit's description,
//! default and range, and every value checked by the library ([`LimitSpec::set`]). So a
//! limit, its default or its range changes in `limits.rs` and nowhere else.
//!
//! Each flag overrides one field of a base [`Limits`]: the library default for
//! `eval`/`repl`, [`Limits::mcp`] for the MCP server, [`run_base`] for agent runs, and a
//! longer timeout with `--upstreams` ([`with_upstreams`]); the help names these bases.

use std::time::Duration;

use anyhow::{Result, anyhow};
use clap::{Arg, ArgMatches, Args, Command, FromArgMatches};
use ptc_lisp_eval::{LimitSpec, Limits};

/// Programs of an agent run wait on tools: 5 s unless `--timeout-ms` says otherwise.
const RUN_TIMEOUT: Duration = Duration::from_millis(5_000);
/// Programs that call upstreams wait on them: 10 s unless `--timeout-ms` says otherwise.
const UPSTREAM_TIMEOUT: Duration = Duration::from_millis(10_000);

/// Other names kept for flags that had them first.
const ALIASES: &[(&str, &str)] =
    &[("timeout_ms", "program-timeout-ms"), ("max_heap_bytes", "program-memory-limit-bytes")];

/// The base limits of `ptc run` (and agent files).
pub fn run_base() -> Limits {
    Limits { timeout: RUN_TIMEOUT, ..Limits::default() }
}

/// `base` for a surface started with `--upstreams`.
pub fn with_upstreams(base: Limits) -> Limits {
    Limits { timeout: UPSTREAM_TIMEOUT, ..base }
}

/// Every sandbox limit given as a flag (or its environment variable).
#[derive(Debug, Default, Clone)]
pub struct LimitArgs {
    given: Vec<(&'static LimitSpec, u64)>,
}

impl LimitArgs {
    /// `base` with every given flag applied; out-of-range values are usage errors that
    /// name the flag and its range.
    pub fn to_limits(&self, base: Limits) -> Result<Limits> {
        let mut l = base;
        for (spec, v) in &self.given {
            spec.set(&mut l, Some(*v)).map_err(|e| anyhow!("--{}: {e}", flag(spec)))?;
        }
        Ok(l)
    }
}

fn flag(spec: &LimitSpec) -> String {
    spec.name.replace('_', "-")
}

fn env_var(spec: &LimitSpec) -> String {
    format!("PTC_{}", spec.name.to_uppercase())
}

/// `[default: 1000; mcp: ...; ptc run: 5000]`, from the library and the surface bases.
fn default_text(spec: &LimitSpec) -> String {
    let default = spec.default_value();
    let show = |v: Option<u64>| v.map_or_else(|| "off".to_string(), |v| v.to_string());
    let mut text = format!("[default: {}", show(default));
    for (surface, base) in
        [("mcp", Limits::mcp()), ("ptc run", run_base()), ("with --upstreams", with_upstreams(Limits::default()))]
    {
        let v = spec.get(&base);
        if v != default {
            text.push_str(&format!("; {surface}: {}", show(v)));
        }
    }
    text.push(']');
    text
}

impl Args for LimitArgs {
    fn augment_args(cmd: Command) -> Command {
        Limits::table().iter().fold(cmd, |cmd, spec| {
            let mut arg = Arg::new(spec.name)
                .long(flag(spec))
                .env(env_var(spec))
                .value_name(spec.unit.placeholder())
                .value_parser(clap::value_parser!(u64))
                .help(format!("{} ({}). {}", spec.doc, spec.range_text(), default_text(spec)));
            for (name, alias) in ALIASES {
                if *name == spec.name {
                    arg = arg.visible_alias(*alias);
                }
            }
            cmd.arg(arg)
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for LimitArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut args = LimitArgs::default();
        args.update_from_arg_matches(matches)?;
        Ok(args)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        for spec in Limits::table() {
            if let Some(v) = matches.get_one::<u64>(spec.name) {
                self.given.retain(|(s, _)| s.name != spec.name);
                self.given.push((spec, *v));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        limits: LimitArgs,
    }

    fn parse(args: &[&str]) -> Result<Limits> {
        let cli = Cli::try_parse_from(std::iter::once("ptc").chain(args.iter().copied()))?;
        cli.limits.to_limits(Limits::default())
    }

    #[test]
    fn every_limit_is_a_flag_and_out_of_range_values_name_the_flag() {
        for spec in Limits::table() {
            let l = parse(&[&format!("--{}", flag(spec)), &spec.min.to_string()]).unwrap();
            assert_eq!(spec.get(&l), Some(spec.min), "{}", spec.name);
            if spec.min > 0 {
                let e = parse(&[&format!("--{}", flag(spec)), &(spec.min - 1).to_string()]).unwrap_err();
                assert!(e.to_string().starts_with(&format!("--{}: {} must be", flag(spec), spec.name)), "{e}");
            }
        }
        let l = parse(&["--program-timeout-ms", "70", "--max-fuel", "500"]).unwrap();
        assert_eq!(l.timeout, Duration::from_millis(70));
        assert_eq!(l.max_fuel, Some(500));
        assert_eq!(
            parse(&["--max-recursion-depth", "100001"]).unwrap_err().to_string(),
            "--max-recursion-depth: max_recursion_depth must be between 1 and 100000 (got 100001); the default is 2000"
        );
    }

    #[test]
    fn help_shows_defaults_and_surface_bases_from_the_library() {
        let spec = Limits::spec("max_program_bytes").unwrap();
        assert_eq!(default_text(spec), "[default: 1000000; mcp: 65536]");
        let spec = Limits::spec("timeout_ms").unwrap();
        assert_eq!(default_text(spec), "[default: 1000; ptc run: 5000; with --upstreams: 10000]");
        assert_eq!(default_text(Limits::spec("max_fuel").unwrap()), "[default: off]");
    }
}
