//! Command tools: a tool call runs a program that reads its arguments as one JSON object
//! on stdin and prints its JSON result on stdout.
//!
//! **Environment.** A command does not inherit `ptc`'s environment, which holds every
//! vendor API key and upstream token `ptc` was given. It starts with [`SAFE_ENV`] (the
//! names that are set), then the names the tools file lists in `"inherit_env"`, then the
//! values of `"env"`. Nothing else reaches it.
//!
//! **Output.** stdout is read up to the tool's `max_output_bytes`
//! ([`DEFAULT_MAX_OUTPUT_BYTES`]); a command printing more is killed and the call is a tool
//! error. Only the last [`STDERR_KEPT`] bytes of stderr are kept, for error messages.
//!
//! **Processes.** The command runs in its own process group, and when the call ends — a
//! result, an error, its time limit, too much output — the whole group is killed, so a
//! shell script's children and anything it left in the background go with it. The result
//! is collected as soon as the command exits: a process left holding stdout delays it by
//! at most [`EXIT_GRACE`]. A process that left the group (`setsid`) is out of reach of a
//! group kill; on Linux [`Processes`] makes `ptc run` a child subreaper, so such a process
//! is re-parented to `ptc` when its parent dies, and every re-parented process is killed
//! when no tool call is running and when the run ends. Elsewhere, and for a process that
//! escapes while its parent still lives until `ptc` is killed with SIGKILL, that limit
//! remains (see docs/security.md).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value as Json;

/// Characters of stderr kept in an error message.
const STDERR_TAIL: usize = 600;

/// Bytes of stderr kept while a command runs (the last ones).
pub const STDERR_KEPT: usize = 64 * 1024;

/// Default of a tool's `max_output_bytes`: the most stdout a command may print.
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 4 * 1024 * 1024;

/// The largest `max_output_bytes` a tools file may ask for.
pub const MAX_OUTPUT_BYTES_CAP: u64 = 256 * 1024 * 1024;

/// After a command exits, how long its output may still take to reach end of file (a
/// process that escaped the group kill may hold stdout open).
pub const EXIT_GRACE: Duration = Duration::from_millis(500);

/// Environment variables a command gets from `ptc`'s environment without asking: where
/// programs are, who and where the user is, language and time zone, the temp directory.
#[cfg(not(windows))]
pub const SAFE_ENV: &[&str] =
    &["PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"];
/// Environment variables a command gets from `ptc`'s environment without asking (Windows
/// needs `SYSTEMROOT` and friends to start a process at all).
#[cfg(windows)]
pub const SAFE_ENV: &[&str] = &[
    "PATH",
    "PATHEXT",
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "USERNAME",
    "LANG",
    "TZ",
];

/// A command tool as the tools file declares it.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    argv: Vec<String>,
    env: BTreeMap<String, String>,
    inherit_env: Vec<String>,
    max_output_bytes: u64,
}

impl CommandSpec {
    /// Checks a tool's `command`, `env`, `inherit_env` and `max_output_bytes`; an error
    /// names the field and says what to write instead.
    pub fn new(
        argv: Vec<String>,
        env: Option<BTreeMap<String, String>>,
        inherit_env: Option<Vec<String>>,
        max_output_bytes: Option<u64>,
    ) -> Result<CommandSpec, (&'static str, String)> {
        if argv.first().is_none_or(|p| p.is_empty()) {
            return Err(("command", "needs a program: [\"prog\", \"arg\"]".into()));
        }
        let env = env.unwrap_or_default();
        for (name, value) in &env {
            check_name(name).map_err(|m| ("env", m))?;
            if value.contains('\0') {
                return Err((
                    "env",
                    format!("the value of {name} contains a NUL character, which no process can receive"),
                ));
            }
        }
        let inherit_env = inherit_env.unwrap_or_default();
        for name in &inherit_env {
            check_name(name).map_err(|m| ("inherit_env", m))?;
            if env.contains_key(name) {
                return Err((
                    "inherit_env",
                    format!(
                        "{name} is also set in \"env\"; keep it in one of them (\"env\" gives a value, \"inherit_env\" passes ptc's own)"
                    ),
                ));
            }
        }
        let max_output_bytes = max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT_BYTES);
        if max_output_bytes == 0 || max_output_bytes > MAX_OUTPUT_BYTES_CAP {
            return Err((
                "max_output_bytes",
                format!("{max_output_bytes} is out of range; give a number of bytes from 1 to {MAX_OUTPUT_BYTES_CAP}"),
            ));
        }
        Ok(CommandSpec { argv, env, inherit_env, max_output_bytes })
    }

    /// The environment the command starts with, from `lookup` (ptc's own environment).
    fn environment(&self, lookup: impl Fn(&str) -> Option<std::ffi::OsString>) -> Vec<(String, std::ffi::OsString)> {
        let mut out: BTreeMap<String, std::ffi::OsString> = BTreeMap::new();
        for name in SAFE_ENV.iter().copied().chain(self.inherit_env.iter().map(String::as_str)) {
            if let Some(value) = lookup(name) {
                out.insert(name.to_string(), value);
            }
        }
        for (name, value) in &self.env {
            out.insert(name.clone(), value.into());
        }
        out.into_iter().collect()
    }
}

fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.contains('=') || name.contains('\0') {
        return Err(format!("{name:?} is not an environment variable name (empty, or holding '=' or NUL)"));
    }
    Ok(())
}

/// What the threads of one call report.
enum Event {
    /// The command exited; `Some` when the status was collected (the child reaped).
    Exited(Option<std::io::Result<ExitStatus>>),
    /// stdout reached end of file.
    StdoutDone,
    /// stdout went past `max_output_bytes`.
    StdoutOver,
    /// stderr reached end of file.
    StderrDone,
    /// The mission (or the calling program) was cancelled.
    Cancelled,
}

/// Runs the command with `args` on stdin; answers its stdout as JSON. A cancel of `cancel`
/// kills the command's process group at once.
pub fn call(
    spec: &CommandSpec,
    args: &Json,
    program_deadline: Instant,
    tool_timeout: Duration,
    cancel: &ptc_lisp_eval::Cancel,
) -> Result<Json, String> {
    let started = Instant::now();
    let deadline = program_deadline.min(started + tool_timeout);
    let (program, rest) = spec.argv.split_first().ok_or("the command is empty")?;
    let mut cmd = Command::new(program);
    cmd.args(rest).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.env_clear().envs(spec.environment(|name| std::env::var_os(name)));
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let (mut child, running) = Running::spawn(&mut cmd).map_err(|e| format!("cannot start {program}: {e}"))?;
    let input = args.to_string();
    let stdin = child.stdin.take();
    std::thread::spawn(move || {
        if let Some(mut s) = stdin {
            // a command that does not read its input closes the pipe: not an error
            let _ = s.write_all(input.as_bytes());
        }
    });
    let (tx, rx) = mpsc::channel();
    let stdout = Arc::new(Mutex::new(Vec::new()));
    let stderr = Arc::new(Mutex::new(Vec::new()));
    read_stdout(child.stdout.take(), Arc::clone(&stdout), spec.max_output_bytes, tx.clone());
    read_stderr(child.stderr.take(), Arc::clone(&stderr), tx.clone());
    let on_cancel = Mutex::new(tx.clone());
    let _watch = cancel.on_cancel(move || {
        if let Ok(tx) = on_cancel.lock() {
            let _ = tx.send(Event::Cancelled);
        }
    });
    let mut child = wait_for_exit(child, tx);

    let (mut out_done, mut err_done) = (false, false);
    let exited = loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Event::Exited(status)) => break status,
            Ok(Event::StdoutDone) => out_done = true,
            Ok(Event::StderrDone) => err_done = true,
            Ok(Event::StdoutOver) => {
                running.kill();
                reap_later(child.take());
                return Err(format!(
                    "{program} printed more than {} bytes on stdout (max_output_bytes of the tool) and was killed; print less, or raise max_output_bytes in the tools file",
                    spec.max_output_bytes
                ));
            }
            Ok(Event::Cancelled) => {
                running.kill();
                reap_later(child.take());
                return Err(format!("{program} was killed: the mission was cancelled"));
            }
            Err(_) => {
                running.kill();
                reap_later(child.take());
                let why = if deadline == program_deadline { "the program's time limit" } else { "--tool-timeout-ms" };
                return Err(format!(
                    "{program} did not finish within {} ms ({why}) and was killed",
                    deadline.saturating_duration_since(started).as_millis()
                ));
            }
        }
    };
    // The command exited (and, where possible, is not reaped yet, so its group id cannot be
    // reused): kill whatever it left in its group, then collect its output briefly.
    running.kill();
    let status = match (exited, child.take()) {
        (Some(status), _) => status,
        (None, Some(mut child)) => child.wait(),
        (None, None) => Err(std::io::Error::other("the command's status was lost")),
    }
    .map_err(|e| format!("{program} could not be waited for: {e}"))?;
    let grace_end = Instant::now() + EXIT_GRACE;
    while !(out_done && err_done) {
        match rx.recv_timeout(grace_end.saturating_duration_since(Instant::now())) {
            Ok(Event::StdoutDone) => out_done = true,
            Ok(Event::StderrDone) => err_done = true,
            Ok(Event::StdoutOver) => {
                return Err(format!(
                    "{program} printed more than {} bytes on stdout (max_output_bytes of the tool); print less, or raise max_output_bytes in the tools file",
                    spec.max_output_bytes
                ));
            }
            Ok(Event::Exited(_) | Event::Cancelled) => {}
            // a process outside the group still holds a pipe: what the command printed
            // before it exited is its answer
            Err(_) => break,
        }
    }
    drop(running);
    let out = std::mem::take(&mut *lock(&stdout));
    let err = std::mem::take(&mut *lock(&stderr));
    if !status.success() {
        let tail = tail(&String::from_utf8_lossy(&err), STDERR_TAIL);
        return Err(format!("{program} exited with {status}: {tail}"));
    }
    let text = String::from_utf8_lossy(&out);
    serde_json::from_str(text.trim()).map_err(|e| {
        let shown: String = text.chars().take(200).collect();
        format!("{program} printed something that is not JSON ({e}): {shown}")
    })
}

fn lock(buf: &Mutex<Vec<u8>>) -> MutexGuard<'_, Vec<u8>> {
    buf.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Reads stdout into `buf` on a thread, stopping one byte past `max`.
fn read_stdout<R: Read + Send + 'static>(pipe: Option<R>, buf: Arc<Mutex<Vec<u8>>>, max: u64, tx: mpsc::Sender<Event>) {
    std::thread::spawn(move || {
        let Some(mut pipe) = pipe else {
            let _ = tx.send(Event::StdoutDone);
            return;
        };
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let mut b = lock(&buf);
                    b.extend_from_slice(&chunk[..n]);
                    if b.len() as u64 > max {
                        b.clear();
                        let _ = tx.send(Event::StdoutOver);
                        return;
                    }
                }
            }
        }
        let _ = tx.send(Event::StdoutDone);
    });
}

/// Reads stderr on a thread, keeping its last [`STDERR_KEPT`] bytes in `buf`.
fn read_stderr<R: Read + Send + 'static>(pipe: Option<R>, buf: Arc<Mutex<Vec<u8>>>, tx: mpsc::Sender<Event>) {
    std::thread::spawn(move || {
        if let Some(mut pipe) = pipe {
            let mut chunk = [0u8; 16 * 1024];
            loop {
                match pipe.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let mut b = lock(&buf);
                        b.extend_from_slice(&chunk[..n]);
                        if b.len() > STDERR_KEPT {
                            let cut = b.len() - STDERR_KEPT;
                            b.drain(..cut);
                        }
                    }
                }
            }
        }
        let _ = tx.send(Event::StderrDone);
    });
}

/// Waits for the command's exit on a thread. On Linux it is not reaped (`WNOWAIT`), so its
/// process group id stays reserved until the group is killed; the child comes back for
/// reaping. Elsewhere the thread reaps it and sends the status.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn wait_for_exit(child: Child, tx: mpsc::Sender<Event>) -> Option<Child> {
    use nix::sys::wait::{Id, WaitPidFlag, waitid};
    let pid = i32::try_from(child.id()).map(nix::unistd::Pid::from_raw);
    std::thread::spawn(move || {
        let status = match pid {
            Ok(pid) => loop {
                match waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
                    Err(nix::errno::Errno::EINTR) => continue,
                    Ok(_) => break None,
                    Err(e) => break Some(Err(std::io::Error::from(e))),
                }
            },
            Err(_) => Some(Err(std::io::Error::other("the process id does not fit a pid_t"))),
        };
        let _ = tx.send(Event::Exited(status));
    });
    Some(child)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn wait_for_exit(mut child: Child, tx: mpsc::Sender<Event>) -> Option<Child> {
    std::thread::spawn(move || {
        let _ = tx.send(Event::Exited(Some(child.wait())));
    });
    None
}

/// Reaps a killed command on a thread, so that the call returns at once.
fn reap_later(child: Option<Child>) {
    if let Some(mut child) = child {
        std::thread::spawn(move || {
            let _ = child.wait();
        });
    }
}

/// The command tools' processes: the groups running now (their leaders' pids), and
/// whether the run is over. Spawning and sweeping both hold the lock, so a sweep never
/// mistakes a command starting that moment for an escapee.
struct Live {
    groups: BTreeSet<u32>,
    ended: bool,
}

static LIVE: Mutex<Live> = Mutex::new(Live { groups: BTreeSet::new(), ended: false });

/// Whether [`Processes`] made this process a subreaper, so re-parented orphans are ours to kill.
#[cfg(target_os = "linux")]
static SWEEPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The signal that ended the run (0: none).
static SIGNALLED: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The exit status a signal that ended the run asks for (128 + its number), if one did:
/// the mission may finish (its tool killed) before the signal's thread exits the process.
pub fn signal_status() -> Option<u8> {
    match SIGNALLED.load(std::sync::atomic::Ordering::SeqCst) {
        0 => None,
        n => Some(crate::exit::Exit::Interrupted.with_signal(n)),
    }
}

fn live() -> MutexGuard<'static, Live> {
    LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One running command's process group, registered while the call lasts.
struct Running {
    pid: u32,
}

impl Running {
    fn spawn(cmd: &mut Command) -> std::io::Result<(Child, Running)> {
        let mut live = live();
        if live.ended {
            return Err(std::io::Error::other("the run is over"));
        }
        let child = cmd.spawn()?;
        let pid = child.id();
        live.groups.insert(pid);
        Ok((child, Running { pid }))
    }

    /// Kills the whole group (the command and everything it started that stayed in it).
    fn kill(&self) {
        kill_group(self.pid);
    }
}

impl Drop for Running {
    /// Every path out of [`call`] has killed the group already (before the leader was
    /// reaped, so its id could not be reused); here the call stops counting as running,
    /// and the last call to end sweeps up what escaped.
    fn drop(&mut self) {
        let mut live = live();
        live.groups.remove(&self.pid);
        if live.groups.is_empty() {
            sweep_orphans();
        }
    }
}

/// The command tools of one `ptc run`: while it lives, processes that escaped a tool's
/// group are re-parented to `ptc` (Linux); when it is dropped — the run is over, however it
/// ended — every tool still running is killed with its group, and every escaped process.
/// SIGINT, SIGTERM and SIGHUP end the run the same way (then `ptc` exits with 128 + the
/// signal's number): the tools' own process groups do not receive a terminal's Ctrl-C.
pub struct Processes(());

impl Processes {
    /// Starts looking after the run's tool processes.
    pub fn start() -> Processes {
        #[cfg(target_os = "linux")]
        {
            // Not inherited by children; only the processes that escape a tool's group and
            // lose their parent are re-parented here. `ptc run` starts no other processes,
            // so every child that is not a running tool's leader is such an escapee.
            if nix::sys::prctl::set_child_subreaper(true).is_ok() {
                SWEEPING.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        #[cfg(unix)]
        {
            use nix::sys::signal::{SigSet, Signal};
            // Blocked here, before the runtime and the tool threads exist, so every thread
            // inherits the mask and only the waiting thread takes these signals (a command
            // starts with an empty mask: std resets it when spawning).
            let mut set = SigSet::empty();
            for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
                set.add(signal);
            }
            if set.thread_block().is_ok() {
                std::thread::spawn(move || {
                    if let Ok(signal) = set.wait() {
                        // noted before the tools die, so a mission that ends because its
                        // tool was killed still exits with the signal's status
                        SIGNALLED.store(signal as i32, std::sync::atomic::Ordering::SeqCst);
                        end_run();
                        crate::logging::flush();
                        std::process::exit(128 + signal as i32);
                    }
                });
            }
        }
        Processes(())
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        end_run();
    }
}

/// Kills every running command's group and every escaped process; no command starts after.
fn end_run() {
    let mut live = live();
    live.ended = true;
    for pid in &live.groups {
        kill_group(*pid);
    }
    // the run is over: the leaders still running are swept too (their calls, if they ever
    // return, find them gone), so their escaped children are re-parented here
    sweep_orphans();
}

/// Kills a process group by its leader's pid (the command was started as a group leader).
fn kill_group(pid: u32) {
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(pid) {
        // ESRCH (the group is gone) is the usual, harmless answer
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
    #[cfg(not(unix))]
    {
        let _ = Command::new("taskkill")
            .args(["/F", "/T", "/PID", &pid.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Kills and reaps every child of this process. Called, holding [`LIVE`], when no command
/// is running or the run is over: with the subreaper on, the children are then processes
/// that escaped a tool's group (`ptc run` starts no other processes) and leaders whose
/// calls ended. A killed process's own children are re-parented here before it can be
/// reaped, so the rounds repeat until none is left.
fn sweep_orphans() {
    #[cfg(target_os = "linux")]
    {
        use nix::sys::signal::{Signal, kill};
        use nix::sys::wait::waitpid;
        use nix::unistd::Pid;
        if !SWEEPING.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        for _round in 0..64 {
            let orphans = children(std::process::id());
            if orphans.is_empty() {
                return;
            }
            for pid in orphans {
                let Ok(raw) = i32::try_from(pid) else { continue };
                let _ = kill(Pid::from_raw(raw), Signal::SIGKILL);
                let _ = waitpid(Pid::from_raw(raw), None);
            }
        }
    }
}

/// The pids whose parent is `parent`, from `/proc`.
#[cfg(target_os = "linux")]
fn children(parent: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        // `pid (comm) state ppid ...`: comm may hold spaces and parentheses, so read after the last ')'
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some((_, after)) = stat.rsplit_once(')') else { continue };
        let ppid = after.split_whitespace().nth(1).and_then(|s| s.parse::<u32>().ok());
        if ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

fn tail(s: &str, max: usize) -> String {
    let s = s.trim_end();
    let n = s.chars().count();
    if n <= max { s.to_string() } else { format!("...{}", s.chars().skip(n - max).collect::<String>()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn spec(env: &[(&str, &str)], inherit: &[&str]) -> Result<CommandSpec, (&'static str, String)> {
        CommandSpec::new(
            vec!["prog".into()],
            Some(env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            Some(inherit.iter().map(|s| s.to_string()).collect()),
            None,
        )
    }

    #[test]
    fn the_environment_is_the_safe_set_plus_what_the_tool_declares() {
        let parent = |name: &str| -> Option<OsString> {
            match name {
                "PATH" => Some("/bin".into()),
                "OPENAI_API_KEY" => Some("sk-secret".into()),
                "GITHUB_TOKEN" => Some("ghp-secret".into()),
                "WANTED" => Some("yes".into()),
                _ => None,
            }
        };
        let plain = spec(&[], &[]).unwrap().environment(parent);
        assert_eq!(plain, [("PATH".to_string(), OsString::from("/bin"))]);
        let declared =
            spec(&[("MODE", "fast"), ("PATH", "/opt/bin")], &["WANTED", "ABSENT"]).unwrap().environment(parent);
        assert_eq!(
            declared,
            [
                ("MODE".to_string(), OsString::from("fast")),
                ("PATH".to_string(), OsString::from("/opt/bin")),
                ("WANTED".to_string(), OsString::from("yes")),
            ]
        );
    }

    #[test]
    fn bad_declarations_name_the_field() {
        assert_eq!(spec(&[("A=B", "x")], &[]).unwrap_err().0, "env");
        assert_eq!(spec(&[("", "x")], &[]).unwrap_err().0, "env");
        assert_eq!(spec(&[("A", "x\0y")], &[]).unwrap_err().0, "env");
        assert_eq!(spec(&[], &["B=C"]).unwrap_err().0, "inherit_env");
        let (field, message) = spec(&[("A", "1")], &["A"]).unwrap_err();
        assert_eq!(field, "inherit_env");
        assert!(message.contains("A is also set in \"env\""), "{message}");
        let zero = CommandSpec::new(vec!["p".into()], None, None, Some(0)).unwrap_err();
        assert_eq!(zero.0, "max_output_bytes");
        assert!(CommandSpec::new(vec![String::new()], None, None, None).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_cancel_kills_the_running_command_at_once() {
        let spec = CommandSpec::new(vec!["sleep".into(), "60".into()], None, None, None).unwrap();
        let cancel = ptc_lisp_eval::Cancel::new();
        let stopper = cancel.clone();
        let started = Instant::now();
        let waiter = std::thread::spawn(move || {
            call(
                &spec,
                &serde_json::json!({}),
                Instant::now() + Duration::from_secs(60),
                Duration::from_secs(60),
                &cancel,
            )
        });
        stopper.cancel();
        let err = waiter.join().unwrap().unwrap_err();
        assert!(err.contains("cancelled"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(30), "the command ran on: {:?}", started.elapsed());
    }
}
