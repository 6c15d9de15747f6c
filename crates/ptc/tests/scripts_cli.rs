//! Scripts and shells: `ptc eval -e`, `ptc FILE.clj ARGS...` with a `#!` line, completions
//! and the man page.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

fn ptc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptc")).args(args).output().expect("run ptc")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn script(dir: &tempfile::TempDir, name: &str, body: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, body).expect("write the script");
    path.to_string_lossy().into_owned()
}

#[test]
fn eval_takes_the_program_as_dash_e() {
    let out = ptc(&["eval", "-e", "(+ 1 2)"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "3\n");
    let both = ptc(&["eval", "-e", "(+ 1 2)", "(+ 3 4)"]);
    assert_eq!(both.status.code(), Some(2), "a program and -e at once is a usage error");
}

#[test]
fn a_script_reads_its_arguments_and_skips_its_shebang_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = script(
        &dir,
        "greet.clj",
        "#!/usr/bin/env ptc\n(println \"hello\" (first *command-line-args*))\n(count *command-line-args*)\n",
    );
    let out = ptc(&[&path, "world", "again"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hello world\n2\n");
    let none = ptc(&[&path]);
    assert_eq!(text(&none.stdout), "hello nil\n0\n", "no arguments: *command-line-args* is nil, as in Clojure");
}

#[test]
fn a_script_ending_in_nil_prints_only_its_output() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = script(&dir, "say.clj", "(println \"done\")\n");
    let out = ptc(&[&path]);
    assert_eq!(text(&out.stdout), "done\n");
}

#[test]
fn a_script_error_keeps_the_file_s_line_numbers_and_exits_1() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = script(&dir, "bad.clj", "#!/usr/bin/env ptc\n(def x 1)\n(foo x)\n");
    let out = ptc(&[&path]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("Undefined variable: foo"), "{err}");
    assert!(err.contains("line 3"), "the shebang line still counts as line 1: {err}");
}

#[test]
fn eval_file_skips_a_shebang_line_too() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = script(&dir, "p.clj", "#!/usr/bin/env ptc\n(* 6 7)\n");
    let out = ptc(&["eval", "-f", &path]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "42\n");
}

#[test]
fn an_unknown_word_is_neither_a_subcommand_nor_a_file() {
    let out = ptc(&["evl", "(+ 1 2)"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("'evl' is neither a subcommand nor a script file"), "{err}");
    assert!(err.contains("eval"), "names the subcommands: {err}");
}

#[test]
fn completions_and_man_page_come_from_the_cli_definition() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = ptc(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        assert!(
            script.contains("eval") && script.contains("max-heap-bytes"),
            "{shell} completes subcommands and flags"
        );
    }
    let man = ptc(&["man"]);
    assert!(man.status.success());
    let page = text(&man.stdout);
    assert!(page.starts_with(".ie") || page.contains(".TH ptc 1"), "{page}");
    assert!(page.contains("eval") && page.contains("completions"), "{page}");
}

#[test]
fn signature_check_prints_the_signature_once() {
    let out = ptc(&["signature", "check", "(query :string) -> {id :int}"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    assert_eq!(printed.matches("(query :string) -> {id :int}").count(), 1, "{printed}");
}
