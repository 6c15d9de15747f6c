//! Context loading: any bytes give a map or a clear error within the budget, and a loaded
//! context converts back to the same JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match ptc_lisp_eval::json::parse_context(text, 1 << 20) {
        Ok(map) => {
            let v = ptc_lisp_eval::Value::Map(std::sync::Arc::new(map));
            if let Ok(json) = ptc_lisp_eval::json::to_json(&v) {
                let again = ptc_lisp_eval::json::parse_context(&json.to_string(), u64::MAX).expect("round trip");
                assert_eq!(ptc_lisp_eval::Value::Map(std::sync::Arc::new(again)), v);
            }
        }
        Err(message) => assert!(!message.is_empty()),
    }
});
