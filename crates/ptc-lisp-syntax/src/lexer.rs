//! Tokens: a `logos` state machine over the source text, plus line/column tracking.
//!
//! Everything that is a single token is decided here, including the rejections that need
//! no context (`#_`, `@x`, ratios, namespaced keywords, bad escapes...). What depends on
//! neighbouring tokens (delimiter balance, quoting, nesting) is the parser's business.
//!
//! Tokenisation is longest-match: an "atom" is a maximal run of constituent characters
//! (anything but whitespace, commas, a byte-order mark, brackets, and `"` `;` `@` `^` `~`
//! `\` or a backtick). Well-formed numbers, keywords and
//! symbols have their own patterns; any other run is matched by the low-priority
//! [`Token::Malformed`] pattern, whose callback explains what is wrong with it. So `1abc`
//! is one bad number, never `1` followed by `abc`.

use std::ops::Range;

use logos::Logos;

use crate::ast::Span;
use crate::error::{LexError, ParseError};
use crate::literals;

/// One token. Variants whose pattern only exists to reject syntax never come out of the
/// lexer: their callbacks always fail with an explanation.
#[derive(Logos, Debug, Clone, PartialEq)]
#[logos(error(LexError, unexpected_char))]
#[logos(skip r"[\s,\u{FEFF}]+")]
#[logos(skip(r";[^\n]*", allow_greedy = true))]
#[logos(subpattern constituent = r#"[^\s,\u{FEFF}()\[\]{}";@^`~\\]"#)]
#[logos(subpattern sym_start = r"[\p{L}*/<>=?!_%.&$]")]
#[logos(subpattern sym_rest = r"[\p{L}0-9*/<>=?!_%.&$+\-'#]")]
#[logos(subpattern sym_rest_nondigit = r"[\p{L}*/<>=?!_%.&$+\-'#]")]
#[logos(subpattern kw_char = r"[\p{L}0-9+\-*<>=?!_.'&%$]")]
pub(crate) enum Token {
    /// `(`
    #[token("(")]
    OpenList,
    /// `[`
    #[token("[")]
    OpenVector,
    /// `{`
    #[token("{")]
    OpenMap,
    /// `#{`
    #[token("#{")]
    OpenSet,
    /// `#(`
    #[token("#(")]
    OpenShortFn,
    /// `)`
    #[token(")")]
    CloseParen,
    /// `]`
    #[token("]")]
    CloseBracket,
    /// `}`
    #[token("}")]
    CloseBrace,
    /// `'` (the parser checks that a symbol follows).
    #[token("'")]
    Quote,
    /// `#'` (the parser checks that a symbol follows).
    #[token("#'")]
    VarQuote,
    /// `nil`
    #[token("nil")]
    Nil,
    /// `true` / `false`
    #[token("true", |_| true)]
    #[token("false", |_| false)]
    Bool(bool),
    /// A decimal integer that fits in 64 bits.
    #[regex(r"[+\-]?[0-9]+", literals::int, priority = 5)]
    Int(i64),
    /// A float (`1.5`, `1e3`, `-2.0e+10`) or `##Inf`, `##-Inf`, `##NaN`.
    #[regex(r"[+\-]?[0-9]+(\.[0-9]+([eE][+\-]?[0-9]+)?|[eE][+\-]?[0-9]+)", literals::float, priority = 5)]
    #[regex(r"##(?&constituent)*", literals::symbolic_value)]
    Float(f64),
    /// A string literal, escapes decoded.
    #[token("\"", literals::string)]
    Str(String),
    /// A regex literal's source text (only `\"` unescaped).
    #[token("#\"", literals::regex)]
    Regex(String),
    /// A character literal.
    #[regex(r"\\[^\s](?&constituent)*", literals::char_literal, priority = 5)]
    #[token("\\", literals::lone_backslash)]
    Char(char),
    /// A keyword, without its colon: `:name`, `:ns/name`, or `::name` (read as `:user/name`,
    /// the namespace every program runs in).
    #[regex(r":(?&kw_char)+(/(?&kw_char)+)?", literals::keyword, priority = 5)]
    #[regex(r"::(?&kw_char)+", literals::auto_keyword, priority = 5)]
    Keyword(String),
    /// A ratio literal `n/d`, as numerator and denominator (the parser turns it into the
    /// number `(/ n d)` gives).
    #[regex(r"[+\-]?[0-9]+/[0-9]+", literals::ratio, priority = 5)]
    Ratio((i64, i64)),
    /// A symbol: optional namespace and name.
    #[regex(
        r"(?&sym_start)(?&sym_rest)*|[+\-]|[+\-](?&sym_rest_nondigit)(?&sym_rest)*",
        literals::symbol,
        priority = 5
    )]
    Symbol((Option<String>, String)),
    /// Any other run of constituent characters; the callback always fails with a diagnosis.
    #[regex(r#"[^\s,\u{FEFF}()\[\]{}";@^`~\\'#](?&constituent)*"#, literals::malformed, priority = 1)]
    Malformed,
    /// `#_`: the next form is read and dropped.
    #[token("#_")]
    Discard,
    /// `^`: the next form is metadata (read and dropped); the form after it is kept.
    #[token("^")]
    Meta,
    /// Reader syntax PTC-Lisp rejects outright; the callbacks always fail.
    #[token("@", literals::deref)]
    #[token("`", literals::syntax_quote)]
    #[token("~", literals::unquote)]
    #[token("~@", literals::unquote)]
    #[token("#", literals::unknown_dispatch)]
    Rejected,
}

/// Logos' fallback for input no pattern matches. Every character starts some pattern,
/// so this is a safety net rather than a path real input takes.
fn unexpected_char(lex: &mut logos::Lexer<'_, Token>) -> LexError {
    let what = lex.slice().chars().next().map(|c| format!("'{c}'")).unwrap_or_else(|| "input".into());
    LexError::new(format!("unexpected character {what} at "), "")
}

/// A token with its location.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spanned {
    pub token: Token,
    pub span: Span,
}

/// The token stream the parser reads: logos tokens with line/column attached, and lexing
/// failures turned into located [`ParseError`]s.
pub(crate) struct Tokens<'src> {
    lexer: logos::Lexer<'src, Token>,
    locator: Locator<'src>,
}

impl<'src> Tokens<'src> {
    pub(crate) fn new(src: &'src str) -> Self {
        Tokens { lexer: Token::lexer(src), locator: Locator::new(src) }
    }

    /// The next token, `Ok(None)` at end of input.
    pub(crate) fn next_token(&mut self) -> Result<Option<Spanned>, ParseError> {
        let Some(result) = self.lexer.next() else {
            return Ok(None);
        };
        let range = self.lexer.span();
        match result {
            Ok(token) => Ok(Some(Spanned { token, span: self.locator.span(range) })),
            Err(e) => {
                let span = self.locator.span(e.range.unwrap_or(range));
                let message = format!("{}line {}, column {}{}", e.head, span.line, span.column, e.tail);
                Err(ParseError::at(span, message))
            }
        }
    }

    /// The source text of `span` (empty if the span is not inside the source).
    pub(crate) fn text(&self, span: Span) -> &'src str {
        self.locator.src.get(span.start as usize..span.end as usize).unwrap_or("")
    }
}

/// Converts byte offsets to 1-based line/column. Queries come in (almost always)
/// increasing order, so it walks forward from the previous answer: linear overall.
struct Locator<'src> {
    src: &'src str,
    offset: usize,
    line: u32,
    column: u32,
}

impl<'src> Locator<'src> {
    fn new(src: &'src str) -> Self {
        Locator { src, offset: 0, line: 1, column: 1 }
    }

    fn span(&mut self, range: Range<usize>) -> Span {
        let (line, column) = self.position(range.start);
        Span { start: to_u32(range.start), end: to_u32(range.end), line, column }
    }

    fn position(&mut self, offset: usize) -> (u32, u32) {
        if offset < self.offset {
            *self = Locator::new(self.src);
        }
        if let Some(chunk) = self.src.get(self.offset..offset) {
            for c in chunk.chars() {
                if c == '\n' {
                    self.line = self.line.saturating_add(1);
                    self.column = 1;
                } else {
                    self.column = self.column.saturating_add(1);
                }
            }
            self.offset = offset;
        }
        (self.line, self.column)
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// All tokens of `src`, or the first error's message.
    fn lex(src: &str) -> Result<Vec<Token>, String> {
        let mut tokens = Tokens::new(src);
        let mut out = Vec::new();
        loop {
            match tokens.next_token() {
                Ok(Some(t)) => out.push(t.token),
                Ok(None) => return Ok(out),
                Err(e) => return Err(e.message),
            }
        }
    }

    fn one(src: &str) -> Token {
        match lex(src) {
            Ok(tokens) if tokens.len() == 1 => tokens[0].clone(),
            other => panic!("{src:?} should be one token, got {other:?}"),
        }
    }

    fn sym(ns: Option<&str>, name: &str) -> Token {
        Token::Symbol((ns.map(String::from), name.to_string()))
    }

    fn err(src: &str) -> String {
        match lex(src) {
            Err(message) => message,
            Ok(tokens) => panic!("{src:?} should fail, lexed {tokens:?}"),
        }
    }

    #[test]
    fn delimiters_and_dispatch() {
        use Token::*;
        assert_eq!(
            lex("( ) [ ] { } #{ #( ' #'").unwrap(),
            vec![
                OpenList,
                CloseParen,
                OpenVector,
                CloseBracket,
                OpenMap,
                CloseBrace,
                OpenSet,
                OpenShortFn,
                Quote,
                VarQuote
            ]
        );
    }

    #[test]
    fn whitespace_commas_comments_and_crlf_are_skipped() {
        assert_eq!(lex(" ,\t\r\n;; comment (\n,1 ; two\r\n").unwrap(), vec![Token::Int(1)]);
        assert_eq!(lex("\u{FEFF}1").unwrap(), vec![Token::Int(1)]);
        assert_eq!(lex("").unwrap(), vec![]);
        assert_eq!(lex("; only").unwrap(), vec![]);
    }

    #[test]
    fn literals_nil_true_false_and_look_alikes() {
        assert_eq!(one("nil"), Token::Nil);
        assert_eq!(one("true"), Token::Bool(true));
        assert_eq!(one("false"), Token::Bool(false));
        assert_eq!(one("nil?"), sym(None, "nil?"));
        assert_eq!(one("truely"), sym(None, "truely"));
    }

    #[test]
    fn integers() {
        assert_eq!(one("42"), Token::Int(42));
        assert_eq!(one("-1"), Token::Int(-1));
        assert_eq!(one("+1"), Token::Int(1));
        assert_eq!(one("0"), Token::Int(0));
        assert_eq!(one("-0"), Token::Int(0));
        assert_eq!(one("9223372036854775807"), Token::Int(i64::MAX));
        assert_eq!(one("-9223372036854775808"), Token::Int(i64::MIN));
        assert!(err("9223372036854775808").contains("does not fit in 64 bits"));
        assert!(err("017").contains("leading zero"));
    }

    #[test]
    fn floats() {
        assert_eq!(one("1.5"), Token::Float(1.5));
        assert_eq!(one("-1.5"), Token::Float(-1.5));
        assert_eq!(one("1e3"), Token::Float(1000.0));
        assert_eq!(one("1.5E-4"), Token::Float(1.5e-4));
        assert_eq!(one("-2.0e+10"), Token::Float(-2.0e10));
        assert_eq!(one("##Inf"), Token::Float(f64::INFINITY));
        assert_eq!(one("##-Inf"), Token::Float(f64::NEG_INFINITY));
        assert!(matches!(one("##NaN"), Token::Float(x) if x.is_nan()));
        assert!(err("1e999").contains("too large"));
        assert!(err("##Foo").contains("##Inf, ##-Inf and ##NaN"));
    }

    #[test]
    fn strings_and_regexes() {
        assert_eq!(one(r#""a\"b\\c\n\t\r\b\f\u0041""#), Token::Str("a\"b\\c\n\t\r\u{8}\u{c}A".into()));
        assert_eq!(one("\"multi\nline λ\""), Token::Str("multi\nline λ".into()));
        assert_eq!(one(r#""\uD83D\uDE00""#), Token::Str("😀".into()));
        assert_eq!(one(r#"#"\d+\"x\\""#), Token::Regex(r#"\d+"x\\"#.into()));
        assert_eq!(lex(r#""a"b"#).unwrap(), vec![Token::Str("a".into()), sym(None, "b")]);
    }

    #[test]
    fn chars() {
        assert_eq!(one(r"\a"), Token::Char('a'));
        assert_eq!(one(r"\λ"), Token::Char('λ'));
        assert_eq!(one(r"\r"), Token::Char('r'));
        assert_eq!(one(r"\n"), Token::Char('n'));
        assert_eq!(one(r"\newline"), Token::Char('\n'));
        assert_eq!(one(r"\space"), Token::Char(' '));
        assert_eq!(one(r"\tab"), Token::Char('\t'));
        assert_eq!(one(r"\return"), Token::Char('\r'));
        assert_eq!(one(r"\backspace"), Token::Char('\u{8}'));
        assert_eq!(one(r"\formfeed"), Token::Char('\u{c}'));
        assert_eq!(one(r"\u00e9"), Token::Char('é'));
        assert_eq!(one(r"\("), Token::Char('('));
        assert_eq!(one(r"\\"), Token::Char('\\'));
        assert_eq!(one(r#"\""#), Token::Char('"'));
        assert_eq!(lex(r"\a)").unwrap(), vec![Token::Char('a'), Token::CloseParen]);
        assert_eq!(lex(r"\((").unwrap(), vec![Token::Char('('), Token::OpenList]);
        assert!(err(r"\foo").contains("unknown character literal \\foo"));
        assert!(err("\\").contains("backslash"));
        assert!(err("\\ a").contains("backslash"));
    }

    #[test]
    fn keywords() {
        assert_eq!(one(":user-id"), Token::Keyword("user-id".into()));
        assert_eq!(one(":a?"), Token::Keyword("a?".into()));
        assert_eq!(one(":1"), Token::Keyword("1".into()));
        assert_eq!(one(":a.b'&%"), Token::Keyword("a.b'&%".into()));
        assert!(err(":").contains("lone ':'"));
        assert_eq!(one(":order/paid"), Token::Keyword("order/paid".into()));
        assert_eq!(one(":a.b/c-d?"), Token::Keyword("a.b/c-d?".into()));
        assert_eq!(one("::x"), Token::Keyword("user/x".into()));
        assert_eq!(one(":$x"), Token::Keyword("$x".into()));
        assert!(err("::str/x").contains("write the namespace in full, like :str/x"));
        assert!(err(":a/b/c").contains("one '/' between a namespace and a name"));
        assert!(err(":a/").contains("one '/'"));
    }

    #[test]
    fn symbols() {
        for name in [
            "-", "+", "->", "->>", "-foo", "%", "%1", "%&", "*1", "*", "inc'", "+'", ".indexOf", "a#", "é", "<=", "&",
            "$", "$x", "a$b",
        ] {
            assert_eq!(one(name), sym(None, name), "{name}");
        }
        assert_eq!(one("/"), sym(None, "/"));
        assert_eq!(one("str/join"), sym(Some("str"), "join"));
        assert_eq!(one("clojure.string/join"), sym(Some("clojure.string"), "join"));
        assert_eq!(one("tool/search"), sym(Some("tool"), "search"));
        assert_eq!(one("Math/pow"), sym(Some("Math"), "pow"));
        assert_eq!(one("clojure.core//"), sym(Some("clojure.core"), "/"));
        assert_eq!(one("java.util.Date."), sym(None, "java.util.Date."));
        assert!(err("a:b").contains("':' is not allowed inside a symbol"));
        assert!(err("str/").contains("no name after '/'"));
        assert!(err("/x").contains("/x"));
        assert!(err(".5").contains("write 0.5"));
    }

    #[test]
    fn malformed_numbers_are_one_token() {
        assert!(err("1abc").contains("invalid number 1abc"));
        assert_eq!(one("1/2"), Token::Ratio((1, 2)));
        assert_eq!(one("-3/4"), Token::Ratio((-3, 4)));
        assert!(err("1/0").contains("divides by zero"));
        assert!(err("1/99999999999999999999").contains("does not fit in 64 bits"));
        assert!(err("1/2x").contains("1/2x"));
        assert!(err("1N").contains("BigInt"));
        assert!(err("1.0M").contains("BigDecimal"));
        assert!(err("0x1F").contains("hexadecimal"));
        assert!(err("2r1010").contains("radix"));
        assert!(err("1.").contains("1.0"));
    }

    #[test]
    fn rejected_reader_syntax() {
        assert_eq!(one("#_"), Token::Discard);
        assert_eq!(one("^"), Token::Meta);
        assert!(err("@x").contains("deref"));
        assert!(err("`x").contains("syntax quote"));
        assert!(err("~x").contains("unquote"));
        assert!(err("~@x").contains("unquote"));
        assert!(err("#foo").contains("#foo"));
        assert!(err("#").contains("'#'"));
    }

    #[test]
    fn spans_count_lines_and_characters() {
        let mut tokens = Tokens::new("λ\n  (x\r\n \"é\" y)");
        let mut spans = Vec::new();
        while let Some(t) = tokens.next_token().unwrap() {
            spans.push((t.span.line, t.span.column, t.span.start, t.span.end));
        }
        assert_eq!(
            spans,
            vec![(1, 1, 0, 2), (2, 3, 5, 6), (2, 4, 6, 7), (3, 2, 10, 14), (3, 6, 15, 16), (3, 7, 16, 17)]
        );
    }

    #[test]
    fn errors_inside_a_token_point_at_the_problem() {
        let mut tokens = Tokens::new("(x\n  \"ab\\qc\")");
        tokens.next_token().unwrap();
        tokens.next_token().unwrap();
        let e = tokens.next_token().unwrap_err();
        assert_eq!((e.line, e.column, e.span.start, e.span.end), (2, 6, 8, 10));
        assert!(e.message.contains("at line 2, column 6"), "{}", e.message);
    }
}
