//! `ptc mcp --prelude FILE` with the real binary over stdio: prelude functions in
//! `lisp_eval`, in session evaluations next to the session's own definitions, in
//! discovery (`dir`, `doc`, `apropos`, `all-ns`, `ns-publics`; a session's own preludes
//! only), picked by a session start; a bad file stops the start with its name, line and
//! column. (`lisp_task` planners get them too: `mcp_agentic.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

const PTC: &str = env!("CARGO_BIN_EXE_ptc");

const CRM: &str = "(ns crm \"Customer helpers\")\n(defn- score [c] (* 2 (:spend c)))\n(defn vip? \"True for customers who spend a lot.\" [c] (> (score c) 100))\n(defn vips \"The VIP customers of a list.\" [cs] (filterv vip? cs))\n";

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: i64,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let mut child = Command::new(PTC)
            .args(["mcp", "--log-level", "error", "--response-profile", "structured"])
            .args(args)
            .env_remove("PTC_UPSTREAMS")
            .env_remove("PTC_MCP_PRELUDE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = Server { child, stdin, stdout, next_id: 1 };
        s.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        writeln!(s.stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
        s
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        writeln!(self.stdin, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).unwrap();
        self.stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "the server exited");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))["result"].clone()
    }

    fn eval(&mut self, program: &str) -> String {
        let r = self.call("lisp_eval", json!({"program": program}));
        r["content"][0]["text"].as_str().unwrap().to_string()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn prelude_file(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn lisp_eval_calls_and_discovers_prelude_functions() {
    let dir = tempfile::tempdir().unwrap();
    let crm = prelude_file(&dir, "crm.clj", CRM);
    let mut s = Server::start(&["--prelude", &crm]);
    assert_eq!(s.eval("(count (crm/vips [{:spend 10} {:spend 60} {:spend 90}]))"), "user=> 2");
    let listed = s.eval("(dir crm)");
    assert!(listed.contains("crm/vip? - True for customers who spend a lot."), "{listed}");
    assert!(!listed.contains("crm/score"), "a defn- helper is not listed: {listed}");
    let r = s.call("lisp_eval", json!({"program": "(doc crm/vips)"}));
    assert!(r.to_string().contains("The VIP customers of a list."), "{r}");
    assert!(s.eval("(first (apropos \"vip customers\"))").contains("crm/"));
    // the namespace is one of all-ns, with its public names; `user` is the program's own
    assert_eq!(s.eval("(filterv #{\"crm\" \"user\"} (all-ns))"), "user=> [\"crm\" \"user\"]");
    assert_eq!(
        s.eval("(ns-publics 'crm)"),
        "user=> {\"crm/vip?\" \"True for customers who spend a lot.\" \"crm/vips\" \"The VIP customers of a list.\"}"
    );
    assert_eq!(s.eval("[(ns-name crm) (:ns (meta crm/vips)) (dir user)]"), "user=> [\"crm\" \"crm\" []]");
    // a program cannot redefine them, and calls stay independent
    let r = s.call("lisp_eval", json!({"program": "(def crm/vips 1)"}));
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(s.eval("(crm/vip? {:spend 51})"), "user=> true");
}

#[test]
fn sessions_get_the_preludes_they_start_with() {
    let dir = tempfile::tempdir().unwrap();
    let crm = prelude_file(&dir, "crm.clj", CRM);
    let other = prelude_file(&dir, "other.clj", "(ns other)\n(defn twice [x] (* 2 x))\n");
    let mut s = Server::start(&["--sessions", "--prelude", &crm, "--prelude", &other]);
    // default: every prelude, with docs and discovery hints
    let r = s.call("lisp_session_start", json!({}));
    let sc = &r["structuredContent"];
    assert_eq!(sc["prelude_refs"].as_array().unwrap().len(), 2, "{r}");
    assert_eq!(sc["preludes"][0]["id"], "crm");
    assert_eq!(sc["preludes"][0]["functions"].as_array().unwrap().len(), 2, "{r}");
    assert_eq!(sc["preludes"][0]["discovery"][0], "(dir crm)");
    let id = sc["session_id"].as_str().unwrap().to_string();
    let eval = |s: &mut Server, id: &str, program: &str| {
        s.call("lisp_session_eval", json!({"session_id": id, "program": program}))
    };
    let r = eval(&mut s, &id, "(defn big [cs] (count (crm/vips cs))) (def n (other/twice 21))");
    assert_eq!(r["isError"], false, "{r}");
    // prelude names are not session bindings
    assert_eq!(r["structuredContent"]["memory"]["changed_keys"], json!(["big", "n"]), "{r}");
    let r = eval(&mut s, &id, "[(big [{:spend 60}]) n]");
    assert_eq!(r["structuredContent"]["result"], "user=> [1 42]", "{r}");
    // picked by id (and checksum): only that one is there
    let sum = sc["prelude_refs"][1]["checksum"].as_str().unwrap().to_string();
    let r = s.call("lisp_session_start", json!({"preludes": [{"id": "other", "version": 1, "checksum": sum}]}));
    let id2 = r["structuredContent"]["session_id"].as_str().unwrap().to_string();
    let refs = s.call("lisp_session_list_preludes", json!({"session_id": id2}));
    assert_eq!(refs["structuredContent"]["prelude_refs"][0]["id"], "other", "{refs}");
    assert_eq!(refs["structuredContent"]["prelude_refs"].as_array().unwrap().len(), 1);
    let r = eval(&mut s, &id2, "(crm/vip? {:spend 60})");
    assert_eq!(r["isError"], true, "{r}");
    // discovery knows the session's own preludes only
    let r = eval(&mut s, &id2, "[(filterv #{\"crm\" \"other\"} (all-ns)) (ns-publics 'other)]");
    assert_eq!(r["structuredContent"]["result"], "user=> [[\"other\"] {\"other/twice\" \"\"}]", "{r}");
    let r = eval(&mut s, &id2, "(dir crm)");
    assert!(r.to_string().contains("dir: unknown namespace crm"), "{r}");
    let r = eval(&mut s, &id, "(filterv #{\"crm\" \"other\"} (all-ns))");
    assert_eq!(r["structuredContent"]["result"], "user=> [\"crm\" \"other\"]", "{r}");
    // an unknown one is a session_args_error naming what is loaded
    let r = s.call("lisp_session_start", json!({"preludes": ["nope"]}));
    assert_eq!(r["structuredContent"]["reason"], "session_args_error", "{r}");
    assert!(r.to_string().contains("loaded preludes: crm, other"), "{r}");
}

#[test]
fn a_bad_prelude_stops_the_start_naming_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let bad = prelude_file(&dir, "bad.clj", "(ns crm)\n(defn f [x]\n  (+ x undefined-thing))\n");
    let out = Command::new(PTC)
        .args(["mcp", "--prelude", &bad])
        .env_remove("PTC_UPSTREAMS")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{bad}:3:")) && err.contains("undefined-thing"), "{err}");
    // --check reports a good one
    let good = prelude_file(&dir, "crm.clj", CRM);
    let out =
        Command::new(PTC).args(["mcp", "--check", "--prelude", &good]).env_remove("PTC_UPSTREAMS").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok      prelude crm"));
}

/// `ptc mcp ARGS --upstreams <the two-server fixture>` from the workspace root, stdin closed.
fn mcp_with_fixture_upstreams(args: &[&str]) -> std::process::Output {
    Command::new(PTC)
        .arg("mcp")
        .args(args)
        .args(["--upstreams", "fixtures/missions/two-servers/upstreams.json"])
        .current_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .env_remove("PTC_UPSTREAMS")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_prelude_named_like_an_upstream_server_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let crm = prelude_file(&dir, "crm.clj", CRM);
    let out = mcp_with_fixture_upstreams(&["--prelude", &crm]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("--prelude {crm}: namespace crm is also the name of an upstream server")), "{err}");
    // --check says the same; another name is fine next to the same upstreams
    let out = mcp_with_fixture_upstreams(&["--check", "--prelude", &crm]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("namespace crm is also the name of an upstream server"));
    let sales = prelude_file(&dir, "sales.clj", "(ns sales)\n(defn twice [x] (* 2 x))\n");
    let out = mcp_with_fixture_upstreams(&["--check", "--prelude", &sales]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok      prelude sales"));
}
