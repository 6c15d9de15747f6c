//! The MCP frame check: any bytes are either accepted for rmcp or rejected with a
//! JSON-RPC error object that serialises; it never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ptc_mcp_aggregator::frame::{Verdict, check, read_id};

fuzz_target!(|data: &[u8]| {
    let _ = read_id(data);
    if let Verdict::Reject(r) = check(data) {
        let json = r.to_json();
        assert_eq!(json["jsonrpc"], "2.0", "{json}");
        assert!(json.get("error").is_some(), "{json}");
    }
});
