//! Key normalisation at the tool boundary: Lisp `:order-count` to `"order_count"` and back.

use std::sync::Arc;

use ptc_lisp_eval::Value;
use ptc_lisp_eval::value::PMap;

/// Map keys become strings with `-` turned into `_`, recursively (what tools receive).
pub fn to_tool_keys(v: &Value) -> Value {
    ptc_lisp_eval::interp::stringify_tool_keys(v)
}

/// Map keys become keywords with `_` turned into `-`, recursively (what Lisp code reads).
pub fn to_lisp_keys(v: &Value) -> Value {
    match v {
        Value::Map(m) => {
            let mut out = PMap::new();
            for (k, val) in m.iter() {
                let key = match k {
                    Value::Str(s) | Value::Keyword(s) => Value::kw(s.replace('_', "-")),
                    other => other.clone(),
                };
                out.insert(key, to_lisp_keys(val));
            }
            Value::Map(Arc::new(out))
        }
        Value::Vector(items) => Value::vector(items.iter().map(to_lisp_keys)),
        other => other.clone(),
    }
}
