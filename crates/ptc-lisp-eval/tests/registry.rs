//! The registry: every example runs and prints what it says; names are unique.
mod common;
use std::collections::HashSet;

use common::*;

#[test]
fn every_example_runs() {
    let mut failures = Vec::new();
    let mut count = 0;
    for b in ptc_lisp_eval::registry::all() {
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
    for b in ptc_lisp_eval::registry::all() {
        for n in std::iter::once(&b.name).chain(b.aliases.iter()) {
            assert!(seen.insert(*n), "duplicate registry name {n}");
        }
    }
}

#[test]
fn every_inventory_name_resolves() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/inventory_names.txt")).unwrap();
    let mut missing = Vec::new();
    let mut total = 0;
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let name = line.split('\t').nth(1).unwrap_or(line);
        total += 1;
        let is_constant = ptc_lisp_eval::registry::lookup(name).is_some_and(|b| b.constant);
        let program = if is_constant { format!("(do {name} true)") } else { format!("(fn? {name})") };
        if show(&program) != "true" {
            missing.push(name.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "{} of {total} inventory names do not resolve to functions: {}",
        missing.len(),
        missing.join(" ")
    );
}

#[test]
fn the_namespace_views_are_what_all_ns_and_dir_show() {
    use ptc_lisp_eval::registry::{names_in_namespace, namespaces};
    let mut listed: Vec<String> = namespaces().into_iter().map(|n| format!("{n:?}")).collect();
    listed.push("\"user\"".into());
    listed.sort();
    assert_eq!(show("(all-ns)"), format!("[{}]", listed.join(" ")));
    for ns in namespaces().into_iter().chain(["str", "set", "walk", "core"]) {
        let names = names_in_namespace(ns);
        assert!(!names.is_empty(), "{ns} lists no names");
        // (dir) pages by at most 200: read every page
        let mut paged = Vec::new();
        for offset in (0..names.len()).step_by(200) {
            let page = show(&format!("(dir \"{ns}\" {{:limit 200 :offset {offset}}})"));
            paged.push(page.trim_start_matches('[').trim_end_matches(']').to_string());
        }
        let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
        assert_eq!(paged.join(" "), quoted.join(" "), "{ns}");
    }
    assert!(names_in_namespace("user").is_empty());
    assert!(names_in_namespace("no-such-ns").is_empty());
}
