//! Whole-process measurement: wall time from spawn to exit, and peak resident memory read
//! from `/proc/<pid>/status` (`VmHWM`, the kernel's own high-water mark) by a thread that
//! polls the child while it runs. No `getrusage`, hence no `unsafe`: the last poll happens
//! at most one interval before exit, and `VmHWM` never goes down, so what is missed is the
//! growth of the final millisecond at most.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// One finished run of a process.
pub struct Run {
    pub wall_ms: f64,
    pub peak_kib: u64,
    pub stdout: String,
}

/// The figures of N runs of one command.
#[derive(Clone, Copy)]
pub struct Figures {
    pub median_ms: f64,
    pub peak_mib: f64,
}

/// Runs `program args` to completion (stdin from /dev/null), timing it and tracking its
/// peak RSS. A non-zero exit is an error carrying the tail of stderr.
pub fn run(program: &Path, args: &[String]) -> Result<Run> {
    let start = Instant::now();
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", program.display()))?;
    let pid = child.id();
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let poller = {
        let (done, peak) = (Arc::clone(&done), Arc::clone(&peak));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Some(kib) = status_kib(pid, "VmHWM:") {
                    peak.fetch_max(kib, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let out = child.wait_with_output();
    let wall_ms = start.elapsed().as_secs_f64() * 1000.0;
    done.store(true, Ordering::Relaxed);
    let _ = poller.join();
    let out = out.with_context(|| format!("waiting for {}", program.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: String = err.chars().rev().take(2000).collect::<Vec<_>>().into_iter().rev().collect();
        bail!("{} {} exited with {}: {tail}", program.display(), args.join(" "), out.status);
    }
    Ok(Run {
        wall_ms,
        peak_kib: peak.load(Ordering::Relaxed),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
    })
}

/// A `kB` field of `/proc/<pid>/status` (`VmHWM:`, `VmRSS:`), if the process still has one.
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// The median of some figures (the upper one of an even count); NaN for none.
pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    if xs.is_empty() { f64::NAN } else { xs[xs.len() / 2] }
}

/// The value at quantile `p` of sorted figures; NaN for none.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Median wall time and the largest peak RSS of some runs.
pub fn figures(runs: &[Run]) -> Figures {
    Figures {
        median_ms: median(runs.iter().map(|r| r.wall_ms).collect()),
        peak_mib: runs.iter().map(|r| r.peak_kib).max().unwrap_or(0) as f64 / 1024.0,
    }
}
