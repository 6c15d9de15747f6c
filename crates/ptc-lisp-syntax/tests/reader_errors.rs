//! Every reader error message, rendered with its source line and caret (snapshots).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ptc_lisp_syntax::parse_program;

#[test]
fn error_messages() {
    let cases = [
        "(+ 1 2",
        "(let [x 1\n      y 2]\n  (+ x y)",
        "{:a 1",
        "#{1 2",
        "#(inc %",
        "\"abc",
        "(+ 1 2))",
        "[1 2)",
        "{:a 1 :b}",
        "#_(foo)",
        "@state",
        "'(1 2)",
        "'[1 2]",
        "#(map #(inc %) xs)",
        "\"bad \\q escape\"",
        "\\foo",
        ":",
        "::auto",
        ":ns/kw",
        "1/2",
        "1.5M",
        "0x1F",
        "99999999999999999999",
        "##Foo",
        "#foo",
        "`(a ~b)",
        "(str \"\\u12\")",
    ];
    let mut out = String::new();
    for src in cases {
        let e = parse_program(src).expect_err(src);
        out.push_str(&format!("--- {src:?}\n{}\n", e.render(src)));
    }
    insta::assert_snapshot!(out);
}

#[test]
fn readable_programs() {
    let ok = [
        "",
        "; only a comment",
        "nil true false",
        "-1 +1 -1.5 1e3 1.5E-4 -2.0e+10 ##Inf ##-Inf ##NaN",
        "(a, b, c)",
        "\\a \\newline \\space \\tab \\λ \\u00e9",
        ":user-id :a? :b!",
        "str/join clojure.string/join / .indexOf java.util.Date.",
        "#{1 2} #(+ % %2) #\"\\d+\" #'x 'sym '*1",
        "%& %1 * *1 -> ->> inc'",
    ];
    for src in ok {
        assert!(parse_program(src).is_ok(), "{src}: {:?}", parse_program(src));
    }
    let forms = parse_program("(defn f [x]\n  (inc x))").unwrap();
    assert_eq!(forms[0].span.line, 1);
    assert_eq!(forms[0].span.column, 1);
}
