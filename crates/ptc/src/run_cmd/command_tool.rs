//! Command tools: a tool call runs a program that reads its arguments as one JSON object
//! on stdin and prints its JSON result on stdout.
//!
//! The command runs in its own process group. When the program's deadline or the tool's
//! own time limit passes first, the whole group is killed (a shell script's children
//! included), so a hanging tool cannot outlive the call. A non-zero exit is a tool error
//! carrying the tail of stderr.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value as Json;

/// Characters of stderr kept in an error message.
const STDERR_TAIL: usize = 600;

/// Runs `argv` with `args` on stdin; answers its stdout as JSON.
pub fn call(argv: &[String], args: &Json, program_deadline: Instant, tool_timeout: Duration) -> Result<Json, String> {
    let started = Instant::now();
    let deadline = program_deadline.min(started + tool_timeout);
    let (program, rest) = argv.split_first().ok_or("the command is empty")?;
    let mut cmd = Command::new(program);
    cmd.args(rest).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = cmd.spawn().map_err(|e| format!("cannot start {program}: {e}"))?;
    let pid = child.id();
    let input = args.to_string();
    let stdin = child.stdin.take();
    std::thread::spawn(move || {
        if let Some(mut s) = stdin {
            // a command that does not read its input closes the pipe: not an error
            let _ = s.write_all(input.as_bytes());
        }
    });
    let stdout = reader(child.stdout.take());
    let stderr = reader(child.stderr.take());
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(wait(child));
    });
    let status = match done_rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(status) => status.map_err(|e| format!("{program} could not be waited for: {e}"))?,
        Err(_) => {
            kill_group(pid);
            let _ = done_rx.recv_timeout(Duration::from_secs(2));
            let why = if deadline == program_deadline { "the program's time limit" } else { "--tool-timeout-ms" };
            return Err(format!(
                "{program} did not finish within {} ms ({why}) and was killed",
                deadline.saturating_duration_since(started).as_millis()
            ));
        }
    };
    let out = stdout.recv().unwrap_or_default();
    let err = stderr.recv().unwrap_or_default();
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

fn wait(mut child: Child) -> std::io::Result<std::process::ExitStatus> {
    child.wait()
}

/// Reads a pipe to its end on a thread; the bytes arrive on the channel.
fn reader<R: Read + Send + 'static>(pipe: Option<R>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        let _ = tx.send(buf);
    });
    rx
}

/// Kills the command's process group (its pid is the group id).
fn kill_group(pid: u32) {
    #[cfg(unix)]
    {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    #[cfg(not(unix))]
    {
        let _ = Command::new("taskkill").args(["/F", "/T", "/PID", &pid.to_string()]).status();
    }
}

fn tail(s: &str, max: usize) -> String {
    let s = s.trim_end();
    let n = s.chars().count();
    if n <= max { s.to_string() } else { format!("...{}", s.chars().skip(n - max).collect::<String>()) }
}
