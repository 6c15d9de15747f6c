//! The sandbox peers a user would pick instead of ptc, run on the same workloads in the same
//! bench run: pydantic-monty (a Rust interpreter of a Python subset) as a library driven from
//! CPython and through its `monty` CLI, and nbb (SCI, the interpreter behind babashka, on
//! Node). They are installed under `target/peers/` on first use (`pip install
//! pydantic-monty` into a venv, `npm install nbb`); a peer that cannot be installed or run
//! is reported as such and the bench goes on.
//!
//! Each peer runs the workload's context-fed question once (an untimed run would double the
//! cost of the slowest interpreters for little gain), and its answer must equal CPython's or
//! the figure is replaced by the mismatch. Monty runs the CPython program's own lines; nbb
//! runs the workload's canonical PTC-Lisp phrasing, with `data/x` read as `(:x ctx)`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::measure::{self, Figures};
use super::workloads::{Source, Workload};
use super::{path_arg, plain_answer, same_answer};

/// One peer's figure on one workload, or why there is none.
pub struct PeerFigure {
    pub peer: &'static str,
    pub result: Result<Figures, String>,
}

/// The peers found (or installed) under `target/peers/`.
pub struct Peers {
    /// The venv's Python with `pydantic_monty` importable.
    monty_python: Result<PathBuf, String>,
    /// The venv's `monty` CLI.
    monty_cli: Result<PathBuf, String>,
    /// `node_modules/.bin/nbb`.
    nbb: Result<PathBuf, String>,
}

/// What a peer's name is in the tables.
pub const MONTY_LIB: &str = "Monty (library)";
pub const MONTY_CLI: &str = "Monty (CLI)";
pub const NBB: &str = "nbb";

/// Runs the Python program in `argv[1]` inside a Monty worker, with the JSON file `argv[2]`
/// (parsed by the host CPython) as its `data` input; prints what the program printed.
const MONTY_DRIVER: &str = r#"import json, sys
import pydantic_monty
data = json.load(open(sys.argv[2]))
code = open(sys.argv[1]).read()
out = []
with pydantic_monty.Monty() as pool:
    with pool.checkout() as session:
        session.feed_run(code, inputs={"data": data}, print_callback=lambda stream, text: out.append(text))
sys.stdout.write("".join(out))
"#;

impl Peers {
    /// Finds the peers under `target/peers/`, installing the missing ones.
    pub fn probe(bench_dir: &Path) -> Self {
        let root = crate::target_dir().join("peers");
        let venv = root.join("venv");
        let python = venv.join("bin/python");
        let monty = install_monty(&venv, &python);
        let monty_python = monty.clone().map(|()| python.clone());
        let monty_cli = monty.and_then(|()| {
            let cli = venv.join("bin/monty");
            if cli.exists() { Ok(cli) } else { Err("pydantic-monty installed no `monty` CLI".into()) }
        });
        let nbb = install_nbb(&root);
        let _ = std::fs::create_dir_all(bench_dir.join("programs"));
        Peers { monty_python, monty_cli, nbb }
    }

    /// One line per peer for the report: its version, or why it is missing.
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        let version = |p: &Path, args: &[&str]| {
            Command::new(p)
                .args(args)
                .output()
                .ok()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default()
        };
        match &self.monty_python {
            Ok(py) => out.push(format!(
                "{MONTY_LIB}: pydantic-monty {} driven from CPython (`feed_run` with the parsed context as \
                 its `data` input; CPython's start-up and JSON parse are in its time; peak memory is the \
                 host process only, the Monty worker is a separate process)",
                version(py, &["-c", "import pydantic_monty; print(pydantic_monty.__version__)"])
            )),
            Err(why) => out.push(format!("{MONTY_LIB}: not measured — {why}")),
        }
        match &self.monty_cli {
            Ok(_) => {
                out.push(format!("{MONTY_CLI}: `monty -m DIR::/data prog.py`, the program reading the context itself"))
            }
            Err(why) => out.push(format!("{MONTY_CLI}: not measured — {why}")),
        }
        match &self.nbb {
            Ok(nbb) => out.push(format!(
                "{NBB}: {} on Node {}, the canonical phrasing with `data/x` read as `(:x ctx)` from \
                 `JSON.parse` + `js->clj :keywordize-keys`",
                version(nbb, &["--version"]),
                version(Path::new("node"), &["--version"])
            )),
            Err(why) => out.push(format!("{NBB}: not measured — {why}")),
        }
        out
    }

    /// Runs every available peer once on workload `w`'s context-fed question; `answer` is
    /// CPython's answer to it.
    pub fn measure(&self, w: &Workload, dir: &Path, answer: &serde_json::Value) -> Vec<PeerFigure> {
        let mut out = Vec::new();
        let ctx = match w.data.ensure(dir) {
            Ok(c) => c,
            Err(e) => return vec![PeerFigure { peer: NBB, result: Err(format!("{e:#}")) }],
        };
        let programs = dir.join("programs");
        let run_checked = |peer: &'static str, program: &Path, args: Vec<String>| PeerFigure {
            peer,
            result: (|| -> Result<Figures> {
                eprintln!("==> workload {} peer {peer}", w.id);
                let run = measure::run(program, &args)?;
                let theirs = plain_answer(&run.stdout);
                if !same_answer(answer, &theirs) {
                    bail!("answer differs from CPython's: {}", super::clip(&theirs));
                }
                Ok(measure::figures(&[run]))
            })()
            .map_err(|e| format!("{e:#}")),
        };
        let (_, python_file) = w.baseline(Source::Context);
        let body = python_file.split_once('\n').map(|(_, rest)| rest).unwrap_or("").to_string();
        let body = body.split_once('\n').map(|(_, rest)| rest).unwrap_or("").to_string();
        if let Ok(py) = &self.monty_python {
            let prog = programs.join(format!("{}-monty-lib.py", w.id));
            let driver = programs.join("monty_driver.py");
            let written = std::fs::write(&prog, format!("import json\n{body}"))
                .and_then(|()| std::fs::write(&driver, MONTY_DRIVER));
            out.push(match written {
                Ok(()) => run_checked(MONTY_LIB, py, vec![path_arg(&driver), path_arg(&prog), path_arg(&ctx)]),
                Err(e) => PeerFigure { peer: MONTY_LIB, result: Err(e.to_string()) },
            });
        }
        if let Ok(cli) = &self.monty_cli {
            let prog = programs.join(format!("{}-monty-cli.py", w.id));
            let file = ctx.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            let text = format!("import json\ndata = json.load(open(\"/data/{file}\"))\n{body}");
            out.push(match std::fs::write(&prog, text) {
                Ok(()) => {
                    run_checked(MONTY_CLI, cli, vec!["-m".into(), format!("{}::/data", dir.display()), path_arg(&prog)])
                }
                Err(e) => PeerFigure { peer: MONTY_CLI, result: Err(e.to_string()) },
            });
        }
        if let Ok(nbb) = &self.nbb {
            let prog = programs.join(format!("{}.cljs", w.id));
            let lisp = w.phrasings.iter().find(|p| p.source == Source::Context).map(|p| p.lisp.as_str());
            out.push(match lisp.map(|l| std::fs::write(&prog, nbb_program(l))) {
                Some(Ok(())) => run_checked(NBB, nbb, vec![path_arg(&prog), path_arg(&ctx)]),
                Some(Err(e)) => PeerFigure { peer: NBB, result: Err(e.to_string()) },
                None => PeerFigure { peer: NBB, result: Err("no context-fed phrasing".into()) },
            });
        }
        out
    }
}

fn install_monty(venv: &Path, python: &Path) -> Result<(), String> {
    let importable =
        |py: &Path| Command::new(py).args(["-c", "import pydantic_monty"]).output().is_ok_and(|o| o.status.success());
    if python.exists() && importable(python) {
        return Ok(());
    }
    let step = || -> Result<()> {
        eprintln!("==> installing pydantic-monty into {}", venv.display());
        if !python.exists() {
            let ok = Command::new("python3").arg("-m").arg("venv").arg(venv).status().context("cannot run python3")?;
            if !ok.success() {
                bail!("`python3 -m venv {}` failed", venv.display());
            }
        }
        let out = Command::new(python)
            .args(["-m", "pip", "install", "--quiet", "pydantic-monty"])
            .output()
            .context("cannot run pip")?;
        if !out.status.success() {
            bail!("`pip install pydantic-monty` failed: {}", String::from_utf8_lossy(&out.stderr).trim());
        }
        Ok(())
    };
    step().map_err(|e| format!("{e:#}"))?;
    if importable(python) { Ok(()) } else { Err("pydantic-monty installed but `import pydantic_monty` fails".into()) }
}

fn install_nbb(root: &Path) -> Result<PathBuf, String> {
    let nbb = root.join("node_modules/.bin/nbb");
    if nbb.exists() {
        return Ok(nbb);
    }
    let step = || -> Result<()> {
        eprintln!("==> installing nbb into {}", root.display());
        std::fs::create_dir_all(root)?;
        let out = Command::new("npm")
            .args(["install", "--silent", "--no-audit", "--no-fund", "nbb"])
            .current_dir(root)
            .output()
            .context("cannot run npm (nbb needs Node and npm)")?;
        if !out.status.success() {
            bail!("`npm install nbb` failed: {}", String::from_utf8_lossy(&out.stderr).trim());
        }
        Ok(())
    };
    step().map_err(|e| format!("{e:#}"))?;
    if nbb.exists() { Ok(nbb) } else { Err(format!("npm installed no {}", nbb.display())) }
}

/// A PTC-Lisp workload program as an nbb script: the context file (first argument) parsed
/// into `ctx` with keyword keys, `data/x` read as `(:x ctx)`, the result printed as JSON.
pub fn nbb_program(lisp: &str) -> String {
    let mut body = String::with_capacity(lisp.len() + 64);
    let mut rest = lisp;
    while let Some(at) = rest.find("data/") {
        let boundary = rest[..at].chars().next_back().is_none_or(|c| !is_symbol_char(c));
        body.push_str(&rest[..at]);
        let after = &rest[at + "data/".len()..];
        let len = after.find(|c: char| !is_symbol_char(c)).unwrap_or(after.len());
        if boundary && len > 0 {
            body.push_str(&format!("(:{} ctx)", &after[..len]));
            rest = &after[len..];
        } else {
            body.push_str("data/");
            rest = after;
        }
    }
    body.push_str(rest);
    format!(
        "(ns bench (:require [\"fs\" :as fs] [clojure.string :refer [split lower-case upper-case join]]))\n\
         (def ctx (js->clj (js/JSON.parse (fs/readFileSync (first *command-line-args*) \"utf8\")) :keywordize-keys true))\n\
         (println (js/JSON.stringify (clj->js\n{body})))\n"
    )
}

fn is_symbol_char(c: char) -> bool {
    c.is_alphanumeric() || "-_?!*+<>=.".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nbb_programs_read_the_context_for_data_symbols_only() {
        let p = nbb_program("(->> data/orders (map :amount) (take data/n)) mydata/x");
        assert!(p.contains("(->> (:orders ctx) (map :amount) (take (:n ctx))) mydata/x"), "{p}");
        assert!(p.starts_with("(ns bench"), "{p}");
    }
}
