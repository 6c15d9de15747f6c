//! Runs one program file against a JSON context in process and prints its answer and the
//! evaluation time: the smallest binary to profile the interpreter with (`perf record`),
//! without the `ptc` CLI's start-up and link time.
//!
//! ```sh
//! cargo build --profile profiling -p ptc-lisp-eval --example run_file
//! perf record -F 2000 -g target/profiling/examples/run_file prog.clj context.json
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]
use std::sync::Arc;
use std::time::{Duration, Instant};

use ptc_lisp_eval::{Limits, RunOptions, json, run};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(prog), ctx) = (args.get(1), args.get(2)) else {
        eprintln!("usage: run_file PROGRAM.clj [CONTEXT.json]");
        std::process::exit(2);
    };
    let source = std::fs::read_to_string(prog).expect("program file");
    let context = match ctx {
        Some(path) => {
            json::parse_context(&std::fs::read_to_string(path).expect("context file"), u64::MAX).expect("context JSON")
        }
        None => Default::default(),
    };
    let limits = Limits {
        timeout: Duration::from_secs(600),
        max_heap_bytes: 16_000_000_000,
        max_loop_iterations: 1_000_000_000,
        max_result_bytes: 100_000_000,
        ..Limits::default()
    };
    let started = Instant::now();
    let out = run(&source, RunOptions { context: Arc::new(context), limits, ..RunOptions::default() });
    let took = started.elapsed();
    let answer = match out.error() {
        Some(e) => format!("error {}: {}", e.kind, e.message),
        None => out.printed.clone(),
    };
    println!("{}", answer.chars().take(200).collect::<String>());
    eprintln!("{:.1} ms", took.as_secs_f64() * 1000.0);
}
