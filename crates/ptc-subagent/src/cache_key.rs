//! The canonical cache key: one entry per `(tool, arguments)` whichever layer asked.
//!
//! A program sends `{:query "x" :max-rows 10}`, the model natively sends
//! `{"max_rows": 10.0, "query": "x"}`; both mean the same call. The key normalises the
//! arguments before comparing: map keys become strings with `-` turned into `_`, maps are
//! ordered by key, floats equal to an integer become that integer (`1.0` → `1`, `-0.0` →
//! `0`), recursively. Arguments that are not an object are keyed apart (`non_map`).

use serde_json::{Map, Value as Json};

/// The canonical form of `args` (see the module docs).
pub(crate) fn canonical_args(args: &Json) -> Json {
    match args {
        Json::Object(m) => {
            let mut entries: Vec<(String, Json)> =
                m.iter().map(|(k, v)| (k.replace('-', "_"), canonical_args(v))).collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let mut out = Map::new();
            for (k, v) in entries {
                out.insert(k, v);
            }
            Json::Object(out)
        }
        Json::Array(items) => Json::Array(items.iter().map(canonical_args).collect()),
        Json::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e15 => Json::from(f as i64),
            _ => Json::Number(n.clone()),
        },
        other => other.clone(),
    }
}

/// The cache key of a call: the tool name and the canonical arguments, as one string.
pub(crate) fn canonical_cache_key(name: &str, args: &Json) -> String {
    let canon = match args {
        Json::Object(_) => canonical_args(args),
        other => serde_json::json!({ "non_map": canonical_args(other) }),
    };
    // serde_json's Map keeps keys sorted, so the text is canonical too
    format!("{}\u{0}{}", name.replace('-', "_"), canon)
}

/// A short stable hash of a key, for traces (FNV-1a, hex).
pub(crate) fn key_hash(key: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn key_style_key_order_and_integer_floats_converge() {
        let a =
            canonical_cache_key("search", &json!({"max-rows": 1.0, "query": "x", "opts": {"b": 2, "a": [1.0, -0.0]}}));
        let b = canonical_cache_key("search", &json!({"query": "x", "opts": {"a": [1, 0], "b": 2.0}, "max_rows": 1}));
        assert_eq!(a, b);
    }

    #[test]
    fn different_values_stay_apart() {
        assert_ne!(canonical_cache_key("t", &json!({"a": 1.5})), canonical_cache_key("t", &json!({"a": 1})));
        assert_ne!(canonical_cache_key("t", &json!({"a": "1"})), canonical_cache_key("t", &json!({"a": 1})));
        assert_ne!(canonical_cache_key("t", &json!([1])), canonical_cache_key("t", &json!({"non_map": [2]})));
        assert_ne!(canonical_cache_key("t", &json!({})), canonical_cache_key("u", &json!({})));
    }
}
