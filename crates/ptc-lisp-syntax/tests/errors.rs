//! Every reader error message, rendered with its source line and caret: one insta snapshot
//! per case (tests/snapshots/errors__<case>.snap), so a changed message is a reviewed change.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ptc_lisp_syntax::{ParseError, parse_program};

fn error_of(src: &str) -> ParseError {
    match parse_program(src) {
        Err(e) => e,
        Ok(forms) => panic!("{src:?} should not parse, but read {forms:?}"),
    }
}

/// The location in the message agrees with the fields, and the span is inside the source.
fn check_location(src: &str, e: &ParseError) {
    assert!(
        e.message.contains(&format!("line {}, column {}", e.line, e.column)),
        "message does not name its own location ({}:{}): {}",
        e.line,
        e.column,
        e.message
    );
    assert_eq!((e.span.line, e.span.column), (e.line, e.column));
    assert!(e.span.start <= e.span.end && e.span.end as usize <= src.len(), "{:?} outside {src:?}", e.span);
}

macro_rules! error_snapshots {
    ($($case:ident: $src:expr;)*) => {$(
        #[test]
        fn $case() {
            let src: &str = &$src;
            let e = error_of(src);
            check_location(src, &e);
            insta::assert_snapshot!(stringify!($case), format!("input:\n{src}\n\nerror:\n{}", e.render(src)));
        }
    )*};
}

error_snapshots! {
    // Delimiters.
    unclosed_list: "(+ 1 2";
    unclosed_vector: "[1 2 3";
    unclosed_map: "{:a 1";
    unclosed_set: "#{1 2";
    unclosed_short_fn: "#(inc %";
    unclosed_several: "(defn f [x]\n  (let [y (inc x)]\n    (* y 2)";
    unclosed_too_many_to_spell_out: "[".repeat(21);
    stray_paren: "(+ 1 2))";
    stray_bracket: "(def xs [1 2])]";
    stray_brace: "{:a 1}}";
    mismatched_vector_closed_by_paren: "(let [x 1)\n  x)";
    mismatched_set_closed_by_paren: "(count #{1 2)";
    mismatched_list_closed_by_brace: "(+ 1\n   2}";
    map_with_odd_forms: "{:a 1 :b}";
    nested_too_deep: "[".repeat(300);

    // Strings and regexes.
    unterminated_string: "(str \"abc)";
    unterminated_string_ending_in_backslash: "\"abc\\";
    unterminated_regex: "(re-find #\"\\d+ s)";
    string_unknown_escape: "\"bad \\q escape\"";
    string_regex_like_escape: "(re-find \"\\d+\" s)";
    string_short_unicode_escape: "(str \"\\u12\")";
    string_lone_surrogate: "\"\\uD83D!\"";

    // Characters.
    char_unknown_name: "(str \\foo)";
    char_bad_unicode: "\\u12";
    char_surrogate: "\\uD800";
    char_lone_backslash: "(str \\ \"a\")";
    char_backslash_at_end: "\\";

    // Keywords.
    keyword_lone_colon: "{: 1}";
    keyword_auto_resolved_alias: "(get m ::str/auto)";
    keyword_two_slashes: "(:user/id/x m)";
    keyword_bad_character: ":a:b";

    // Numbers.
    integer_too_large: "99999999999999999999";
    integer_too_small: "-99999999999999999999";
    integer_leading_zero: "017";
    float_too_large: "1e999";
    float_trailing_dot: "1.";
    float_leading_dot: ".5";
    float_negative_leading_dot: "-.5";
    ratio_zero_denominator: "1/0";
    ratio_too_large: "(+ 1/99999999999999999999 1)";
    bigint_suffix: "1N";
    bigdecimal_suffix: "1.5M";
    hex: "0x1F";
    radix: "2r1010";
    invalid_number: "1abc";
    unknown_symbolic_value: "##Foo";

    // Symbols.
    symbol_with_colon: "a:b";
    symbol_with_bad_character: "foo|bar";
    symbol_starting_with_slash: "/foo";
    symbol_ending_with_slash: "(str/ \"a\")";
    unexpected_character: "(+ 1 |x)";

    // Quoting.
    quoted_short_fn: "'#(inc %)";
    quote_without_symbol: "(list ')";
    var_quote_without_symbol: "#'42";

    // Reader syntax PTC-Lisp does not have, and #_ / ^ without their forms.
    discard_before_closer: "(foo #_)";
    discard_at_end: "1 #_ ";
    discard_stacked_short: "[#_ #_ 1]";
    deref: "(inc @counter)";
    syntax_quote: "`(a ~b)";
    unquote: "(a ~b)";
    unquote_splicing: "(a ~@bs)";
    metadata_without_target: "(def ^String)";
    nested_short_fn: "#(map #(inc %) %)";
    tagged_literal: "#inst \"2020-01-01\"";
    namespaced_map: "#:user{:id 1}";
    reader_conditional: "#?(:clj 1)";
    lone_hash: "(foo #)";
    unknown_dispatch: "#!shebang";

    // Location on a later line, after multi-byte characters and a tab.
    located_after_unicode_and_tab: "(str \"λλλ\")\n\t(let [é 1)";
}

#[test]
fn messages_read_back_exactly_as_promised() {
    // The texts other code and prompts rely on, spelled out once here.
    assert_eq!(
        error_of("99999999999999999999").message,
        "integer literal 99999999999999999999 does not fit in 64 bits (range -9223372036854775808..9223372036854775807) at line 1, column 1"
    );
    assert_eq!(
        error_of("\n\n    [1 2").message,
        "unclosed vector: '[' opened at line 3, column 5 was never closed; add ']'"
    );
    assert_eq!(error_of("\"abc").message, "unterminated string starting at line 1, column 1; add a closing '\"'");
    assert_eq!(error_of("x\n  1 2)").message, "unexpected ')' at line 2, column 6: there is no open '(' to close");
    assert_eq!(
        error_of("(x [1 2)").message,
        "mismatched delimiter: '[' opened at line 1, column 4 is closed by ')' at line 1, column 8; use ']'"
    );
    assert!(error_of("(((x").message.contains("unbalanced parentheses: 3 unclosed '('"));
    assert!(error_of("1/0").message.starts_with("ratio literal 1/0 at line 1, column 1 divides by zero"));
    assert!(error_of(":a/b/c").message.ends_with("write one '/' between a namespace and a name, like :order/paid"));
    assert!(error_of(&"(".repeat(300)).message.starts_with("forms nested deeper than 256 levels"));
}

#[test]
fn the_first_error_wins() {
    // A bad escape inside a string is reported, not the unclosed list around it.
    let e = error_of("(str \"\\q\"");
    assert!(e.message.starts_with("unsupported escape \\q"), "{}", e.message);
    // An unterminated string swallows the closers after it.
    let e = error_of("(str \"abc)\n(foo)");
    assert!(e.message.starts_with("unterminated string"), "{}", e.message);
}
