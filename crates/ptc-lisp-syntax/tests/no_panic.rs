//! The reader never panics: any string gives forms or a well-formed located error, and
//! hostile nesting is an error rather than a stack overflow.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use ptc_lisp_syntax::{ParseOptions, parse_program, parse_program_with, print_program};

/// Reads `src` and checks what came back: an error is located inside the source and
/// renders; forms print to text that reads back to the same forms.
fn check(src: &str) -> Result<(), TestCaseError> {
    match parse_program(src) {
        Ok(forms) => {
            let printed = print_program(&forms);
            let again = parse_program(&printed).map_err(|e| {
                TestCaseError::fail(format!("{src:?} printed as {printed:?}, which fails: {}", e.message))
            })?;
            prop_assert_eq!(again.len(), forms.len());
            for (a, b) in forms.iter().zip(&again) {
                prop_assert!(a.eq_ignoring_spans(b), "{:?} printed as {:?}", src, printed);
            }
        }
        Err(e) => {
            prop_assert!(!e.message.is_empty());
            prop_assert!(e.line >= 1 && e.column >= 1, "{:?}", e);
            prop_assert!(e.line as usize <= src.split('\n').count(), "{:?} line out of range for {:?}", e, src);
            let (start, end) = (e.span.start as usize, e.span.end as usize);
            prop_assert!(start <= end && end <= src.len(), "{:?} span outside {:?}", e, src);
            prop_assert!(src.is_char_boundary(start) && src.is_char_boundary(end), "{:?} splits a char", e);
            prop_assert!(e.render(src).starts_with(&e.message));
        }
    }
    Ok(())
}

/// The characters reader bugs hide behind, plus some letters, digits and non-ASCII.
const INTERESTING: &str = r#"[()\[\]{}#"\\;:'@%^~`, \n\r\t.+\-/*_!?=<>&|$0-9a-fxuMNrλé😀]{0,40}"#;

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_strings(src in any::<String>()) {
        check(&src)?;
    }

    #[test]
    fn strings_of_interesting_characters(src in INTERESTING) {
        check(&src)?;
    }

    #[test]
    fn interesting_fragments_glued_together(parts in prop::collection::vec(prop_oneof![
        Just("("), Just(")"), Just("["), Just("]"), Just("{"), Just("}"), Just("#{"), Just("#("),
        Just("#\""), Just("\""), Just("\\"), Just("\\u00"), Just("'"), Just("#'"), Just("##"),
        Just("#_"), Just("@"), Just(":"), Just("::"), Just("/"), Just("1"), Just("-1.5e3"),
        Just("0x"), Just("1/2"), Just("N"), Just("M"), Just("nil"), Just("x"), Just("str/join"),
        Just("%"), Just(" "), Just("\n"), Just(";"), Just(","), Just("λ"), Just("\\newline"),
    ], 0..30)) {
        check(&parts.concat())?;
    }
}

#[test]
fn a_hundred_thousand_open_parens_is_an_error_not_a_crash() {
    for opener in ["(", "[", "{", "#{", "#(", "'("] {
        let src = opener.repeat(100_000);
        let e = parse_program(&src).unwrap_err();
        assert!(!e.message.is_empty(), "{opener}");
        // '#(' inside '#(' fails before the depth limit does.
        if opener != "#(" {
            assert!(e.message.starts_with("forms nested deeper than 256 levels"), "{opener}: {}", e.message);
        }
    }
}

#[test]
fn deep_balanced_nesting_is_refused_at_the_limit() {
    let src = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let e = parse_program(&src).unwrap_err();
    assert_eq!((e.line, e.column), (1, 257));
    let limit = ParseOptions { max_depth: 1000 };
    let ok = format!("{}{}", "(".repeat(1000), ")".repeat(1000));
    assert_eq!(parse_program_with(&ok, &limit).unwrap().len(), 1);
}

#[test]
fn a_huge_flat_program_is_fine() {
    let src = "(+ 1 2) ".repeat(50_000);
    assert_eq!(parse_program(&src).unwrap().len(), 50_000);
}
