//! Property tests: the reader never panics, and print -> read gives the same forms.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use ptc_lisp_syntax::{Form, FormKind, Span, parse_program, print_form};

/// Structural equality ignoring spans (NaN equals NaN).
fn same(a: &Form, b: &Form) -> bool {
    use FormKind::*;
    match (&a.kind, &b.kind) {
        (Float(x), Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        (List(x), List(y))
        | (Vector(x), Vector(y))
        | (Map(x), Map(y))
        | (Set(x), Set(y))
        | (ShortFn(x), ShortFn(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q)),
        (Quote(x), Quote(y)) => same(x, y),
        (x, y) => x == y,
    }
}

fn f(kind: FormKind) -> Form {
    Form::new(kind, Span::default())
}

fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9?!*+<>=_-]{0,8}".prop_filter("not a literal", |s| !matches!(s.as_str(), "nil" | "true" | "false"))
}

fn leaf() -> impl Strategy<Value = Form> {
    prop_oneof![
        Just(f(FormKind::Nil)),
        any::<bool>().prop_map(|b| f(FormKind::Bool(b))),
        any::<i64>().prop_map(|i| f(FormKind::Int(i))),
        any::<f64>().prop_map(|x| f(FormKind::Float(x))),
        "\\PC{0,12}".prop_map(|s| f(FormKind::Str(s))),
        "[a-zA-Z0-9λé]".prop_map(|s| f(FormKind::Char(s.chars().next().unwrap()))),
        Just(f(FormKind::Char('\n'))),
        name().prop_map(|k| f(FormKind::Keyword(k))),
        name().prop_map(|n| f(FormKind::Symbol { ns: None, name: n })),
        (name(), name()).prop_map(|(ns, n)| f(FormKind::Symbol { ns: Some(ns), name: n })),
        "([a-z+*.]|\\\\[dws.]){0,6}".prop_map(|r| f(FormKind::Regex(r))),
        name().prop_map(|n| f(FormKind::Var(n))),
        name().prop_map(|n| f(FormKind::Quote(Box::new(f(FormKind::Symbol { ns: None, name: n }))))),
    ]
}

fn form() -> impl Strategy<Value = Form> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(|v| f(FormKind::List(v))),
            prop::collection::vec(inner.clone(), 0..5).prop_map(|v| f(FormKind::Vector(v))),
            prop::collection::vec((inner.clone(), inner.clone()), 0..3)
                .prop_map(|v| f(FormKind::Map(v.into_iter().flat_map(|(k, x)| [k, x]).collect()))),
            prop::collection::vec(inner, 0..4).prop_map(|v| f(FormKind::Set(v))),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn print_then_read_is_identity(form in form()) {
        let text = print_form(&form);
        let back = parse_program(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(back.len(), 1, "{}", text);
        prop_assert!(same(&form, &back[0]), "{} read back as {:?}", text, back[0]);
    }

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,200}") {
        let _ = parse_program(&s);
    }

    #[test]
    fn lisp_shaped_text_never_panics(s in "[()\\[\\]{}#\"\\\\;:'@%^~, \\n a-z0-9.+-/_&]{0,300}") {
        if let Err(e) = parse_program(&s) {
            prop_assert!(e.line >= 1 && e.column >= 1);
            let _ = e.render(&s);
        }
    }
}

#[test]
fn hostile_nesting_is_an_error_not_a_crash() {
    for open in ["(", "[", "{", "#{", "#("] {
        let src = open.repeat(100_000);
        let err = parse_program(&src).unwrap_err();
        assert!(err.message.contains("nested deeper") || err.message.contains("nested #()"), "{open}: {}", err.message);
    }
}
