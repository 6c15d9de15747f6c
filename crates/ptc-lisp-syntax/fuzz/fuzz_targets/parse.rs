//! Fuzz target: reading never panics, and what reads prints back to equal text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(src) = std::str::from_utf8(data) {
        match ptc_lisp_syntax::parse_program(src) {
            Ok(forms) => {
                let printed = ptc_lisp_syntax::print_program(&forms);
                let again = ptc_lisp_syntax::parse_program(&printed).expect("printed forms must read back");
                assert_eq!(ptc_lisp_syntax::print_program(&again), printed);
            }
            Err(e) => {
                let _ = e.render(src);
            }
        }
    }
});
