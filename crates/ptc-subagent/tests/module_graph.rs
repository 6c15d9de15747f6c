//! The modules of `ptc-subagent` form a layered graph: no file reaches, through
//! `crate::` paths, a file that reaches back to it. A cycle makes every module in it a
//! dependency of every other, so none can be read, tested or moved alone (the review of
//! issue 23 found agent/compose/exec/mission/tool in one). This test reads `src/*.rs`,
//! takes the edges from the code outside comments and `#[cfg(test)]` modules, and fails
//! naming the files of any cycle.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `module -> modules it names`, from the files in `dir`.
fn module_graph(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut sources = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".rs")) else {
            continue;
        };
        if name != "lib" {
            sources.insert(name.to_string(), std::fs::read_to_string(&path).unwrap());
        }
    }
    let modules: BTreeSet<String> = sources.keys().cloned().collect();
    sources.iter().map(|(name, text)| (name.clone(), edges(name, text, &modules))).collect()
}

/// The modules `text` (the file of `own`) names through `crate::` paths, including inside
/// `use crate::{a::X, b::{Y, Z}}` groups.
fn edges(own: &str, text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut code = String::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        if !trimmed.starts_with("//") {
            code.push_str(line);
            code.push('\n');
        }
    }
    let mut found = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let path = if rest.starts_with('{') {
            // a use group: up to its matching brace
            let mut depth = 0;
            let end = rest
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map_or(rest.len(), |(i, _)| i);
            &rest[..end]
        } else {
            rest
        };
        // every `name::` at the start of a path segment list: the group's top-level
        // paths, or the one path after `crate::`
        let starts: Vec<usize> = if rest.starts_with('{') {
            path.char_indices()
                .filter(|&(i, _)| i == 0 || path[..i].ends_with(['{', ',', ' ', '\n']))
                .map(|(i, _)| i)
                .collect()
        } else {
            vec![0]
        };
        for start in starts {
            let ident: String = path[start..]
                .trim_start_matches('{')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if ident != own && modules.contains(&ident) {
                found.insert(ident);
            }
        }
    }
    found
}

/// The strongly connected components with more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.found
}

#[test]
fn the_modules_have_no_import_cycle() {
    let graph = module_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(graph.len() > 20, "src/*.rs not found: {:?}", graph.keys());
    let found = cycles(&graph);
    let shown: Vec<String> = found
        .iter()
        .map(|c| {
            let edges: Vec<String> = c
                .iter()
                .map(|m| {
                    let to: Vec<&str> = graph[m].iter().filter(|t| c.contains(t)).map(String::as_str).collect();
                    format!("{m} -> {}", to.join(", "))
                })
                .collect();
            format!("[{}]", edges.join("; "))
        })
        .collect();
    assert!(
        found.is_empty(),
        "import cycle(s) among ptc-subagent's modules: {}. Move what both sides share into a module \
         below them (see ARCHITECTURE.md, the layers of ptc-subagent)",
        shown.join(" ")
    );
}

#[test]
fn the_graph_reader_sees_paths_groups_and_cycles() {
    let modules: BTreeSet<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
    let text = "use crate::b::X;\nuse crate::{c::{Y, Z}, d::W};\n// crate::a::in_a_comment\nfn f() { crate::a::g() }\n#[cfg(test)]\nmod tests { use crate::b; }\n";
    let found = edges("a", text, &modules);
    assert_eq!(found, ["b", "c", "d"].iter().map(|s| s.to_string()).collect());
    let mut graph = BTreeMap::new();
    graph.insert("a".to_string(), found);
    graph.insert("b".to_string(), BTreeSet::new());
    graph.insert("c".to_string(), ["a".to_string()].into());
    graph.insert("d".to_string(), BTreeSet::new());
    assert_eq!(cycles(&graph), vec![vec!["a".to_string(), "c".to_string()]]);
}
