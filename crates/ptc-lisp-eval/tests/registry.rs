//! The registry: every example runs and prints what it says; names are unique.
mod common;
use std::collections::HashSet;

use common::*;

#[test]
fn every_example_runs() {
    let mut failures = Vec::new();
    let mut count = 0;
    for b in ptc_lisp_eval::builtins::all() {
        assert!(!b.doc.is_empty(), "{} has no doc", b.name);
        assert!(!b.examples.is_empty(), "{} has no example", b.name);
        for (src, want) in b.examples {
            count += 1;
            let got = show(src);
            if got != *want {
                failures.push(format!("{}: {src}\n    want {want}\n    got  {got}", b.name));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {count} examples failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn names_are_unique() {
    let mut seen = HashSet::new();
    for b in ptc_lisp_eval::builtins::all() {
        for n in std::iter::once(&b.name).chain(b.aliases.iter()) {
            assert!(seen.insert(*n), "duplicate registry name {n}");
        }
    }
}
