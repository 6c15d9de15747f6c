//! Structured programs through the whole engine: parse, analyze, evaluate under small
//! limits. A contained interpreter panic, or a run that overstays its deadline, is a bug.
#![no_main]

use std::time::{Duration, Instant};

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use ptc_lisp_eval::{Cancel, Engine, FnHost, Limits, RunInput, Value};

/// A program built from a small grammar of PTC-Lisp: literals, collections, special forms
/// and calls to real builtins, so most inputs get past the analyzer and run.
#[derive(Debug)]
struct Program(String);

const SPECIAL: &[&str] = &["if", "when", "let", "fn", "do", "and", "or", "->>", "->", "loop", "for", "doseq", "cond"];

fn expr(u: &mut Unstructured, names: &[&'static str], depth: u32, out: &mut String) -> arbitrary::Result<()> {
    let pick = if depth > 6 { u.int_in_range(0..=5)? } else { u.int_in_range(0..=14)? };
    match pick {
        0 => out.push_str(&i64::arbitrary(u)?.to_string()),
        1 => out.push_str(&format!("{:?}", f64::arbitrary(u)?).replace("inf", "1e308").replace("NaN", "0.5")),
        2 => out.push_str(&format!("{:?}", String::arbitrary(u)?.chars().take(12).collect::<String>())),
        3 => out.push_str(&format!(":k{}", u.int_in_range(0..=5)?)),
        4 => out.push_str(["nil", "true", "false", "x", "xs", "m", "data/rows", "%"][u.int_in_range(0..=7)?]),
        5 => out.push_str(&format!("(range {})", u.int_in_range(0..=40)?)),
        6 | 7 => {
            let open = ["[", "{", "#{"][u.int_in_range(0..=2)?];
            out.push_str(open);
            for _ in 0..u.int_in_range(0..=4)? {
                expr(u, names, depth + 1, out)?;
                out.push(' ');
            }
            out.push_str(if open == "[" { "]" } else { "}" });
        }
        8..=11 => {
            out.push('(');
            out.push_str(u.choose(names)?);
            for _ in 0..u.int_in_range(0..=3)? {
                out.push(' ');
                expr(u, names, depth + 1, out)?;
            }
            out.push(')');
        }
        12 => {
            out.push_str("(let [x ");
            expr(u, names, depth + 1, out)?;
            out.push_str(" xs [1 2 3] m {:a 1 \"b\" 2}] ");
            expr(u, names, depth + 1, out)?;
            out.push(')');
        }
        13 => {
            out.push_str("(map (fn [x] ");
            expr(u, names, depth + 1, out)?;
            out.push_str(") ");
            expr(u, names, depth + 1, out)?;
            out.push(')');
        }
        _ => {
            out.push('(');
            out.push_str(u.choose(SPECIAL)?);
            for _ in 0..u.int_in_range(1..=3)? {
                out.push(' ');
                expr(u, names, depth + 1, out)?;
            }
            out.push(')');
        }
    }
    Ok(())
}

impl<'a> Arbitrary<'a> for Program {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let names: Vec<&'static str> = ptc_lisp_eval::registry::all().map(|b| b.name).collect();
        let mut out = String::new();
        for _ in 0..u.int_in_range(1..=3)? {
            expr(u, &names, 0, &mut out)?;
            out.push('\n');
        }
        Ok(Program(out))
    }
}

fuzz_target!(|p: Program| {
    let limits = Limits {
        timeout: Duration::from_millis(200),
        max_heap_bytes: 16 * 1024 * 1024,
        max_loop_iterations: 10_000,
        ..Limits::default()
    };
    let host = FnHost::new().with_tool("echo", Ok);
    let ctx = serde_json::json!({"rows": [{"id": 1, "amount": 2.5}, {"id": 2, "amount": null}]});
    let input = RunInput::new().with_json_context(ctx.as_object().expect("object"));
    let started = Instant::now();
    let out = Engine::new(limits).eval(&p.0, input, &host, &Cancel::new());
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "{:?} ran {took:?} with a 200 ms limit", p.0);
    if let Some(e) = out.error() {
        assert!(!e.message.starts_with("internal error"), "{:?}: {}", p.0, e.message);
    }
    let _ = out.value().map(Value::type_name);
});
