//! Forms back to text: canonical PTC-Lisp that the reader reads back to an equal form.
//!
//! The output is one line per form with single spaces between elements. Strings and chars
//! are re-escaped, floats always carry a `.` or an exponent (so they stay floats), and the
//! special floats print as `##Inf`, `##-Inf`, `##NaN`.
//!
//! The round trip holds for every form the reader can produce. Forms built by hand must
//! respect the same lexical rules (a `Keyword` name without `/` or spaces, a `Symbol` name
//! that is a valid symbol, a `Quote` of a symbol...); the printer does not check them.

use crate::ast::{Form, FormKind};

/// Prints one form as PTC-Lisp text.
///
/// ```
/// let forms = ptc_lisp_syntax::parse_program("{:a [1 2.0 \"x\\n\"]}").unwrap();
/// assert_eq!(ptc_lisp_syntax::print_form(&forms[0]), "{:a [1 2.0 \"x\\n\"]}");
/// ```
pub fn print_form(form: &Form) -> String {
    let mut out = String::new();
    write_form(form, &mut out);
    out
}

/// Prints forms separated by newlines (no trailing newline).
pub fn print_program(forms: &[Form]) -> String {
    let mut out = String::new();
    for (i, form) in forms.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        write_form(form, &mut out);
    }
    out
}

/// Writes `s` as a PTC-Lisp string literal: quoted, with `\\ \" \n \t \r \b \f` escaped
/// and other control characters as `\uXXXX`, so the reader reads it back unchanged.
///
/// ```
/// let mut out = String::new();
/// ptc_lisp_syntax::write_string_literal("say \"hi\"\n", &mut out);
/// assert_eq!(out, r#""say \"hi\"\n""#);
/// ```
pub fn write_string_literal(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A float as the reader writes it: `1.0`, `1e20`, `-2.5e-7`, `##Inf`, `##-Inf`, `##NaN`.
pub(crate) fn float_text(x: f64) -> String {
    if x.is_nan() {
        "##NaN".into()
    } else if x == f64::INFINITY {
        "##Inf".into()
    } else if x == f64::NEG_INFINITY {
        "##-Inf".into()
    } else {
        // Debug is the shortest text that reads back to the same bits, and it always has
        // a '.' or an exponent.
        format!("{x:?}")
    }
}

fn write_form(form: &Form, out: &mut String) {
    match &form.kind {
        FormKind::Nil => out.push_str("nil"),
        FormKind::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        FormKind::Int(i) => out.push_str(&i.to_string()),
        FormKind::Float(x) => out.push_str(&float_text(*x)),
        FormKind::Str(s) => write_string_literal(s, out),
        FormKind::Char(c) => write_char(*c, out),
        FormKind::Keyword(k) => {
            out.push(':');
            out.push_str(k);
        }
        FormKind::Symbol { ns, name } => {
            if let Some(ns) = ns {
                out.push_str(ns);
                out.push('/');
            }
            out.push_str(name);
        }
        FormKind::List(items) => write_seq("(", items, ")", out),
        FormKind::Vector(items) => write_seq("[", items, "]", out),
        FormKind::Map(items) => write_seq("{", items, "}", out),
        FormKind::Set(items) => write_seq("#{", items, "}", out),
        FormKind::ShortFn(items) => write_seq("#(", items, ")", out),
        FormKind::Regex(pattern) => write_regex(pattern, out),
        FormKind::Var(name) => {
            out.push_str("#'");
            out.push_str(name);
        }
        FormKind::Quote(inner) => {
            out.push('\'');
            write_form(inner, out);
        }
    }
}

fn write_seq(open: &str, items: &[Form], close: &str, out: &mut String) {
    out.push_str(open);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_form(item, out);
    }
    out.push_str(close);
}

fn write_char(c: char, out: &mut String) {
    match c {
        '\n' => out.push_str("\\newline"),
        ' ' => out.push_str("\\space"),
        '\t' => out.push_str("\\tab"),
        '\r' => out.push_str("\\return"),
        '\u{8}' => out.push_str("\\backspace"),
        '\u{c}' => out.push_str("\\formfeed"),
        // Whitespace and control characters would not survive as `\c`.
        c if c.is_whitespace() || c.is_control() || c == '\u{FEFF}' => {
            out.push_str(&format!("\\u{:04x}", c as u32));
        }
        c => {
            out.push('\\');
            out.push(c);
        }
    }
}

/// The reader keeps a regex as written except `\"` -> `"`, so every backslash in the
/// pattern starts a pair; a bare `"` goes back to `\"`.
fn write_regex(pattern: &str, out: &mut String) {
    out.push_str("#\"");
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => match chars.next() {
                // Not something the reader produces; `\"` keeps its regex meaning (a quote).
                Some('"') => out.push_str("\\\""),
                Some(next) => {
                    out.push('\\');
                    out.push(next);
                }
                // Not something the reader produces either: a trailing lone backslash
                // becomes an escaped backslash so the literal stays closed.
                None => out.push_str("\\\\"),
            },
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Span;
    use crate::parse_program;

    fn f(kind: FormKind) -> Form {
        Form::new(kind, Span::default())
    }

    fn p(kind: FormKind) -> String {
        print_form(&f(kind))
    }

    #[test]
    fn atoms() {
        assert_eq!(p(FormKind::Nil), "nil");
        assert_eq!(p(FormKind::Bool(true)), "true");
        assert_eq!(p(FormKind::Bool(false)), "false");
        assert_eq!(p(FormKind::Int(i64::MIN)), "-9223372036854775808");
        assert_eq!(p(FormKind::Keyword("user-id".into())), ":user-id");
        assert_eq!(p(FormKind::Symbol { ns: None, name: "/".into() }), "/");
        assert_eq!(p(FormKind::Symbol { ns: Some("str".into()), name: "join".into() }), "str/join");
        assert_eq!(p(FormKind::Var("f".into())), "#'f");
        assert_eq!(p(FormKind::Quote(Box::new(f(FormKind::Symbol { ns: None, name: "x".into() })))), "'x");
    }

    #[test]
    fn floats_always_read_back_as_floats() {
        assert_eq!(p(FormKind::Float(1.0)), "1.0");
        assert_eq!(p(FormKind::Float(-0.0)), "-0.0");
        assert_eq!(p(FormKind::Float(1e20)), "1e20");
        assert_eq!(p(FormKind::Float(2.5e-7)), "2.5e-7");
        assert_eq!(p(FormKind::Float(f64::INFINITY)), "##Inf");
        assert_eq!(p(FormKind::Float(f64::NEG_INFINITY)), "##-Inf");
        assert_eq!(p(FormKind::Float(f64::NAN)), "##NaN");
        for x in [1.0, 1e20, 2.5e-7, f64::MIN_POSITIVE, 5e-324, f64::MAX, 0.1 + 0.2] {
            let forms = parse_program(&float_text(x)).unwrap();
            assert_eq!(forms[0].kind, FormKind::Float(x), "{x}");
        }
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(p(FormKind::Str("a\"b\\c\n\t\r\u{8}\u{c}\u{1}λ".into())), r#""a\"b\\c\n\t\r\b\f\u0001λ""#);
    }

    #[test]
    fn chars_use_names_where_needed() {
        assert_eq!(p(FormKind::Char('a')), "\\a");
        assert_eq!(p(FormKind::Char('\n')), "\\newline");
        assert_eq!(p(FormKind::Char(' ')), "\\space");
        assert_eq!(p(FormKind::Char('\t')), "\\tab");
        assert_eq!(p(FormKind::Char('\r')), "\\return");
        assert_eq!(p(FormKind::Char('\u{8}')), "\\backspace");
        assert_eq!(p(FormKind::Char('\u{c}')), "\\formfeed");
        assert_eq!(p(FormKind::Char('\u{a0}')), "\\u00a0");
        assert_eq!(p(FormKind::Char('\u{0}')), "\\u0000");
        assert_eq!(p(FormKind::Char('(')), "\\(");
    }

    #[test]
    fn collections() {
        let one = f(FormKind::Int(1));
        assert_eq!(p(FormKind::List(vec![])), "()");
        assert_eq!(p(FormKind::Vector(vec![one.clone(), one.clone()])), "[1 1]");
        assert_eq!(p(FormKind::Map(vec![f(FormKind::Keyword("a".into())), one.clone()])), "{:a 1}");
        assert_eq!(p(FormKind::Set(vec![one.clone()])), "#{1}");
        assert_eq!(p(FormKind::ShortFn(vec![one])), "#(1)");
    }

    #[test]
    fn regexes_escape_quotes_back() {
        assert_eq!(p(FormKind::Regex(r#"\d+"x\\"#.into())), r#"#"\d+\"x\\""#);
        assert_eq!(p(FormKind::Regex("a\\".into())), r#"#"a\\""#);
    }

    #[test]
    fn program_is_one_form_per_line() {
        let forms = parse_program("(a)   [b]\n\n c").unwrap();
        assert_eq!(print_program(&forms), "(a)\n[b]\nc");
        assert_eq!(print_program(&[]), "");
    }
}
