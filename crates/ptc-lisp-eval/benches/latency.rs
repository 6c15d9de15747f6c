//! In-process latency of a tiny program: compile + run, and run of a precompiled one.
//!
//! Run by `cargo xtask bench` (`cargo bench -p ptc-lisp-eval --bench latency`), which
//! reads the one JSON line this prints. Each figure is the median of many single calls,
//! timed one by one, after a warm-up; nothing here asserts a timing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::Instant;

use ptc_lisp_eval::{Cancel, CompileEnv, Engine, Limits, NoTools, RunInput};

const TINY: &str = "(let [x 1 y 2] (+ x y))";

fn median_us(mut f: impl FnMut(), n: usize) -> f64 {
    for _ in 0..n / 10 {
        f();
    }
    let mut times: Vec<f64> = (0..n)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; an explicit count may follow
    let n: usize = std::env::args().filter_map(|a| a.parse().ok()).next().unwrap_or(20_000);
    let engine = Engine::new(Limits::default());
    let cancel = Cancel::new();
    let compile_run = median_us(
        || {
            let out = engine.eval(TINY, RunInput::new(), &NoTools, &cancel);
            assert_eq!(out.printed, "3");
        },
        n,
    );
    let program = engine.compile(TINY, &CompileEnv::new()).unwrap();
    let run = median_us(
        || {
            let out = engine.run(&program, RunInput::new(), &NoTools, &cancel);
            assert_eq!(out.printed, "3");
        },
        n,
    );
    // the same calls inside one batch: no handoff to a pool thread per call
    let (batch_compile_run, batch_run) = engine
        .batch(|| {
            let a = median_us(
                || {
                    let out = engine.eval(TINY, RunInput::new(), &NoTools, &cancel);
                    assert_eq!(out.printed, "3");
                },
                n,
            );
            let b = median_us(
                || {
                    let out = engine.run(&program, RunInput::new(), &NoTools, &cancel);
                    assert_eq!(out.printed, "3");
                },
                n,
            );
            (a, b)
        })
        .unwrap();
    println!(
        "{{\"program\": \"{TINY}\", \"calls\": {n}, \"compile_run_us\": {compile_run:.3}, \"run_us\": {run:.3}, \"batch_compile_run_us\": {batch_compile_run:.3}, \"batch_run_us\": {batch_run:.3}}}"
    );
}
