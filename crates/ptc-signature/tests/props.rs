//! Property tests: render(parse(s)) parses to the same signature; coerce then validate holds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use ptc_signature::{Field, Mode, Signature, Type, coerce, parse, render, validate};

fn ty() -> impl Strategy<Value = Type> {
    let leaf = prop_oneof![
        Just(Type::String),
        Just(Type::Int),
        Just(Type::Float),
        Just(Type::Bool),
        Just(Type::Keyword),
        Just(Type::Any),
        Just(Type::Map),
        Just(Type::Datetime),
    ];
    let t = leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            inner.clone().prop_map(|t| Type::List(Box::new(t))),
            prop::collection::btree_map("[a-z][a-z_]{0,5}", inner, 0..4).prop_map(|m| Type::Object {
                fields: m.into_iter().map(|(k, t)| Field::new(k, t)).collect(),
                closed: false
            }),
        ]
    });
    (t, any::<bool>()).prop_map(|(t, opt)| if opt { Type::Optional(Box::new(t)) } else { t })
}

fn value_for(t: &Type) -> ptc_lisp_eval::Value {
    use ptc_lisp_eval::Value;
    match t.required() {
        Type::String => Value::str("s"),
        Type::Int => Value::str("42"),
        Type::Float => Value::Int(3),
        Type::Bool => Value::str("true"),
        Type::Keyword => Value::str("k"),
        Type::Any | Type::Map => Value::empty_map(),
        Type::Datetime => Value::str("2026-01-15T10:00:00+01:00"),
        Type::List(inner) => Value::vector([value_for(inner), value_for(inner)]),
        Type::Object { fields, .. } => {
            Value::map(fields.iter().map(|f| (Value::str(f.name.as_str()), value_for(&f.ty))))
        }
        Type::Optional(_) => Value::Nil,
        other => panic!("ty() generates no {other:?}"),
    }
}

proptest! {
    #[test]
    fn render_then_parse_is_identity(inputs in prop::collection::btree_map("[a-z][a-z_]{0,5}", ty(), 0..3), output in ty()) {
        let sig = Signature { inputs: inputs.into_iter().map(|(k, t)| Field::new(k, t)).collect(), output };
        let text = render(&sig);
        let back = parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(back, sig);
    }

    #[test]
    fn coerced_values_validate(t in ty()) {
        let (coerced, report) = coerce(&value_for(&t), &t);
        prop_assert!(report.is_ok(), "{:?}", report);
        let r = validate(&coerced, &t, Mode::Enabled);
        prop_assert!(r.is_ok(), "{:?}", r);
    }
}
