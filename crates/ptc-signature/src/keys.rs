//! Key normalisation at the tool boundary: Lisp `:order-count` to `"order_count"` and back.
//! The rules live in `ptc_lisp_eval::tool_keys`; these are the names signatures use.

pub use ptc_lisp_eval::tool_keys::{to_lisp_keys, to_tool_keys};
