//! Parallel evaluation for `pmap` and `pcalls`: branch interpreters on the evaluation
//! pool's branch threads (`pool.rs`), the calling thread taking its share.
//!
//! Each branch is an [`Interp`] of its own with the run's data, host and shared budget
//! and a snapshot of the definitions. What a branch prints is cut per call and merged
//! into the parent's log in call order ([`Prints::absorb`](crate::prints::Prints::absorb)),
//! so the run's print caps hold across branches; its tool calls join the parent's ledger.

use crate::error::{ErrorKind, EvalResult, Flow, err};
use crate::interp::Interp;
use crate::limits::cost;
use crate::prints::Chunk;
use crate::value::{PVector, Value};

/// Runs `calls` (each a function plus its arguments) on parallel branches.
/// Results come back in order; the first failing branch (by position) decides the error.
pub(crate) fn run(interp: &mut Interp, calls: Vec<(Value, Vec<Value>)>, what: &'static str) -> EvalResult {
    use std::sync::atomic::Ordering::SeqCst;
    if calls.is_empty() {
        return Ok(Value::vector([]));
    }
    let budget = interp.shared_budget().clone();
    let max = interp.limits().max_parallel_workers as u64;
    // reserve worker slots from the global pool shared by nested pmaps
    let wanted = (calls.len() as u64).min(max);
    let mut got = 0;
    while got < wanted {
        let live = budget.workers_live.load(SeqCst);
        if live >= max {
            break;
        }
        if budget.workers_live.compare_exchange(live, live + 1, SeqCst, SeqCst).is_ok() {
            got += 1;
        }
    }
    if got == 0 {
        return err(
            ErrorKind::ParallelCapacityExceeded,
            format!(
                "{what}: no parallel worker available (max_parallel_workers = {max}, all busy); avoid nesting pmap inside pmap"
            ),
        );
    }
    let workers = got as usize;
    let n = calls.len();
    let branches: Vec<Interp> = (0..workers).map(|_| interp.branch()).collect();
    let calls = std::sync::Mutex::new(calls.into_iter().enumerate().collect::<Vec<_>>().into_iter());
    let mut results: Vec<Option<Result<Value, Flow>>> = (0..n).map(|_| None).collect();
    let mut merged_prints: Vec<(usize, Chunk)> = Vec::new();
    let mut merged_calls = Vec::new();
    let mut branch_fuel = 0u64;
    let calls = &calls;
    // one job per branch: the first runs on this thread, the others on the pool's branch
    // threads (see `pool.rs`: they share the list of calls, so nothing waits on a branch
    // that has not started)
    let jobs: Vec<_> = branches
        .into_iter()
        .map(|mut b| {
            move || {
                b.reset_stack();
                let _meter = crate::meter::install(b.shared_budget().clone());
                let mut out = Vec::new();
                loop {
                    let next = match calls.lock() {
                        Ok(mut it) => it.next(),
                        Err(_) => None,
                    };
                    let Some((i, (f, mut a))) = next else { break };
                    b.begin_branch_call();
                    let before = b.prints_mark();
                    let r = b.apply(&f, &mut a).and_then(|v| b.check_time().map(|()| v));
                    let prints = b.prints_since(before);
                    let failed = r.is_err();
                    out.push((i, r, prints));
                    if failed {
                        break;
                    }
                }
                (out, b.take_tool_calls(), b.fuel())
            }
        })
        .collect();
    let mut outcome = false;
    for joined in crate::pool::fan_out(jobs) {
        match joined {
            Ok((out, tool_calls, fuel)) => {
                for (i, r, prints) in out {
                    if let Some(slot) = results.get_mut(i) {
                        *slot = Some(r);
                    }
                    merged_prints.push((i, prints));
                }
                merged_calls.extend(tool_calls);
                branch_fuel = branch_fuel.saturating_add(fuel);
            }
            Err(_) => outcome = true,
        }
    }
    budget.workers_live.fetch_sub(got, SeqCst);
    if outcome {
        return err(
            ErrorKind::PmapError,
            format!("{what}: a branch failed inside the interpreter (a bug in ptc); retry, or use map instead"),
        );
    }
    merged_prints.sort_by_key(|(i, _)| *i);
    // counted against this run's caps, in call order, as if the calls ran one by one
    for (_, p) in merged_prints {
        interp.absorb_prints(p);
    }
    interp.extend_tool_calls(merged_calls);
    let mut out = PVector::new();
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Some(Ok(v)) => out.push_back(v),
            Some(Err(Flow::Error(e))) => {
                return Err(match e.kind {
                    ErrorKind::Timeout
                    | ErrorKind::FuelExhausted
                    | ErrorKind::MemoryExceeded
                    | ErrorKind::ParallelCapacityExceeded
                    | ErrorKind::Cancelled => Flow::Error(e),
                    _ => Flow::Error(Box::new(crate::error::EvalError {
                        kind: ErrorKind::PmapError,
                        message: format!("{what} branch {i} failed: {}", e.message),
                        span: e.span,
                    })),
                });
            }
            Some(Err(other)) => return Err(other),
            // a branch stopped early because an earlier item failed
            None => continue,
        }
    }
    // the branches' work is this run's: usage counts it, and `max_fuel` holds over all of it
    interp.add_branch_fuel(branch_fuel)?;
    interp.charge(cost::items(out.len() as u64))?;
    Ok(Value::from_pvec(out))
}
