//! The tables against what reads them: every name is declared in exactly one table, every
//! namespace listing is what the tables hold, and every specialisation an entry declares
//! is what the analyzer, the fuser and `Builtin::call` do with it.

use super::{Builtin, Category, Library, Table, Transducer, all, home_library, lookup, tables};
use crate::analyze::{AnalyzeEnv, analyze_program};
use crate::fusion::{Consumer, Sink, Source, SourceKind};
use crate::node::Node;
use crate::{RunOptions, RunResult, run};

/// The one node `src` analyzes to.
fn node(src: &str) -> Node {
    let forms = ptc_lisp_syntax::parse_program(src).unwrap_or_else(|e| panic!("{src}: {e:?}"));
    let env = AnalyzeEnv { max_symbols: 10_000, ..AnalyzeEnv::default() };
    let mut program = analyze_program(&forms, &env).unwrap_or_else(|e| panic!("{src}: {e:?}"));
    program.nodes.pop().unwrap_or(Node::Const(crate::value::Value::Nil))
}

/// The printed result of `src`, or `!kind` for an error.
fn eval(src: &str) -> String {
    let out = run(src, RunOptions::default());
    match out.result {
        RunResult::Error(e) => format!("!{}", e.kind.as_str()),
        _ => out.printed,
    }
}

/// The table that declares `b`.
fn table_of(b: &Builtin) -> &'static Table {
    let mut holders = tables().into_iter().filter(|t| t.builtins.iter().any(|x| std::ptr::eq(x, b)));
    let t = holders.next().unwrap_or_else(|| panic!("{} is in no table", b.name));
    assert!(holders.next().is_none(), "{} is in two tables", b.name);
    t
}

#[test]
fn every_name_is_declared_in_exactly_one_table() {
    let mut declared = 0;
    for t in tables() {
        for b in t.builtins {
            for name in std::iter::once(&b.name).chain(b.aliases) {
                declared += 1;
                let holders: Vec<_> = tables()
                    .into_iter()
                    .filter(|t| t.builtins.iter().any(|x| x.name == *name || x.aliases.contains(name)))
                    .collect();
                assert_eq!(holders.len(), 1, "{name} is declared in {} tables", holders.len());
                let found = lookup(name).unwrap_or_else(|| panic!("{name} does not resolve"));
                assert!(std::ptr::eq(found, b), "{name} resolves to {}", found.name);
            }
            assert_eq!(home_library(b), t.library, "{}", b.name);
        }
    }
    assert_eq!(declared, all().map(|b| 1 + b.aliases.len()).sum::<usize>());
}

/// Every public name of a library as the tables declare it: the entries of the tables
/// of that library (their `str/`/`set/` prefix dropped), and their aliases when the entry
/// lists them.
fn declared_names(lib: Library) -> Vec<String> {
    let mut names: Vec<String> = tables()
        .into_iter()
        .filter(|t| t.library == lib)
        .flat_map(|t| t.builtins.iter())
        .flat_map(|b| {
            let short = b.name.strip_prefix("str/").or_else(|| b.name.strip_prefix("set/")).unwrap_or(b.name);
            let listed = if b.lists_aliases { b.aliases } else { &[] };
            std::iter::once(short).chain(listed.iter().copied()).map(str::to_string)
        })
        .collect();
    names.sort();
    names
}

#[test]
fn every_namespace_listing_is_what_the_tables_hold() {
    for lib in [Library::String, Library::Set, Library::Walk] {
        let want = declared_names(lib);
        assert!(!want.is_empty(), "{lib:?} declares nothing");
        assert_eq!(lib.names(), want, "{lib:?}::names");
        assert_eq!(super::names_in_namespace(lib.alias()), want, "dir {}", lib.alias());
        assert_eq!(super::names_in_namespace(lib.ns_name()), want, "dir {}", lib.ns_name());
        // what a program sees: dir, and the keys of ns-publics
        let quoted: Vec<String> = want.iter().map(|n| format!("{n:?}")).collect();
        assert_eq!(eval(&format!("(dir {} {{:limit 200}})", lib.alias())), format!("[{}]", quoted.join(" ")));
        assert_eq!(
            eval(&format!("(vec (sort (map name (keys (ns-publics {})))))", lib.alias())),
            format!("[{}]", quoted.join(" "))
        );
        // each name resolves under the library's alias, and to an entry of its tables
        for n in &want {
            let b = super::lookup_ns(lib.alias(), n).unwrap_or_else(|| panic!("{}/{n} does not resolve", lib.alias()));
            assert_eq!(table_of(b).library, lib, "{}/{n}", lib.alias());
        }
    }
    // clojure.core: the bare names of the core tables, Java methods aside
    let mut core: Vec<String> = tables()
        .into_iter()
        .filter(|t| t.library == Library::Core)
        .flat_map(|t| t.builtins.iter())
        .filter(|b| {
            b.category != Category::Interop && !matches!(b.name.split_once('/'), Some((ns, _)) if !ns.is_empty())
        })
        .map(|b| b.name.to_string())
        .collect();
    core.sort();
    assert_eq!(super::names_in_namespace("core"), core);
    // all-ns: the libraries, the namespaces names carry (json/, Math/...), java.lang.String
    let mut namespaces: Vec<&str> = all()
        .map(|b| match b.name.split_once('/') {
            Some((ns, _)) if !ns.is_empty() && !matches!(ns, "str" | "set") => ns,
            _ if b.category == Category::Interop && home_library(b) == Library::Core => "java.lang.String",
            _ => home_library(b).ns_name(),
        })
        .collect();
    namespaces.sort_unstable();
    namespaces.dedup();
    assert_eq!(super::namespaces(), namespaces);
}

#[test]
fn doc_shows_every_entry() {
    for b in all() {
        let out = run(&format!("(doc {})", b.name), RunOptions::default());
        assert!(matches!(out.result, RunResult::Value(_)), "(doc {}): {:?}", b.name, out.result);
        assert!(out.prints.iter().any(|p| p.contains(b.doc)), "(doc {}) printed {:?}", b.name, out.prints);
    }
}

/// Entries that declare something, with the names the test needs.
fn declaring(has: impl Fn(&Builtin) -> bool) -> Vec<&'static Builtin> {
    all().filter(|b| has(b)).collect()
}

#[test]
fn every_arithmetic_and_comparison_entry_becomes_its_node() {
    let arith = declaring(|b| b.arith.is_some());
    assert!(arith.len() >= 8);
    for b in arith {
        let Some(op) = b.arith else { continue };
        let src = if op.operands() == 1 { format!("({} 1)", b.name) } else { format!("({} 7 2)", b.name) };
        match node(&src) {
            Node::Arith(got, by, _, _) => assert!(got == op && std::ptr::eq(by, b), "{src}: {got:?}"),
            other => panic!("{src} is not an arithmetic node: {other:?}"),
        }
        // another operand count is an ordinary call
        assert!(matches!(node(&format!("({} 1 2 3)", b.name)), Node::CallBuiltin(..)), "{}", b.name);
    }
    let compare = declaring(|b| b.compare.is_some());
    assert_eq!(compare.len(), 6);
    for b in compare {
        let src = format!("({} 1 2)", b.name);
        assert!(matches!(node(&src), Node::Compare(op, _) if Some(op) == b.compare), "{src}");
    }
}

#[test]
fn every_test_entry_becomes_its_node_and_answers_as_its_builtin() {
    let tests = declaring(|b| b.test.is_some());
    assert!(tests.len() >= 8);
    // values of every kind, a lazy sequence (finite, endless, failing when realised) too
    let values = [
        "0",
        "-0.0",
        "0.0",
        "1",
        "-3",
        "2.0",
        "2.5",
        "-7.0",
        "##NaN",
        "##Inf",
        "##-Inf",
        "9223372036854775807",
        "nil",
        "true",
        "false",
        "\"\"",
        "\"0\"",
        ":a",
        "[]",
        "[0]",
        "{}",
        "#{}",
        "(list)",
        "inc",
        "(map inc [1 2])",
        "(range)",
        "(take 2 (map inc (concat [\"a\"] (range))))",
        "(filter odd? (range 5))",
        "(re-pattern \"a\")",
    ];
    for b in tests {
        // one argument: a test node; another count: an ordinary call
        assert!(matches!(node(&format!("({} 1)", b.name)), Node::Test(by, ..) if std::ptr::eq(by, b)), "{}", b.name);
        assert!(matches!(node(&format!("({} 1 2)", b.name)), Node::CallBuiltin(..)), "{}", b.name);
        for v in values {
            // the node with its argument in place, the node evaluating it, and the builtin
            // called as a value must agree (errors included)
            let in_place = eval(&format!("(let [x {v}] ({} x))", b.name));
            let evaluated = eval(&format!("({} {v})", b.name));
            let called = eval(&format!("(let [f {}] (f {v}))", b.name));
            assert_eq!(in_place, called, "({} {v}) in place", b.name);
            assert_eq!(evaluated, called, "({} {v}) evaluated", b.name);
        }
    }
}

#[test]
fn every_fused_step_sink_and_source_is_fused() {
    let steps = declaring(|b| b.fused.is_some());
    assert!(steps.len() >= 6);
    for b in steps {
        let lead = match b.fused.map(|s| s.lead()) {
            Some(0) => "",
            _ if matches!(b.name, "take" | "drop") => "1 ",
            _ => "vector ",
        };
        let src = format!("(count ({} {lead}[1 2]))", b.name);
        match node(&src) {
            Node::Pipeline(p) => {
                assert_eq!(p.steps.len(), 1, "{src}");
                assert!(Some(p.steps[0].0) == b.fused && std::ptr::eq(p.steps[0].1, b), "{src}");
            }
            other => panic!("{src} is not fused: {other:?}"),
        }
    }
    let sinks = declaring(|b| b.sink.is_some());
    assert_eq!(sinks.len(), 15);
    for b in sinks {
        let calls: &[(&str, Sink)] = match b.sink {
            Some(Consumer::Reduce) => &[("+ ", Sink::Reduce { init: false }), ("+ 0 ", Sink::Reduce { init: true })],
            Some(Consumer::Into) => &[("[] ", Sink::Into)],
            Some(Consumer::Frequencies) => &[("", Sink::Frequencies)],
            Some(Consumer::Count) => &[("", Sink::Count)],
            Some(Consumer::Sum) => &[("", Sink::Sum)],
            Some(Consumer::Vec) => &[("", Sink::Vec)],
            Some(Consumer::First) => &[("", Sink::First)],
            Some(Consumer::Last) => &[("", Sink::Last)],
            Some(Consumer::Some) => &[("odd? ", Sink::Some { negate: false })],
            Some(Consumer::NotAny) => &[("odd? ", Sink::Some { negate: true })],
            Some(Consumer::Every) => &[("odd? ", Sink::Every { negate: false })],
            Some(Consumer::NotEvery) => &[("odd? ", Sink::Every { negate: true })],
            Some(Consumer::Apply) => &[("+ ", Sink::Apply)],
            Some(Consumer::Sort) => &[("", Sink::Sort { by: false }), ("> ", Sink::Sort { by: true })],
            Some(Consumer::Set) => &[("", Sink::Set)],
            None => &[],
        };
        for (lead, sink) in calls {
            let src = format!("({} {lead}(map inc [1 2]))", b.name);
            match node(&src) {
                Node::Pipeline(p) => assert!(p.sink == *sink && std::ptr::eq(p.sink_builtin, b), "{src}"),
                other => panic!("{src} is not fused: {other:?}"),
            }
        }
    }
    let sources = declaring(|b| b.source.is_some());
    assert_eq!(sources.len(), 4);
    for b in sources {
        let (args, kind) = match b.source {
            Some(SourceKind::Range) => ("3", "Range"),
            Some(SourceKind::Split) => ("\"a,b\" \",\"", "Split"),
            Some(SourceKind::Vals) | Some(SourceKind::Keys) => ("{:a 1}", "MapView"),
            None => continue,
        };
        let src = format!("(count (map str ({} {args})))", b.name);
        match node(&src) {
            Node::Pipeline(p) => {
                let got = match p.source {
                    Source::Value => "Value",
                    Source::Range(..) => "Range",
                    Source::Split(..) => "Split",
                    Source::Zip(..) => "Zip",
                    Source::MapView(by, _, keys) => {
                        assert!(std::ptr::eq(by, b) && keys == (b.source == Some(SourceKind::Keys)), "{src}");
                        "MapView"
                    }
                };
                assert_eq!(got, kind, "{src}");
            }
            other => panic!("{src} is not fused: {other:?}"),
        }
    }
}

#[test]
fn every_quoting_entry_takes_its_first_argument_as_a_name() {
    let quoting = declaring(|b| b.quotes_name);
    assert!(quoting.len() >= 5);
    for b in quoting {
        // an undefined symbol is not looked up: it arrives as its name
        let src = format!("({} no-such-name-anywhere)", b.name);
        match node(&src) {
            Node::CallBuiltin(by, args, _) => {
                assert!(std::ptr::eq(by, b), "{src}");
                assert!(
                    matches!(args.first(), Some(Node::Const(crate::value::Value::Str(s))) if &**s == "no-such-name-anywhere"),
                    "{src}: {args:?}"
                );
            }
            other => panic!("{src}: {other:?}"),
        }
    }
}

/// Arguments a transducer form is tried with: a function or a count.
const XF_ARGS: [&str; 2] = ["vector", "2"];

#[test]
fn every_declared_transducer_form_is_a_transducer_and_no_other_is() {
    let declared = declaring(|b| b.transducer.is_some());
    assert!(declared.len() >= 14);
    for b in &declared {
        match b.transducer {
            Some(Transducer::Form { args: 0, .. }) => {
                assert_eq!(eval(&format!("(into [] ({}) [1 1 2])", b.name)), "[1 2]", "{}", b.name);
            }
            Some(Transducer::Form { args, .. }) => {
                assert_eq!(args, 1, "{}", b.name);
                let works = XF_ARGS.iter().any(|a| {
                    eval(&format!("(fn? ({} {a}))", b.name)) == "true"
                        && !eval(&format!("(into [] ({} {a}) [1 2 3])", b.name)).starts_with('!')
                });
                assert!(works, "({} f) is declared a transducer form but is none", b.name);
            }
            Some(Transducer::Itself) => {
                assert_eq!(eval(&format!("(into [] {} [[1] [2 3]])", b.name)), "[1 2 3]", "{}", b.name);
            }
            None => {}
        }
    }
    // a sequence function that does not declare one has no transducer form
    for b in all().filter(|b| b.category == Category::Sequence && b.transducer.is_none()) {
        let calls: Vec<String> = if b.arity.accepts(0) { vec![format!("({})", b.name)] } else { Vec::new() }
            .into_iter()
            .chain(XF_ARGS.iter().filter(|_| b.arity.accepts(1)).map(|a| format!("({} {a})", b.name)))
            .collect();
        for call in calls {
            let got = eval(&format!("(into [] {call} [1 2 3])"));
            assert!(got.starts_with('!'), "(into [] {call} [1 2 3]) = {got}: an undeclared transducer form?");
        }
    }
    // the arity error of a one-argument call lists exactly the declared ones
    let msg = match run("(reduce +)", RunOptions::default()).result {
        RunResult::Error(e) => e.message,
        other => panic!("{other:?}"),
    };
    let listed = msg.split("the transducers are ").nth(1).unwrap_or_default().replace(" and ", ", ");
    let mut listed: Vec<&str> = listed.split(", ").collect();
    listed.sort_unstable();
    let mut want: Vec<&str> = declared.iter().map(|b| b.name).collect();
    want.sort_unstable();
    assert_eq!(listed, want, "{msg}");
}
