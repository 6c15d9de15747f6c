//! Every evaluator reason is reachable: for each [`ErrorKind`], a program run through the
//! engine ends in exactly that reason. The `match` below is exhaustive (it sits inside the
//! crate, where `#[non_exhaustive]` does not apply), so a new kind does not compile until it
//! has a case here; `docs/reasons/evaluator.md` is generated from [`ErrorKind::ALL`].

use std::time::Duration;

use crate::{Cancel, Engine, ErrorKind, FnHost, Limits, NoTools, Outcome, RunInput};

/// How a case drives the engine.
struct Case {
    program: &'static str,
    limits: Limits,
    /// The host offers `ok` (answers its argument) and `broken` (always fails).
    tools: bool,
    /// The run's cancel handle is cancelled before it starts.
    cancelled: bool,
}

fn case(program: &'static str) -> Case {
    Case { program, limits: Limits::default(), tools: false, cancelled: false }
}

fn limited(program: &'static str, set: impl FnOnce(&mut Limits)) -> Case {
    let mut limits = Limits::default();
    set(&mut limits);
    Case { program, limits, tools: false, cancelled: false }
}

fn with_tools(program: &'static str) -> Case {
    Case { tools: true, ..case(program) }
}

/// The case that must end in `kind`, or `None` for a kind that another crate raises (named
/// in the comment; its own tests reach it).
fn case_for(kind: ErrorKind) -> Option<Case> {
    let spin = "(loop [i 0] (recur (inc i)))";
    Some(match kind {
        ErrorKind::ParseError => case("(+ 1"),
        ErrorKind::InvalidForm => case("(let [x] x)"),
        ErrorKind::InvalidPlaceholder => case("(+ % 1)"),
        ErrorKind::UnboundVar => case("(no-such-function 1)"),
        ErrorKind::UnknownTool => case("(tool/missing {:a 1})"),
        ErrorKind::ArityError => case("((fn [x] x) 1 2)"),
        ErrorKind::TypeError => case("(+ 1 \"a\")"),
        ErrorKind::ArithmeticError => case("(quot 1 0)"),
        ErrorKind::NotCallable => case("(let [f 1] (f 2))"),
        ErrorKind::DestructureError => case("(let [{:keys [a]} 5] a)"),
        ErrorKind::UnsupportedMethod => case("(.frobnicate \"text\")"),
        ErrorKind::RuntimeError => case("(re-pattern \"(\")"),
        ErrorKind::ToolError => with_tools("(tool/broken {:a 1})"),
        ErrorKind::InvalidToolArgs => with_tools("(tool/ok 1 2 3)"),
        ErrorKind::ToolCallLimitExceeded => {
            Case { tools: true, ..limited("(tool/ok {:a 1}) (tool/ok {:a 2})", |l| l.max_tool_calls = Some(1)) }
        }
        ErrorKind::LoopLimitExceeded => limited(spin, |l| l.max_loop_iterations = 100),
        ErrorKind::RecursionLimitExceeded => limited("(defn f [n] (+ 1 (f n))) (f 1)", |l| l.max_recursion_depth = 50),
        ErrorKind::Timeout => limited(spin, |l| {
            l.timeout = Duration::from_millis(50);
            l.max_loop_iterations = u64::MAX;
        }),
        ErrorKind::FuelExhausted => limited(spin, |l| l.max_fuel = Some(1_000)),
        ErrorKind::MemoryExceeded => {
            limited("(apply str (repeat 100000 \"abcdefgh\"))", |l| l.max_heap_bytes = 64 * 1024)
        }
        ErrorKind::ProgramTooLarge => limited("(+ 1 2 3 4 5 6 7 8 9)", |l| l.max_program_bytes = 8),
        ErrorKind::SymbolLimitExceeded => limited("(let [a 1 b 2 c 3 d 4 e 5] [a b c d e])", |l| l.max_symbols = 3),
        ErrorKind::OutputTooLarge => limited("(vec (range 1000))", |l| l.max_result_bytes = 100),
        ErrorKind::PmapError => case("(pmap (fn [x] (quot 1 x)) [1 0])"),
        ErrorKind::ParallelCapacityExceeded => {
            limited("(pmap (fn [x] (pmap inc [x])) [1 2])", |l| l.max_parallel_workers = 1)
        }
        ErrorKind::Cancelled => Case { cancelled: true, ..limited(spin, |l| l.max_loop_iterations = u64::MAX) },
        ErrorKind::Fail => case("(fail {:reason :not-found})"),
        // raised by ptc-signature when a result does not match its signature
        // (`ptc_signature::enforce`; reached through `ptc eval --signature` and the MCP
        // server's `output_schema` in the `ptc` crate's reason tests)
        ErrorKind::ValidationError => return None,
    })
}

fn drive(c: &Case) -> Outcome {
    let cancel = Cancel::new();
    if c.cancelled {
        cancel.cancel();
    }
    let engine = Engine::new(c.limits.clone());
    if c.tools {
        let host = FnHost::new().with_tool("ok", Ok).with_tool("broken", |_| Err("the service is down".to_string()));
        engine.eval(c.program, RunInput::new(), &host, &cancel)
    } else {
        engine.eval(c.program, RunInput::new(), &NoTools, &cancel)
    }
}

#[test]
fn every_evaluator_reason_is_reachable_through_the_engine() {
    let mut failures = Vec::new();
    for kind in ErrorKind::ALL {
        let Some(c) = case_for(kind) else { continue };
        let out = drive(&c);
        if out.failure_kind() != Some(kind) {
            let got = match out.error() {
                Some(e) => format!("{}: {}", e.kind, e.message),
                None => format!("{:?} {}", out.failure_kind(), out.printed),
            };
            failures.push(format!("  {kind}: {}\n    got {got}", c.program));
        }
    }
    assert!(failures.is_empty(), "{} reason(s) not reached:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn reason_names_are_unique_snake_case_and_described() {
    let mut seen = std::collections::BTreeSet::new();
    for kind in ErrorKind::ALL {
        let name = kind.as_str();
        assert!(seen.insert(name), "{name} twice");
        assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{name}");
        let d = kind.description();
        assert!(d.ends_with('.') && !d.contains('\n') && d.len() < 120, "{name}: {d:?}");
    }
}
