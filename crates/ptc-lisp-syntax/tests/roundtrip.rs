//! print -> read gives back an equal form (ignoring spans; NaN equals NaN), for arbitrary
//! forms of every kind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use ptc_lisp_syntax::{Form, FormKind, Span, parse_program, print_form, print_program};

/// Span-insensitive structural equality, written independently of
/// `Form::eq_ignoring_spans` so the round trip does not trust the code it checks.
fn same(a: &Form, b: &Form) -> bool {
    use FormKind::*;
    let all = |x: &[Form], y: &[Form]| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q));
    match (&a.kind, &b.kind) {
        (Float(x), Float(y)) => (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits(),
        (List(x), List(y))
        | (Vector(x), Vector(y))
        | (Map(x), Map(y))
        | (Set(x), Set(y))
        | (ShortFn(x), ShortFn(y)) => all(x, y),
        (Quote(x), Quote(y)) => same(x, y),
        (Nil, Nil) => true,
        (Bool(x), Bool(y)) => x == y,
        (Int(x), Int(y)) => x == y,
        (Str(x), Str(y)) | (Keyword(x), Keyword(y)) | (Regex(x), Regex(y)) | (Var(x), Var(y)) => x == y,
        (Char(x), Char(y)) => x == y,
        (Symbol { ns: n1, name: m1 }, Symbol { ns: n2, name: m2 }) => n1 == n2 && m1 == m2,
        _ => false,
    }
}

fn f(kind: FormKind) -> Form {
    Form::new(kind, Span::default())
}

/// Symbol names as the reader accepts them: not a number, not a literal, no `:`.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Zλé*!_?<>=%&][a-zA-Z0-9λé*!_?<>=%&+'#.-]{0,8}",
        "[+-]([a-zA-Z*!_?<>=.-][a-zA-Z0-9*!_?<>=.'-]{0,4})?",
        Just("->>".to_string()),
        Just("%1".to_string()),
        Just("*1".to_string()),
        Just(".indexOf".to_string()),
        Just("java.util.Date.".to_string()),
    ]
    .prop_filter("a literal or number-like", |s| {
        let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
        let digit_first = |t: &str| t.starts_with(|c: char| c.is_ascii_digit());
        !matches!(s.as_str(), "nil" | "true" | "false")
            && !digit_first(unsigned)
            && !unsigned.strip_prefix('.').is_some_and(digit_first)
    })
}

fn symbol() -> impl Strategy<Value = FormKind> {
    prop_oneof![
        4 => name().prop_map(|name| FormKind::Symbol { ns: None, name }),
        2 => (name(), name()).prop_map(|(ns, name)| FormKind::Symbol { ns: Some(ns), name }),
        1 => Just(FormKind::Symbol { ns: None, name: "/".into() }),
        1 => name().prop_map(|ns| FormKind::Symbol { ns: Some(ns), name: "/".into() }),
    ]
}

/// Regex sources the reader can produce: plain chars (including `"`) and backslash pairs
/// whose second char is not `"`.
fn regex_source() -> impl Strategy<Value = String> {
    let unit = prop_oneof![
        "[a-z0-9 .*+?()\\[\\]{}|^$\"λ]".prop_map(|s| s),
        "[dDwWsSbn.\\\\/(\\[]".prop_map(|c| format!("\\{c}")),
    ];
    prop::collection::vec(unit, 0..8).prop_map(|units| units.concat())
}

fn leaf() -> impl Strategy<Value = Form> {
    prop_oneof![
        Just(f(FormKind::Nil)),
        any::<bool>().prop_map(|b| f(FormKind::Bool(b))),
        any::<i64>().prop_map(|i| f(FormKind::Int(i))),
        prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(0), Just(-1)].prop_map(|i| f(FormKind::Int(i))),
        any::<f64>().prop_map(|x| f(FormKind::Float(x))),
        prop_oneof![
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(f64::NAN),
            Just(-0.0),
            Just(1e300),
            Just(5e-324)
        ]
        .prop_map(|x| f(FormKind::Float(x))),
        any::<String>().prop_map(|s| f(FormKind::Str(s))),
        "([a-z \"\\\\\n\t\r\u{8}\u{c}\u{0}λ😀]|\\\\u){0,12}".prop_map(|s| f(FormKind::Str(s))),
        any::<char>().prop_map(|c| f(FormKind::Char(c))),
        name().prop_map(|k| f(FormKind::Keyword(k.replace(['/', '#'], "-")))),
        symbol().prop_map(f),
        regex_source().prop_map(|r| f(FormKind::Regex(r))),
        symbol().prop_map(|s| match s {
            FormKind::Symbol { ns: Some(ns), name } => f(FormKind::Var(format!("{ns}/{name}"))),
            FormKind::Symbol { ns: None, name } => f(FormKind::Var(name)),
            other => f(other),
        }),
        symbol().prop_map(|s| f(FormKind::Quote(Box::new(f(s))))),
    ]
}

/// Any form; `#()` is never nested inside `#()` (the reader refuses that).
fn form() -> impl Strategy<Value = Form> {
    leaf().prop_recursive(5, 64, 6, |inner| {
        let items = prop::collection::vec(inner.clone(), 0..6);
        prop_oneof![
            items.clone().prop_map(|v| f(FormKind::List(v))),
            items.clone().prop_map(|v| f(FormKind::Vector(v))),
            items.clone().prop_map(|mut v| {
                v.truncate(v.len() / 2 * 2);
                f(FormKind::Map(v))
            }),
            items.clone().prop_map(|v| f(FormKind::Set(v))),
            items.prop_map(|v| f(FormKind::ShortFn(v.into_iter().map(without_short_fn).collect()))),
            // ' before any form but #(): ''a, '42, '[1 'x]
            inner.prop_map(|x| f(FormKind::Quote(Box::new(without_short_fn(x))))),
        ]
    })
}

/// Replaces `#()` by a list anywhere inside `form`.
fn without_short_fn(form: Form) -> Form {
    let map = |v: Vec<Form>| v.into_iter().map(without_short_fn).collect();
    let kind = match form.kind {
        FormKind::ShortFn(v) | FormKind::List(v) => FormKind::List(map(v)),
        FormKind::Vector(v) => FormKind::Vector(map(v)),
        FormKind::Map(v) => FormKind::Map(map(v)),
        FormKind::Set(v) => FormKind::Set(map(v)),
        other => other,
    };
    f(kind)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn print_then_read_gives_the_same_form(form in form()) {
        let text = print_form(&form);
        let read = parse_program(&text).map_err(|e| TestCaseError::fail(format!("{}\n{}", e.message, e.render(&text))))?;
        prop_assert_eq!(read.len(), 1, "{}", text);
        prop_assert!(same(&form, &read[0]), "printed {}\nread back {:?}", text, read[0]);
        prop_assert!(form.eq_ignoring_spans(&read[0]));
        // Printing is canonical: the text of what was read is the text printed.
        prop_assert_eq!(print_form(&read[0]), text);
    }

    #[test]
    fn print_program_then_read_gives_the_same_forms(forms in prop::collection::vec(form(), 0..5)) {
        let text = print_program(&forms);
        let read = parse_program(&text).map_err(|e| TestCaseError::fail(e.render(&text)))?;
        prop_assert_eq!(read.len(), forms.len());
        for (a, b) in forms.iter().zip(&read) {
            prop_assert!(same(a, b), "printed {}", text);
        }
    }
}

#[test]
fn the_comparison_can_fail() {
    let one = f(FormKind::Int(1));
    assert!(!same(&one, &f(FormKind::Float(1.0))));
    assert!(!same(&f(FormKind::Vector(vec![one.clone()])), &f(FormKind::List(vec![one.clone()]))));
    assert!(!same(&f(FormKind::Float(0.0)), &f(FormKind::Float(-0.0))));
    assert!(same(&f(FormKind::Float(f64::NAN)), &f(FormKind::Float(-f64::NAN))));
    assert!(!same(&f(FormKind::Vector(vec![one.clone()])), &f(FormKind::Vector(vec![one.clone(), one]))));
}

#[test]
fn reading_spans_differ_but_forms_are_the_same() {
    let a = parse_program("[1 \"a\\tb\" \\newline ##NaN 'x #'y #\"\\d\"]").unwrap();
    let b = parse_program(&print_program(&a)).unwrap();
    assert!(same(&a[0], &b[0]));
    assert_ne!(a[0].span, Span::default());
}
