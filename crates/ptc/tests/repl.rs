//! `ptc repl` with piped stdin: inputs read line by line, results on stdout, errors on
//! stderr, no prompt and no history file. The terminal side is in `repl_tmux.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A scratch HOME for one test, removed at the end.
struct Home(PathBuf);

impl Home {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("ptc-repl-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Home(dir)
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn repl(home: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .arg("repl")
        .args(args)
        .env("HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("PTC_REPL_HISTORY")
        .env_remove("PTC_UPSTREAMS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

#[test]
fn a_piped_form_prints_its_result_and_nothing_else() {
    let home = Home::new("piped");
    let o = repl(&home.0, &[], "(+ 1 2)\n");
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(text(&o.stdout), "3\n");
    assert_eq!(text(&o.stderr), "");
    // piped input is not the user's typing: no history file
    assert!(!home.0.join(".local").exists());
}

#[test]
fn results_go_to_stdout_and_errors_to_stderr() {
    let home = Home::new("streams");
    let o = repl(&home.0, &[], "(def x 20)\n(println \"x is\" x)\n(/ x 0)\n(:reason *e)\n(nope)\n(* x 2)\n");
    // an error does not end the session, and a piped session that had one exits 1 (a
    // script notices, as with clj)
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o.stdout), "#'user/x\nx is 20\nnil\n\"arithmetic_error\"\n40\n");
    let err = text(&o.stderr);
    assert!(err.starts_with("Eval error: division by zero"), "{err}");
    assert!(err.contains("Analysis error: Undefined variable: nope"), "{err}");
}

#[test]
fn an_unfinished_form_continues_on_the_next_lines() {
    let home = Home::new("multiline");
    let o = repl(&home.0, &[], "(defn twice [x]\n  (* 2\n     x))\n(twice \"a\nb\")\n(twice 21)\n");
    let err = text(&o.stderr);
    assert_eq!(text(&o.stdout), "#'user/twice\n42\n", "{err}");
    // the string spanning two lines was one input, whose error is a type error
    assert!(err.starts_with("Eval error:"), "{err}");
}

#[test]
fn an_error_inside_an_earlier_definition_points_at_that_definition() {
    let home = Home::new("origin");
    let o = repl(&home.0, &[], "(defn ratio [a]\n  (/ 100 a))\n(ratio 0)\n");
    assert_eq!(
        text(&o.stderr),
        "Eval error: division by zero; check the divisor first, e.g. (if (zero? d) 0 (/ n d))\n in ratio, defined in an earlier input:\n 2 |   (/ 100 a))\n   |   ^ (line 2, column 3)\n"
    );
}

#[test]
fn context_file_becomes_data_keys() {
    let home = Home::new("context");
    let ctx = home.0.join("ctx.json");
    std::fs::write(&ctx, r#"{"orders": [{"amount": 5}, {"amount": 7}]}"#).unwrap();
    let o = repl(&home.0, &["--context", ctx.to_str().unwrap()], "(reduce + (map :amount data/orders))\n");
    assert_eq!(text(&o.stdout), "12\n", "{}", text(&o.stderr));
}

#[test]
fn exit_stops_reading_with_status_zero() {
    let home = Home::new("exit");
    for quit in ["(exit)", ":quit"] {
        let o = repl(&home.0, &[], &format!("(+ 1 1)\n{quit}\n(+ 2 2)\n"));
        assert_eq!(o.status.code(), Some(0));
        assert_eq!(text(&o.stdout), "2\n", "{quit}");
    }
}

#[test]
fn help_lists_the_repl_commands() {
    let home = Home::new("help");
    let o = repl(&home.0, &[], "(help)\n");
    let out = text(&o.stdout);
    for item in ["(doc map)", "(dir str)", "(apropos", "*1 *2 *3", "*e", ":quit", "(exit)", "Ctrl-D", "Tab"] {
        assert!(out.contains(item), "{item} missing from\n{out}");
    }
}

#[test]
fn an_unfinished_form_at_the_end_of_input_is_a_parse_error() {
    let home = Home::new("eof");
    let o = repl(&home.0, &[], "(+ 1 2)\n(+ 1\n");
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o.stdout), "3\n");
    assert!(text(&o.stderr).starts_with("Parse error: unclosed list"), "{}", text(&o.stderr));
}

/// A definition holding 100,000-deep data inside a function is refused and not kept; the
/// session goes on (issue 22: it used to abort the REPL).
#[test]
fn a_definition_holding_deep_data_in_a_function_is_refused_and_the_session_goes_on() {
    let home = Home::new("deep");
    let d = "(reduce (fn [a _] [a]) [] (range 100000))";
    let input = format!("(def f (constantly {d}))\n(def g (partial conj {d}))\n(def h (partial conj [1]))\n(h 2)\nf\n");
    let o = repl(&home.0, &[], &input);
    assert_eq!(o.status.code(), Some(1), "the session went on and ended after its errors: {}", text(&o.stderr));
    let err = text(&o.stderr);
    assert_eq!(err.matches("nested more than 1000 levels").count(), 2, "{err}");
    assert!(err.contains("Undefined variable: f"), "a refused definition is not kept: {err}");
    assert_eq!(text(&o.stdout), "#'user/h\n[1 2]\n");
}

#[test]
fn each_form_of_a_line_prints_its_own_result_and_an_error_does_not_stop_the_rest() {
    let home = Home::new("forms");
    let o = repl(&home.0, &[], "(+ 1 2) (* 2 3)\n(def x 1) (inc x) (/ x 0) (dec x)\n");
    assert_eq!(text(&o.stdout), "3\n6\n#'user/x\n2\n0\n", "{}", text(&o.stderr));
    let err = text(&o.stderr);
    // the error points at its form within the line, which it shows whole
    assert!(err.contains(" 1 | (def x 1) (inc x) (/ x 0) (dec x)\n"), "{err}");
    assert!(err.contains("(line 1, column 19)"), "{err}");
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn a_piped_session_without_errors_exits_0_and_repl_limits_are_interactive() {
    let home = Home::new("limits");
    // 100,000 recur steps: far over the sandbox's 1,000, within the REPL's
    let o = repl(&home.0, &[], "(loop [i 0] (if (< i 100000) (recur (inc i)) i))\n");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "100000\n");
    // a flag still sets a limit
    let capped = repl(&home.0, &["--max-loop-iterations", "10"], "(loop [i 0] (if (< i 100) (recur (inc i)) i))\n");
    assert!(text(&capped.stderr).contains("loop"), "{}", text(&capped.stderr));
}
