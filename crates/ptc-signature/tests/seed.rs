//! Every example and table of the signature specification (seed 004), as tests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ptc_lisp_eval::Value;
use ptc_signature::{Mode, Template, Type, coerce, extract_return_spec, parse, render, render_tool, validate};
use serde_json::json;

fn v(json: serde_json::Value) -> Value {
    ptc_lisp_eval::json::from_json(&json)
}

#[test]
fn valid_and_invalid_edge_cases() {
    for ok in [":any", "() -> :any", "{}", "[:any]", "[{}]", "{count :int}", "() -> {name :string, price :float}"] {
        assert!(parse(ok).is_ok(), "{ok}: {:?}", parse(ok));
    }
    for bad in ["[]", "", "   "] {
        assert!(parse(bad).is_err(), "{bad} should be invalid");
    }
    assert_eq!(parse("{name :string, price :float}").unwrap(), parse("() -> {name :string, price :float}").unwrap());
}

#[test]
fn the_syntax_summary_parses() {
    for s in [
        "(query :string, limit :int) -> {count :int, items [{id :int}]}",
        "(user {id :int, name :string}, limit :int) -> [{order_id :int}]",
        "(user_id :int) -> {order_count :int, is_active :bool}",
        "{summary :string, count :int, _email_ids [:int]}",
        "{answer :int}",
        "{name :string, price :float, in_stock :bool}",
        "[{id :int, title :string}]",
        "(user_id :int) -> {name :string, orders [:map]}",
        "(query :string, options {limit :int?, sort :string?}) ->\n{results [{id :int, score :float, metadata :map}], total :int}",
        "{user {profile {settings {theme {colors {primary :string}}}}}}",
        "{id :int email :string?}",
        "(items [:any]) -> :bool",
        "(at :datetime) -> :keyword",
    ] {
        assert!(parse(s).is_ok(), "{s}: {:?}", parse(s));
    }
}

#[test]
fn common_mistakes_teach() {
    let e = parse("(items :list) -> :bool").unwrap_err();
    assert_eq!(e.message, ":list is not a type — use [:type], e.g. [:int], [:string] or [:any]");
    assert_eq!(e.column, 8);
    assert!(parse("(x :array) -> :int").unwrap_err().message.starts_with(":array is not a type — use [:type]"));
    assert!(parse("{o :object}").unwrap_err().message.starts_with(":object is not a type — use {field :type} or :map"));
    assert!(parse("{t :tuple}").unwrap_err().message.contains("no tuples"));
    assert!(parse("[]").unwrap_err().message.contains("[:any]"));
    assert!(parse("{x :strng}").unwrap_err().message.starts_with(":strng is not a type"));
    assert!(parse("(a :int").unwrap_err().message.contains("expected ->") || parse("(a :int").is_err());
    assert!(parse("{a :int, a :string}").unwrap_err().message.contains("declared twice"));
    let e = parse("(q :string) {x :int}").unwrap_err();
    assert!(e.message.contains("->"), "{e}");
}

#[test]
fn validation_reports_every_path() {
    let sig = parse("{results [{customer {id :int}, amount :float}]}").unwrap();
    let value = v(json!({"results": [
        {"customer": {"id": "abc"}, "amount": 1.5},
        {"customer": {"id": 2}, "amount": 3},
        {"customer": {"id": 3}, "amount": null}
    ]}));
    let r = validate(&value, &sig.output, Mode::Enabled);
    assert_eq!(
        r.render_errors(),
        "- results[0].customer.id: expected int, got string \"abc\"\n- results[2].amount: expected float, got nil"
    );
}

#[test]
fn modes() {
    let t = parse("{id :int}").unwrap().output;
    let extra = v(json!({"id": 1, "other": true}));
    assert!(validate(&extra, &t, Mode::Enabled).is_ok());
    let strict = validate(&extra, &t, Mode::Strict);
    assert_eq!(strict.render_errors(), "- other: unexpected field (not in the signature)");
    let bad = v(json!({"id": "x"}));
    let warn = validate(&bad, &t, Mode::WarnOnly);
    assert!(warn.is_ok());
    assert_eq!(warn.warnings.len(), 1);
    assert!(validate(&bad, &t, Mode::Disabled).is_ok());
    assert_eq!("strict".parse::<Mode>(), Ok(Mode::Strict));
}

#[test]
fn optional_fields_may_be_nil_or_missing() {
    let t = parse("{id :int, email :string?}").unwrap().output;
    assert!(validate(&v(json!({"id": 1})), &t, Mode::Enabled).is_ok());
    assert!(validate(&v(json!({"id": 1, "email": null})), &t, Mode::Enabled).is_ok());
    assert!(!validate(&v(json!({"id": 1, "email": 5})), &t, Mode::Enabled).is_ok());
    assert!(!validate(&v(json!({"email": "x"})), &t, Mode::Enabled).is_ok());
}

#[test]
fn lisp_keys_match_underscored_fields() {
    let t = parse("{order_count :int, is_active :bool}").unwrap().output;
    let lisp = Value::map([(Value::kw("order-count"), Value::Int(5)), (Value::kw("is-active"), Value::Bool(true))]);
    assert!(validate(&lisp, &t, Mode::Strict).is_ok());
}

#[test]
fn coercion_table() {
    let sig = parse("(id :int, price :float, ok :bool, n :float) -> :bool").unwrap();
    let input_t = Type::Object { fields: sig.inputs.clone(), closed: false };
    let (out, r) = coerce(&v(json!({"id": "42", "price": "3.14", "ok": "true", "n": 42})), &input_t);
    assert!(r.is_ok(), "{:?}", r);
    assert_eq!(ptc_lisp_eval::to_clojure(&out), "{\"id\" 42 \"n\" 42.0 \"ok\" true \"price\" 3.14}");
    let warnings: Vec<String> = r.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        warnings,
        vec![
            "id: coerced string \"42\" to int",
            "price: coerced string \"3.14\" to float",
            "ok: coerced string \"true\" to bool"
        ]
    );
    let (_, r) = coerce(&v(json!({"limit": 2.5})), &parse("{limit :int}").unwrap().output);
    assert_eq!(r.render_errors(), "- limit: expected int, got float 2.5");
    let (out, r) =
        coerce(&v(json!([{"id": "42", "name": "Alice"}])), &parse("[{id :int, name :string}]").unwrap().output);
    assert!(r.is_ok());
    assert_eq!(ptc_lisp_eval::to_clojure(&out), "[{\"id\" 42 \"name\" \"Alice\"}]");
}

#[test]
fn datetimes() {
    let t = parse("{at :datetime}").unwrap().output;
    assert!(validate(&v(json!({"at": "2026-01-15T10:00:00Z"})), &t, Mode::Enabled).is_ok());
    assert!(!validate(&v(json!({"at": "2026-01-15T10:00:00"})), &t, Mode::Enabled).is_ok());
    let (out, r) = coerce(&v(json!({"at": "2026-01-15T10:00:00+02:00"})), &t);
    assert_eq!(ptc_lisp_eval::to_clojure(&out), "{\"at\" \"2026-01-15T08:00:00Z\"}");
    assert_eq!(r.warnings.len(), 1);
}

#[test]
fn placeholder_table() {
    let sig = parse("(user {name :string, address {city :string}}, topic :string, user-name :string, user_name2 :string, name :string) -> {count :int}").unwrap();
    for ok in ["{{name}}", "{{user.name}}", "{{user.address.city}}", "{{user-name}}", "{{user_name2}}", "{{ name }}"] {
        let t = Template::parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        assert!(t.validate_against(&sig).is_ok(), "{ok}");
    }
    for bad in ["{{123}}", "{{}}"] {
        assert!(Template::parse(bad).is_err(), "{bad}");
    }
    let t = Template::parse("Find emails for {{user.name}} about {{missing}}").unwrap();
    assert!(t.validate_against(&sig).unwrap_err().0.contains("{{missing}} is not a signature input"));
}

#[test]
fn template_rendering_and_sections() {
    let t = Template::parse("Hi {{user.name}}: {{#items}}[{{id}}]{{/items}}").unwrap();
    let ctx = v(json!({"user": {"name": "Ann"}, "items": [{"id": 1}, {"id": 2}]}));
    assert_eq!(t.render(&ctx), "Hi Ann: [1][2]");
    let empty = v(json!({"user": {"name": "B"}, "items": []}));
    assert_eq!(Template::parse("{{#items}}x{{/items}}").unwrap().render(&empty), "");
    assert!(Template::parse("{{#a}}never closed").is_err());
    assert!(Template::parse("{{/a}}").is_err());
}

#[test]
fn rendering_for_prompts() {
    let sig = parse("(query :string, limit :int) -> [{id :int, title :string}]").unwrap();
    assert_eq!(render_tool("search", &sig), "search(query :string, limit :int) -> [{id :int, title :string}]");
    let sig = parse("(id :int) -> {name :string, email :string?}").unwrap();
    assert_eq!(render_tool("get_user", &sig), "get_user(id :int) -> {name :string, email :string?}");
    let lisp = ptc_signature::render::render(&parse("{order_count :int}").unwrap(), ptc_signature::KeyStyle::Lisp);
    assert_eq!(lisp, "() -> {order-count :int}");
    assert_eq!(render(&parse("{count :int}").unwrap()), "() -> {count :int}");
    assert_eq!(extract_return_spec("(q :string) -> {count :int}"), Some("{count :int}".into()));
    assert_eq!(extract_return_spec("[]"), None);
}

#[test]
fn json_schema_both_ways() {
    let sig = parse("{count :int, items [{id :int, note :string?}]}").unwrap();
    let schema = ptc_signature::schema::type_to_schema(&sig.output);
    assert_eq!(
        schema,
        json!({"type": "object", "properties": {
            "count": {"type": "integer"},
            "items": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}, "note": {"type": "string"}}, "required": ["id"], "additionalProperties": false}}
        }, "required": ["count", "items"], "additionalProperties": false})
    );
    let back = ptc_signature::schema::schema_to_type(&schema).unwrap();
    assert_eq!(
        ptc_signature::render_type(&back, ptc_signature::KeyStyle::AsWritten),
        "{count :int, items [{id :int, note :string?}]}"
    );
    let list = ptc_signature::schema::output_schema(&parse("[:string]").unwrap().output);
    assert_eq!(list["properties"]["items"], json!({"type": "array", "items": {"type": "string"}}));
    let e = ptc_signature::schema::schema_to_type(&json!({"type": "object", "properties": {"x": {"enum": [1, 2]}}}))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "unsupported JSON Schema at /properties/x: keyword \"enum\" is not supported; use type, properties, required, items and additionalProperties"
    );
    assert!(ptc_signature::schema::schema_to_type(&json!({"$ref": "#/x"})).is_err());
    let t = ptc_signature::schema::schema_to_type(&json!({"type": ["string", "null"]})).unwrap();
    assert_eq!(t, Type::Optional(Box::new(Type::String)));
}

#[test]
fn key_normalisation() {
    let lisp = Value::map([(Value::kw("user-name"), Value::map([(Value::kw("created-at"), Value::str("2024"))]))]);
    let tool = ptc_signature::keys::to_tool_keys(&lisp);
    assert_eq!(ptc_lisp_eval::to_clojure(&tool), "{\"user_name\" {\"created_at\" \"2024\"}}");
    assert_eq!(
        ptc_lisp_eval::to_clojure(&ptc_signature::keys::to_lisp_keys(&tool)),
        "{:user-name {:created-at \"2024\"}}"
    );
}

#[test]
fn a_list_result_validates_like_a_vector() {
    // (update m k conj x) and '(...) give lists; a [:int] output accepts them
    let t = parse("[:int]").unwrap().output;
    assert!(validate(&Value::list([Value::Int(1), Value::Int(2)]), &t, Mode::Enabled).is_ok());
    let bad = validate(&Value::list([Value::Int(1), Value::str("x")]), &t, Mode::Enabled);
    assert_eq!(bad.render_errors(), "- [1]: expected int, got string \"x\"");
}
