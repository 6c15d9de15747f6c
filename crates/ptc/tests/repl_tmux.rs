//! `ptc repl` on a real terminal: the binary runs in a detached tmux session (its own
//! socket, a scratch HOME and XDG_DATA_HOME), keys are typed with `tmux send-keys` and the
//! screen is read with `tmux capture-pane`. Checks Tab completion (a builtin, a user
//! definition, a `data/` key), the history file and its recall with Up in a second
//! session, `*e`, `#'user/x`, `(help)` and exit status 0 on `:quit` and Ctrl-D.
//!
//! Needs tmux (`.ci/run` installs it); without it the test fails and says so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// How long one expected screen may take to appear (a loaded machine, a debug build).
const WAIT: Duration = Duration::from_secs(30);

/// A tmux server of our own running `ptc repl` in one pane.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    /// Starts `ptc repl ARGS` with `home` as HOME and `home/data` as XDG_DATA_HOME. When
    /// the REPL exits, the pane prints `[exit N]` and stays.
    fn start(home: &Path, args: &str) -> Tmux {
        // a fresh socket per session: a server told to exit may still hold the old one
        // for a moment, and a client that reaches it sees "server exited unexpectedly"
        static SESSIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let socket = home.join(format!("tmux-{n}.sock"));
        let shell = format!(
            "env -u PTC_REPL_HISTORY -u PTC_UPSTREAMS HOME='{home}' XDG_DATA_HOME='{home}/data' '{ptc}' repl {args}; echo \"[exit $?]\"; exec cat",
            home = home.display(),
            ptc = env!("CARGO_BIN_EXE_ptc"),
        );
        let tmux = Tmux { socket };
        tmux.run(&["new-session", "-d", "-x", "120", "-y", "50", &shell]);
        tmux
    }

    fn run(&self, args: &[&str]) -> Output {
        let out =
            Command::new("tmux").arg("-S").arg(&self.socket).args(args).env_remove("TMUX").output().unwrap_or_else(
                |e| panic!("cannot run tmux ({e}); this test needs it: apt-get install tmux (.ci/run installs it)"),
            );
        assert!(out.status.success(), "tmux {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        out
    }

    /// Types `text` literally.
    fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-l", text]);
    }

    /// Presses a key (`Enter`, `Tab`, `Up`, `C-d`).
    fn press(&self, key: &str) {
        self.run(&["send-keys", key]);
    }

    /// The pane, scrollback included, wrapped lines joined, trailing blanks trimmed.
    fn screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-J", "-S", "-1000"]);
        let text = String::from_utf8_lossy(&out.stdout);
        text.lines().map(str::trim_end).collect::<Vec<_>>().join("\n").trim_end().to_string()
    }

    /// Waits until the screen contains `want`; fails with the screen after [`WAIT`].
    fn wait_for(&self, want: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let screen = self.screen();
            if screen.contains(want) {
                return screen;
            }
            assert!(Instant::now() < deadline, "the screen never showed {want:?}; it shows:\n{screen}");
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Types a line, presses Enter and waits for `want`.
    fn enter(&self, line: &str, want: &str) -> String {
        self.type_text(line);
        self.press("Enter");
        self.wait_for(want)
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").arg("-S").arg(&self.socket).arg("kill-server").env_remove("TMUX").output();
    }
}

/// A scratch directory, removed at the end.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn completion_history_star_e_and_help_on_a_real_terminal() {
    let home = Scratch(std::env::temp_dir().join(format!("ptc-repl-tmux-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&home.0);
    std::fs::create_dir_all(&home.0).unwrap();
    let ctx = home.0.join("ctx.json");
    std::fs::write(&ctx, r#"{"orders": [{"amount": 5}, {"amount": 7}]}"#).unwrap();

    {
        let t = Tmux::start(&home.0, &format!("--context '{}'", ctx.display()));
        t.wait_for("user=>");

        t.enter("(def my-long-name 42)", "#'user/my-long-name");

        // Tab completes a user definition...
        t.type_text("(inc my-lo");
        t.press("Tab");
        t.type_text(")");
        t.press("Enter");
        t.wait_for("user=> (inc my-long-name)\n43");

        // ...a builtin of a library...
        t.type_text("(str/upper-c");
        t.press("Tab");
        t.type_text(" \"abc\")");
        t.press("Enter");
        t.wait_for("user=> (str/upper-case \"abc\")\n\"ABC\"");

        // ...and a data/ key of the loaded context
        t.type_text("(count data/ord");
        t.press("Tab");
        t.type_text(")");
        t.press("Enter");
        t.wait_for("user=> (count data/orders)\n2");

        // a form left open continues on the next line
        t.type_text("(+ 1");
        t.press("Enter");
        t.enter("   2)", "   2)\n3");

        // *e holds the last error, which went to the screen with its caret
        t.enter("(/ 1 0)", "Eval error: division by zero");
        t.enter("(:reason *e)", "\"arithmetic_error\"");

        let screen = t.enter("(help)", ":quit, (exit), Ctrl-D");
        let history_file = home.0.join("data").join("ptc").join("repl_history");
        assert!(screen.contains(&format!("history ({})", history_file.display())), "{screen}");

        t.enter("(* 6 7)", "user=> (* 6 7)\n42");
        t.enter(":quit", "[exit 0]");

        let saved = std::fs::read_to_string(&history_file).unwrap();
        for entry in ["(def my-long-name 42)", "(inc my-long-name)", "(str/upper-case \"abc\")", "(* 6 7)"] {
            assert!(saved.lines().any(|l| l == entry), "{entry} not in the history file:\n{saved}");
        }
        assert!(!saved.contains(":quit"), "exit commands stay out of the history:\n{saved}");
    }

    // a second session recalls the last entry of the first with Up
    let t = Tmux::start(&home.0, "");
    t.wait_for("user=>");
    t.press("Up");
    t.wait_for("user=> (* 6 7)");
    t.press("Enter");
    t.wait_for("user=> (* 6 7)\n42");
    t.press("C-d");
    t.wait_for("[exit 0]");
}

#[test]
fn ctrl_c_cancels_a_running_evaluation_and_the_prompt_returns() {
    let home = Scratch(std::env::temp_dir().join(format!("ptc-repl-tmux-cancel-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&home.0);
    std::fs::create_dir_all(&home.0).unwrap();
    let t = Tmux::start(&home.0, "--timeout-ms 600000 --max-loop-iterations 100000000000");
    t.wait_for("user=>");

    // several forms on one line: one result each
    t.enter("(+ 1 2) (* 2 3)", "(+ 1 2) (* 2 3)\n3\n6");

    // an unfinished form continues under its own prompt
    t.type_text("(+ 1");
    t.press("Enter");
    t.wait_for("\n  #_=>");
    t.enter("2)", "  #_=> 2)\n3");

    // a loop that would run for minutes; Ctrl-C stops it and the REPL stays
    t.type_text("(loop [i 0] (recur (inc i)))");
    t.press("Enter");
    // a Ctrl-C that reaches the line editor before the evaluation starts only drops a line,
    // so press it until the evaluation reports its cancellation
    let deadline = Instant::now() + WAIT;
    loop {
        t.press("C-c");
        if t.screen().contains("cancelled") {
            break;
        }
        assert!(Instant::now() < deadline, "Ctrl-C never cancelled the loop:\n{}", t.screen());
        std::thread::sleep(Duration::from_millis(200));
    }
    t.enter("(:reason *e)", "\"cancelled\"");
    t.enter("(* 6 7)", "user=> (* 6 7)\n42");
    t.press("C-d");
    t.wait_for("[exit 0]");
}
