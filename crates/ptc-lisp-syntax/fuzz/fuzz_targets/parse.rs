//! Fuzz target: reading never panics; an error is located inside the input; whatever
//! reads prints to text that reads back to equal forms and prints identically.
//!
//! Run from crates/ptc-lisp-syntax: `cargo +nightly fuzz run parse`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ptc_lisp_syntax::{parse_program, print_program};

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    match parse_program(src) {
        Ok(forms) => {
            let printed = print_program(&forms);
            let again = match parse_program(&printed) {
                Ok(again) => again,
                Err(e) => panic!("{src:?} printed as {printed:?}, which does not read: {}", e.message),
            };
            assert_eq!(again.len(), forms.len(), "{src:?} printed as {printed:?}");
            for (a, b) in forms.iter().zip(&again) {
                assert!(a.eq_ignoring_spans(b), "{src:?} printed as {printed:?} reads differently");
            }
            assert_eq!(print_program(&again), printed, "printing is not canonical for {src:?}");
        }
        Err(e) => {
            assert!(e.line >= 1 && e.column >= 1, "{e:?}");
            assert!(e.span.start <= e.span.end && e.span.end as usize <= src.len(), "{e:?}");
            let _ = e.render(src);
        }
    }
});
