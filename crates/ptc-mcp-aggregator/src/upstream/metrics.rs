//! Accounting: `upstream_calls` per program and `ptc_metrics` (schema version 1).
//!
//! Both are derived from the run's tool-call ledger, where the upstream host recorded
//! `server`, `tool`, `status`, `duration_ms`, `result_bytes`, `oversize`, `reason` and
//! `error` for every `tool/call`. Bytes are exact; tokens are estimates (`utf8_bytes_div_4`).

use ptc_lisp_eval::Outcome;
use serde_json::{Value as Json, json};

use crate::envelope::CallPayload;

/// How token estimates are computed.
pub const TOKEN_ESTIMATE_METHOD: &str = "utf8_bytes_div_4";

/// The `upstream_calls` entries of a run (ledger entries that carry a `server`).
pub fn upstream_calls(outcome: &Outcome) -> Vec<Json> {
    outcome
        .tool_calls
        .iter()
        .filter(|r| r.meta.contains_key("server"))
        .map(|r| {
            let mut e = serde_json::Map::new();
            for k in [
                "server",
                "tool",
                "status",
                "duration_ms",
                "reason",
                "error",
                "result_bytes",
                "oversize",
                "auth",
                "http_status",
            ] {
                if let Some(v) = r.meta.get(k) {
                    e.insert(k.to_string(), v.clone());
                }
            }
            if !e.contains_key("duration_ms") {
                e.insert("duration_ms".into(), json!(r.duration.as_millis() as u64));
            }
            if !e.contains_key("status") {
                // a programmer fault raised before the call was made
                e.insert("status".into(), json!("error"));
                if let Some(err) = &r.error {
                    e.insert("reason".into(), json!(err.kind.to_string()));
                    e.insert("error".into(), json!(err.message));
                }
            }
            Json::Object(e)
        })
        .collect()
}

fn ratio(num: u64, den: u64) -> Json {
    if num == 0 || den == 0 {
        return Json::Null;
    }
    let r = (num as f64 / den as f64 * 100.0).round() / 100.0;
    json!(r)
}

/// `ptc_metrics` for a run whose `result` field is `final_result_bytes` long (0 on error).
pub fn ptc_metrics(calls: &[Json], final_result_bytes: u64, prints_bytes: u64) -> Json {
    let (mut ok, mut err, mut over) = (0u64, 0u64, 0u64);
    let (mut ok_bytes, mut err_bytes, mut over_bytes) = (0u64, 0u64, 0u64);
    for c in calls {
        let bytes = c.get("result_bytes").and_then(Json::as_u64).unwrap_or(0);
        let oversize = c.get("oversize").and_then(Json::as_bool).unwrap_or(false);
        if oversize {
            over += 1;
            over_bytes += bytes;
            err += 1;
        } else if c.get("status").and_then(Json::as_str) == Some("ok") {
            ok += 1;
            ok_bytes += bytes;
        } else {
            err += 1;
            err_bytes += bytes;
        }
    }
    let r = ratio(ok_bytes, final_result_bytes.max(if final_result_bytes == 0 { 0 } else { 1 }));
    json!({
        "schema_version": 1,
        "final_result_bytes": final_result_bytes,
        "prints_bytes": prints_bytes,
        "upstream_call_count": calls.len(),
        "upstream_ok_count": ok,
        "upstream_error_count": err,
        "upstream_oversize_count": over,
        "upstream_result_bytes": ok_bytes,
        "upstream_error_bytes": err_bytes,
        "upstream_oversize_bytes": over_bytes,
        "payload_reduction_ratio": r,
        "estimated_final_result_tokens": final_result_bytes.div_ceil(4),
        "estimated_upstream_result_tokens": ok_bytes.div_ceil(4),
        "token_estimate_method": TOKEN_ESTIMATE_METHOD,
        "baseline": {
            "conservative": {
                "name": "successful_upstream_results_only",
                "bytes": ok_bytes,
                "ratio": r,
                "note": "upstream result bytes the program consumed, divided by the bytes of its answer"
            },
            "optimistic": {
                "name": "no_ptc_direct_llm_workflow",
                "available": false,
                "note": "the server cannot know what a workflow without programmatic tool calling would have cost"
            }
        }
    })
}

/// Adds `upstream_calls` and `ptc_metrics` to a debug-profile payload (structured content
/// and its text mirror).
pub(crate) fn attach(outcome: &Outcome, payload: &mut CallPayload) {
    let Some(Json::Object(s)) = payload.structured.as_mut() else { return };
    let calls = upstream_calls(outcome);
    let final_bytes =
        if payload.is_error { 0 } else { s.get("result").and_then(Json::as_str).map(|r| r.len() as u64).unwrap_or(0) };
    let prints_bytes: u64 = outcome.prints.iter().map(|p| p.len() as u64).sum();
    s.insert("ptc_metrics".into(), ptc_metrics(&calls, final_bytes, prints_bytes));
    s.insert("upstream_calls".into(), Json::Array(calls));
    payload.text = Json::Object(s.clone()).to_string();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_counts_only_ok_calls() {
        let calls = vec![
            json!({"status": "ok", "result_bytes": 1000, "oversize": false}),
            json!({"status": "error", "result_bytes": null, "oversize": true}),
            json!({"status": "error", "reason": "timeout", "oversize": false}),
        ];
        let m = ptc_metrics(&calls, 10, 0);
        assert_eq!(m["payload_reduction_ratio"], json!(100.0));
        assert_eq!(m["upstream_ok_count"], json!(1));
        assert_eq!(m["upstream_error_count"], json!(2));
        assert_eq!(m["upstream_oversize_count"], json!(1));
        assert_eq!(m["estimated_upstream_result_tokens"], json!(250));
        assert_eq!(ptc_metrics(&calls, 0, 0)["payload_reduction_ratio"], Json::Null);
        assert_eq!(m["baseline"]["optimistic"]["available"], json!(false));
    }
}
