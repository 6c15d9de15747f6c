//! Native result previews: what the model sees when it calls a cached `both` tool
//! natively. The full result stays in the run's cache, where a `lisp_eval` program asking
//! for the same canonical arguments finds it; the model only gets its shape (or a few
//! rows), so a large result never floods the conversation.

use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::{Map, Value as Json, json};

use crate::mode::NativeResult;

/// Properties described per object schema.
const MAX_PROPERTIES: usize = 20;

/// The preview of `result` for the tool `name` called natively with `args`.
pub(crate) fn render(name: &str, args: &Json, result: &Json, how: &NativeResult) -> Json {
    let mut body = match how {
        NativeResult::Metadata => metadata(result),
        NativeResult::Rows { limit } => rows(result, *limit),
        NativeResult::Custom(f) => match catch_unwind(AssertUnwindSafe(|| f(result))) {
            Ok(Ok(Json::Object(m))) => m,
            Ok(Ok(_)) => fallback(name, "non_map", result),
            Ok(Err(_)) | Err(_) => fallback(name, "raised", result),
        },
    };
    body.insert("status".into(), json!("ok"));
    body.insert("full_result_cached".into(), json!(true));
    body.insert("cache_hint".into(), json!(cache_hint(name, args)));
    Json::Object(body)
}

fn fallback(name: &str, category: &str, result: &Json) -> Map<String, Json> {
    tracing::warn!(tool = name, category, "native_result preview function failed; showing the metadata preview");
    metadata(result)
}

/// `Call lisp_eval and then call (tool/NAME {ARGS}) to process the full cached result.`
pub(crate) fn cache_hint(name: &str, args: &Json) -> String {
    format!("Call lisp_eval and then call (tool/{name} {}) to process the full cached result.", clojure_args(args))
}

/// JSON arguments as a PTC-Lisp map literal with keyword keys: `{:query "x" :limit 5}`.
pub(crate) fn clojure_args(args: &Json) -> String {
    match args {
        Json::Object(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, v)| {
                    format!(
                        ":{} {}",
                        k.replace('_', "-"),
                        ptc_lisp_eval::to_clojure(&ptc_lisp_eval::json::from_json(v))
                    )
                })
                .collect();
            format!("{{{}}}", parts.join(" "))
        }
        other => ptc_lisp_eval::to_clojure(&ptc_lisp_eval::json::from_json(other)),
    }
}

fn count(result: &Json) -> usize {
    match result {
        Json::Array(items) => items.len(),
        Json::Null => 0,
        _ => 1,
    }
}

fn metadata(result: &Json) -> Map<String, Json> {
    let mut m = Map::new();
    m.insert("result_count".into(), json!(count(result)));
    m.insert("schema".into(), schema(result));
    let keys: Vec<String> = match result {
        Json::Array(items) => match items.first() {
            Some(Json::Object(o)) => o.keys().cloned().collect(),
            _ => Vec::new(),
        },
        Json::Object(o) => o.keys().cloned().collect(),
        _ => Vec::new(),
    };
    m.insert("sample_keys".into(), json!(keys));
    m
}

fn rows(result: &Json, limit: usize) -> Map<String, Json> {
    let mut m = Map::new();
    m.insert("result_count".into(), json!(count(result)));
    m.insert("schema".into(), schema(result));
    let shown: Vec<Json> = match result {
        Json::Array(items) => items.iter().take(limit).cloned().collect(),
        Json::Null => Vec::new(),
        other => vec![other.clone()],
    };
    m.insert("rows".into(), Json::Array(shown));
    m
}

fn type_name(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

/// A JSON-Schema-ish description: the type, array items from the first element, object
/// properties (at most 20) with their type names.
fn schema(v: &Json) -> Json {
    match v {
        Json::Array(items) => match items.first() {
            Some(first) => json!({"type": "array", "items": schema(first)}),
            None => json!({"type": "array"}),
        },
        Json::Object(o) => {
            let props: Map<String, Json> =
                o.iter().take(MAX_PROPERTIES).map(|(k, v)| (k.clone(), json!(type_name(v)))).collect();
            json!({"type": "object", "properties": props})
        }
        other => json!({"type": type_name(other)}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logs() -> Json {
        json!([{"id": 1, "timestamp": "t1", "message": "error code 42"}, {"id": 2, "timestamp": "t2", "message": "error code 42"}])
    }

    #[test]
    fn metadata_shows_shape_not_values() {
        let p = render("search_logs", &json!({"query": "error code 42"}), &logs(), &NativeResult::Metadata);
        assert_eq!(
            p,
            json!({
                "status": "ok",
                "result_count": 2,
                "schema": {"type": "array", "items": {"type": "object", "properties": {"id": "integer", "message": "string", "timestamp": "string"}}},
                "sample_keys": ["id", "message", "timestamp"],
                "full_result_cached": true,
                "cache_hint": "Call lisp_eval and then call (tool/search_logs {:query \"error code 42\"}) to process the full cached result."
            })
        );
        assert!(!p.to_string().contains("t1"));
    }

    #[test]
    fn rows_are_capped_at_the_limit() {
        let p = render("s", &json!({}), &logs(), &NativeResult::Rows { limit: 1 });
        assert_eq!(p["rows"], json!([logs()[0].clone()]));
        assert_eq!(p["result_count"], json!(2));
        assert_eq!(p["schema"]["type"], json!("array"));
    }

    #[test]
    fn custom_previews_merge_and_fall_back_to_metadata() {
        let top = NativeResult::custom(|r| Ok(json!({"first_id": r[0]["id"]})));
        let p = render("s", &json!({}), &logs(), &top);
        assert_eq!(p["first_id"], json!(1));
        assert_eq!(p["full_result_cached"], json!(true));
        let non_map = NativeResult::custom(|_| Ok(json!([1, 2])));
        assert_eq!(render("s", &json!({}), &logs(), &non_map)["sample_keys"], json!(["id", "message", "timestamp"]));
        let raised = NativeResult::custom(|_| Err("boom".into()));
        assert_eq!(render("s", &json!({}), &logs(), &raised)["result_count"], json!(2));
        let panics = NativeResult::custom(|_| panic!("boom"));
        assert_eq!(render("s", &json!({}), &logs(), &panics)["result_count"], json!(2));
    }
}
