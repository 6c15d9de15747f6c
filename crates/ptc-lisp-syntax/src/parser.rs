//! Tokens to forms: delimiter matching, quoting and the nesting limit.
//!
//! The parser keeps the open collections on an explicit stack instead of recursing, so
//! its own stack use is constant whatever the input (100,000 `(` cannot overflow it), and
//! every open delimiter's location is at hand for "opened at ... closed by ..." messages.
//! [`ParseOptions::max_depth`] bounds that stack, and with it the depth of every form
//! handed out, which is what keeps later recursive walks (printing, evaluation, drop) safe.

use crate::ParseOptions;
use crate::ast::{Form, FormKind, Span};
use crate::error::ParseError;
use crate::lexer::{Spanned, Token, Tokens};
use crate::printer::print_form;

/// The collection kinds, by their opening delimiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Delim {
    List,
    Vector,
    Map,
    Set,
    ShortFn,
}

impl Delim {
    fn opener(self) -> &'static str {
        match self {
            Delim::List => "(",
            Delim::Vector => "[",
            Delim::Map => "{",
            Delim::Set => "#{",
            Delim::ShortFn => "#(",
        }
    }

    fn closer(self) -> char {
        match self {
            Delim::List | Delim::ShortFn => ')',
            Delim::Vector => ']',
            Delim::Map | Delim::Set => '}',
        }
    }

    fn name(self) -> &'static str {
        match self {
            Delim::List => "list",
            Delim::Vector => "vector",
            Delim::Map => "map",
            Delim::Set => "set",
            Delim::ShortFn => "short function",
        }
    }
}

/// A collection being read: what opened it, where, and the forms read so far.
struct Open {
    delim: Delim,
    span: Span,
    items: Vec<Form>,
    /// `#_`, `^` and `'` read at this level and still waiting for the form they apply to.
    skips: Vec<Skip>,
}

/// A reader prefix waiting for forms: `#_` drops the next complete form; `^` drops the
/// next one as metadata and then waits, without dropping, for the form it annotates; `'`
/// quotes the next one (whatever it is: `''a`, `'42` and `'(1 2)` read as in Clojure).
#[derive(Debug, Clone, Copy)]
struct Skip {
    span: Span,
    kind: SkipKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SkipKind {
    /// `#_`: drop the next form.
    Discard,
    /// `^`: the next form is the metadata, dropped.
    Metadata,
    /// `^meta`: the next form is the annotated one, kept.
    Annotated,
    /// `'`: the next form is quoted.
    Quote,
}

impl Skip {
    fn dangling(self, found: &str) -> ParseError {
        let what = match self.kind {
            SkipKind::Discard => "#_ must be followed by the form it discards",
            SkipKind::Metadata => {
                "^ must be followed by metadata (like ^:private, ^String or ^{:doc \"...\"}) and then the form it annotates"
            }
            SkipKind::Annotated => "metadata (^...) must be followed by the form it annotates",
            SkipKind::Quote => "the quote ' must be followed by the form it quotes, like 'github or '(1 2)",
        };
        ParseError::at(
            self.span,
            format!("{what}; found {found} after it at line {}, column {}", self.span.line, self.span.column),
        )
    }
}

/// Reads all top-level forms of `src`.
pub(crate) fn parse(src: &str, opts: &ParseOptions) -> Result<Vec<Form>, ParseError> {
    let mut tokens = Tokens::new(src);
    let mut stack: Vec<Open> = Vec::new();
    let mut top = Vec::new();
    let mut top_skips: Vec<Skip> = Vec::new();
    while let Some(Spanned { token, span }) = tokens.next_token()? {
        let kind = match token {
            Token::Discard | Token::Meta | Token::Quote => {
                let kind = match token {
                    Token::Meta => SkipKind::Metadata,
                    Token::Quote => SkipKind::Quote,
                    _ => SkipKind::Discard,
                };
                let depth = stack.len();
                let skips = match stack.last_mut() {
                    Some(open) => &mut open.skips,
                    None => &mut top_skips,
                };
                // each quote nests the form it quotes one level deeper: the depth limit
                // bounds a run of them as it bounds brackets
                if kind == SkipKind::Quote
                    && depth + skips.iter().filter(|s| s.kind == SkipKind::Quote).count() > opts.max_depth
                {
                    return Err(ParseError::at(
                        span,
                        format!(
                            "quotes nested deeper than {} levels at line {}, column {}; quote the value once",
                            opts.max_depth, span.line, span.column
                        ),
                    ));
                }
                skips.push(Skip { span, kind });
                None
            }
            Token::OpenList => open(&mut stack, Delim::List, span, opts)?,
            Token::OpenVector => open(&mut stack, Delim::Vector, span, opts)?,
            Token::OpenMap => open(&mut stack, Delim::Map, span, opts)?,
            Token::OpenSet => open(&mut stack, Delim::Set, span, opts)?,
            Token::OpenShortFn => open(&mut stack, Delim::ShortFn, span, opts)?,
            Token::CloseParen => close(&mut stack, ')', span)?,
            Token::CloseBracket => close(&mut stack, ']', span)?,
            Token::CloseBrace => close(&mut stack, '}', span)?,
            Token::VarQuote => Some(var(&mut tokens, span)?),
            Token::Nil => Some(Form::new(FormKind::Nil, span)),
            Token::Bool(b) => Some(Form::new(FormKind::Bool(b), span)),
            Token::Int(i) => Some(Form::new(FormKind::Int(i), span)),
            Token::Ratio((n, d)) => Some(Form::new(FormKind::Float(n as f64 / d as f64), span)),
            Token::Float(x) => Some(Form::new(FormKind::Float(x), span)),
            Token::Str(s) => Some(Form::new(FormKind::Str(s), span)),
            Token::Regex(r) => Some(Form::new(FormKind::Regex(r), span)),
            Token::Char(c) => Some(Form::new(FormKind::Char(c), span)),
            Token::Keyword(k) => Some(Form::new(FormKind::Keyword(k), span)),
            Token::Symbol((ns, name)) => Some(Form::new(FormKind::Symbol { ns, name }, span)),
            // Their lexer callbacks always fail, so these never arrive; refuse politely anyway.
            Token::Malformed | Token::Rejected => {
                return Err(ParseError::at(
                    span,
                    format!("unreadable text {} at line {}, column {}", tokens.text(span), span.line, span.column),
                ));
            }
        };
        if let Some(form) = kind {
            push(&mut stack, &mut top, &mut top_skips, form)?;
        }
    }
    match (stack.last(), top_skips.last()) {
        (Some(innermost), _) => Err(unclosed(innermost, &stack)),
        (None, Some(skip)) => Err(skip.dangling("the end of the program")),
        (None, None) => Ok(top),
    }
}

/// Adds a finished form to the innermost open collection, or to the top level, unless a
/// pending `#_` or `^` there drops it; a pending `'` quotes it first.
fn push(stack: &mut [Open], top: &mut Vec<Form>, top_skips: &mut Vec<Skip>, mut form: Form) -> Result<(), ParseError> {
    let (items, skips) = match stack.last_mut() {
        Some(open) => (&mut open.items, &mut open.skips),
        None => (top, top_skips),
    };
    loop {
        match skips.pop() {
            None => break items.push(form),
            Some(Skip { kind: SkipKind::Discard, .. }) => break,
            Some(Skip { span, kind: SkipKind::Metadata }) => {
                break skips.push(Skip { span, kind: SkipKind::Annotated });
            }
            // The annotated form itself: it is kept, and may also be what an outer prefix waits for.
            Some(Skip { kind: SkipKind::Annotated, .. }) => {}
            // The quoted form: kept, and what an outer prefix waits for (`''a`, `#_'a`).
            Some(Skip { span, kind: SkipKind::Quote }) => {
                if let FormKind::ShortFn(_) = form.kind {
                    return Err(ParseError::at(
                        span,
                        format!(
                            "a #() function cannot be quoted; write the function without the ' (line {}, column {})",
                            span.line, span.column
                        ),
                    ));
                }
                let whole = joined(span, form.span);
                form = Form::new(FormKind::Quote(Box::new(form)), whole);
            }
        }
    }
    Ok(())
}

/// Starts a collection. Returns `None`: the form only exists once it is closed.
fn open(stack: &mut Vec<Open>, delim: Delim, span: Span, opts: &ParseOptions) -> Result<Option<Form>, ParseError> {
    if stack.len() >= opts.max_depth {
        return Err(ParseError::at(
            span,
            format!(
                "forms nested deeper than {} levels at line {}, column {}; flatten the program (bind intermediate results with let)",
                opts.max_depth, span.line, span.column
            ),
        ));
    }
    if delim == Delim::ShortFn
        && let Some(outer) = stack.iter().find(|o| o.delim == Delim::ShortFn)
    {
        return Err(ParseError::at(
            span,
            format!(
                "nested #() short functions are not allowed (the '#(' at line {}, column {} is inside the '#(' at line {}, column {}); use (fn [x] ...) for the inner one",
                span.line, span.column, outer.span.line, outer.span.column
            ),
        ));
    }
    stack.push(Open { delim, span, items: Vec::new(), skips: Vec::new() });
    Ok(None)
}

/// Closes the innermost collection with `closer`, checking it is the right delimiter.
/// Returns the finished form.
fn close(stack: &mut Vec<Open>, closer: char, span: Span) -> Result<Option<Form>, ParseError> {
    let Some(open) = stack.pop() else {
        let opener = match closer {
            ')' => '(',
            ']' => '[',
            _ => '{',
        };
        return Err(ParseError::at(
            span,
            format!(
                "unexpected '{closer}' at line {}, column {}: there is no open '{opener}' to close",
                span.line, span.column
            ),
        ));
    };
    if open.delim.closer() != closer {
        return Err(ParseError::at(
            span,
            format!(
                "mismatched delimiter: '{}' opened at line {}, column {} is closed by '{closer}' at line {}, column {}; use '{}'",
                open.delim.opener(),
                open.span.line,
                open.span.column,
                span.line,
                span.column,
                open.delim.closer()
            ),
        ));
    }
    if let Some(skip) = open.skips.last() {
        return Err(skip.dangling(&format!("'{closer}'")));
    }
    let whole = Span { start: open.span.start, end: span.end, line: open.span.line, column: open.span.column };
    let items = open.items;
    let kind = match open.delim {
        Delim::List => FormKind::List(items),
        Delim::Vector => FormKind::Vector(items),
        Delim::Set => FormKind::Set(items),
        Delim::ShortFn => FormKind::ShortFn(items),
        Delim::Map if items.len() % 2 == 1 => {
            let last = items.last().map(|f| brief(&print_form(f))).unwrap_or_default();
            return Err(ParseError::at(
                open.span,
                format!(
                    "map literal needs an even number of forms (key value pairs); found {} at line {}, column {}; the last key {last} has no value",
                    items.len(),
                    open.span.line,
                    open.span.column
                ),
            ));
        }
        Delim::Map => FormKind::Map(items),
    };
    Ok(Some(Form::new(kind, whole)))
}

/// The error for collections still open at the end of input. It points at the innermost
/// one and, when several are open, counts them and spells out the missing closers.
fn unclosed(innermost: &Open, stack: &[Open]) -> ParseError {
    let d = innermost.delim;
    let mut message = format!(
        "unclosed {}: '{}' opened at line {}, column {} was never closed; add '{}'",
        d.name(),
        d.opener(),
        innermost.span.line,
        innermost.span.column,
        d.closer()
    );
    if stack.len() > 1 {
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for open in stack {
            match counts.iter_mut().find(|(o, _)| *o == open.delim.opener()) {
                Some((_, n)) => *n += 1,
                None => counts.push((open.delim.opener(), 1)),
            }
        }
        let counts: Vec<String> = counts.iter().map(|(o, n)| format!("{n} unclosed '{o}'")).collect();
        message.push_str(&format!(" (unbalanced parentheses: {}", counts.join(" and ")));
        if stack.len() <= 20 {
            let closers: String = stack.iter().rev().map(|o| o.delim.closer()).collect();
            message.push_str(&format!("; closing them all at the end takes '{closers}'"));
        }
        message.push(')');
    }
    ParseError::at(innermost.span, message)
}

/// After `#'`: a symbol names the var.
fn var(tokens: &mut Tokens<'_>, hash_quote: Span) -> Result<Form, ParseError> {
    match tokens.next_token()? {
        Some(Spanned { token: Token::Symbol((ns, name)), span }) => {
            let name = match ns {
                Some(ns) => format!("{ns}/{name}"),
                None => name,
            };
            Ok(Form::new(FormKind::Var(name), joined(hash_quote, span)))
        }
        _ => Err(ParseError::at(
            hash_quote,
            format!(
                "#' at line {}, column {} must be followed by a symbol naming a var, like #'my-fn",
                hash_quote.line, hash_quote.column
            ),
        )),
    }
}

/// A span from the start of `first` to the end of `last`.
fn joined(first: Span, last: Span) -> Span {
    Span { end: last.end, ..first }
}

/// `text` cut to a length that reads well inside a message.
fn brief(text: &str) -> String {
    const MAX: usize = 40;
    if text.chars().count() <= MAX {
        text.to_string()
    } else {
        let cut: String = text.chars().take(MAX).collect();
        format!("{cut}...")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_program, parse_program_with};

    fn kinds(src: &str) -> Vec<FormKind> {
        match parse_program(src) {
            Ok(forms) => forms.into_iter().map(|f| strip(f).kind).collect(),
            Err(e) => panic!("{src:?}: {}", e.message),
        }
    }

    /// The form with all spans zeroed, so kinds compare structurally.
    fn strip(form: Form) -> Form {
        let kind = match form.kind {
            FormKind::List(v) => FormKind::List(v.into_iter().map(strip).collect()),
            FormKind::Vector(v) => FormKind::Vector(v.into_iter().map(strip).collect()),
            FormKind::Map(v) => FormKind::Map(v.into_iter().map(strip).collect()),
            FormKind::Set(v) => FormKind::Set(v.into_iter().map(strip).collect()),
            FormKind::ShortFn(v) => FormKind::ShortFn(v.into_iter().map(strip).collect()),
            FormKind::Quote(f) => FormKind::Quote(Box::new(strip(*f))),
            other => other,
        };
        Form::new(kind, Span::default())
    }

    fn f(kind: FormKind) -> Form {
        Form::new(kind, Span::default())
    }

    fn sym(name: &str) -> Form {
        f(FormKind::Symbol { ns: None, name: name.into() })
    }

    fn int(i: i64) -> Form {
        f(FormKind::Int(i))
    }

    fn message(src: &str) -> String {
        match parse_program(src) {
            Err(e) => e.message,
            Ok(forms) => panic!("{src:?} should not parse, got {forms:?}"),
        }
    }

    #[test]
    fn empty_input_and_comments_give_no_forms() {
        assert_eq!(kinds(""), vec![]);
        assert_eq!(kinds("  ,,\n ; nothing\n"), vec![]);
    }

    #[test]
    fn collections() {
        assert_eq!(kinds("(+ 1 2)"), vec![FormKind::List(vec![sym("+"), int(1), int(2)])]);
        assert_eq!(kinds("[]"), vec![FormKind::Vector(vec![])]);
        assert_eq!(kinds("{:a 1}"), vec![FormKind::Map(vec![f(FormKind::Keyword("a".into())), int(1)])]);
        assert_eq!(kinds("#{1}"), vec![FormKind::Set(vec![int(1)])]);
        assert_eq!(kinds("#(+ % 1)"), vec![FormKind::ShortFn(vec![sym("+"), sym("%"), int(1)])]);
        assert_eq!(kinds("(a,b)"), vec![FormKind::List(vec![sym("a"), sym("b")])]);
        assert_eq!(kinds("[(#{})]"), vec![FormKind::Vector(vec![f(FormKind::List(vec![f(FormKind::Set(vec![]))]))])]);
    }

    #[test]
    fn several_top_level_forms() {
        assert_eq!(kinds("1 2\n3"), vec![FormKind::Int(1), FormKind::Int(2), FormKind::Int(3)]);
    }

    #[test]
    fn quoted_collections() {
        let q = |k: FormKind| FormKind::Quote(Box::new(f(k)));
        assert_eq!(kinds("'(1 a)"), vec![q(FormKind::List(vec![f(FormKind::Int(1)), sym("a")]))]);
        assert_eq!(kinds("'[a]"), vec![q(FormKind::Vector(vec![sym("a")]))]);
        assert_eq!(
            kinds("'{:a 1}"),
            vec![q(FormKind::Map(vec![f(FormKind::Keyword("a".into())), f(FormKind::Int(1))]))]
        );
        assert_eq!(kinds("'#{}"), vec![q(FormKind::Set(vec![]))]);
        assert_eq!(kinds("['(1)]"), vec![FormKind::Vector(vec![f(q(FormKind::List(vec![f(FormKind::Int(1))])))])]);
    }

    #[test]
    fn quote_and_var() {
        assert_eq!(kinds("'github"), vec![FormKind::Quote(Box::new(sym("github")))]);
        assert_eq!(
            kinds("'ns/sym"),
            vec![FormKind::Quote(Box::new(f(FormKind::Symbol { ns: Some("ns".into()), name: "sym".into() })))]
        );
        assert_eq!(kinds("' x"), vec![FormKind::Quote(Box::new(sym("x")))]);
        assert_eq!(kinds("#'my-fn"), vec![FormKind::Var("my-fn".into())]);
        assert_eq!(kinds("#'clojure.core/map"), vec![FormKind::Var("clojure.core/map".into())]);
        assert_eq!(kinds("(quote x)"), vec![FormKind::List(vec![sym("quote"), sym("x")])]);
    }

    #[test]
    fn runs_of_quotes_are_bounded_by_the_depth_limit() {
        let opts = ParseOptions { max_depth: 2 };
        assert!(parse_program_with("'''a", &opts).is_ok());
        let e = parse_program_with("''''a", &opts).unwrap_err();
        assert!(e.message.starts_with("quotes nested deeper than 2 levels at line 1, column 4"), "{}", e.message);
        assert!(parse_program_with("['[a]]", &opts).is_ok());
        assert!(parse_program_with("[''a]", &opts).is_ok());
        assert!(parse_program_with("['''a]", &opts).unwrap_err().message.starts_with("quotes nested deeper"));
        // a long run fails cleanly with the default limit (no deep form is built)
        let long = format!("{}a", "'".repeat(100_000));
        assert!(parse_program(&long).is_err());
    }

    #[test]
    fn quote_applies_to_any_next_form() {
        let q = |k: FormKind| FormKind::Quote(Box::new(f(k)));
        let a = || FormKind::Symbol { ns: None, name: "a".into() };
        // nested quotes, and literals, which quote to themselves once evaluated
        assert_eq!(kinds("''a"), vec![q(q(a()))]);
        assert_eq!(kinds("'''a"), vec![q(q(q(a())))]);
        assert_eq!(kinds("'42"), vec![q(FormKind::Int(42))]);
        assert_eq!(kinds("'nil"), vec![q(FormKind::Nil)]);
        assert_eq!(kinds("'\"s\""), vec![q(FormKind::Str("s".into()))]);
        assert_eq!(kinds("':k"), vec![q(FormKind::Keyword("k".into()))]);
        assert_eq!(kinds("'[1 'a]"), vec![q(FormKind::Vector(vec![int(1), f(q(a()))]))]);
        // with the other prefixes, in either order
        assert_eq!(kinds("'#_ b a"), vec![q(a())]);
        assert_eq!(kinds("#_ 'b a"), vec![a()]);
        assert_eq!(kinds("'^:m a"), vec![q(a())]);
        assert_eq!(kinds("^:m 'a"), vec![q(a())]);
        // the span runs from the first quote to the end of the form
        let forms = parse_program(" ''(a)").unwrap();
        assert_eq!(forms[0].span, Span { start: 1, end: 6, line: 1, column: 2 });
    }

    #[test]
    fn quote_errors() {
        assert!(message("'#(x)").starts_with("a #() function cannot be quoted"));
        assert!(message("''#(x)").starts_with("a #() function cannot be quoted"));
        assert!(message("'").starts_with("the quote ' must be followed by the form it quotes"));
        assert!(message("(')").contains("found ')' after it"));
        assert!(message("''").contains("found the end of the program"));
        assert!(message("#'1").contains("#' at line 1, column 1 must be followed by a symbol"));
    }

    #[test]
    fn spans_cover_collections_from_opener_to_closer() {
        let forms = parse_program("x\n  (a [b]\n c)").unwrap();
        assert_eq!(forms[1].span, Span { start: 4, end: 14, line: 2, column: 3 });
        let FormKind::List(items) = &forms[1].kind else { panic!("not a list") };
        assert_eq!(items[1].span, Span { start: 7, end: 10, line: 2, column: 6 });
        let quoted = parse_program(" 'ab").unwrap();
        assert_eq!(quoted[0].span, Span { start: 1, end: 4, line: 1, column: 2 });
    }

    #[test]
    fn delimiter_errors_name_both_ends() {
        assert_eq!(message("(+ 1 2"), "unclosed list: '(' opened at line 1, column 1 was never closed; add ')'");
        assert_eq!(
            message("(let [x 1"),
            "unclosed vector: '[' opened at line 1, column 6 was never closed; add ']' (unbalanced parentheses: 1 unclosed '(' and 1 unclosed '['; closing them all at the end takes '])')"
        );
        assert_eq!(message("a\n(b))"), "unexpected ')' at line 2, column 4: there is no open '(' to close");
        assert_eq!(
            message("(a [b)"),
            "mismatched delimiter: '[' opened at line 1, column 4 is closed by ')' at line 1, column 6; use ']'"
        );
        assert!(message("#{1").starts_with("unclosed set: '#{'"));
        assert!(message("#(a").starts_with("unclosed short function: '#('"));
        assert!(message("{").starts_with("unclosed map: '{'"));
    }

    #[test]
    fn map_needs_pairs() {
        assert_eq!(
            message("{:a 1 :b}"),
            "map literal needs an even number of forms (key value pairs); found 3 at line 1, column 1; the last key :b has no value"
        );
    }

    #[test]
    fn nested_short_functions_are_refused() {
        let e = parse_program("#(map #(inc %) %)").unwrap_err();
        assert_eq!((e.line, e.column), (1, 7));
        assert!(e.message.starts_with("nested #() short functions are not allowed"));
        // Siblings are fine.
        assert!(parse_program("[#(inc %) #(dec %)]").is_ok());
    }

    #[test]
    fn depth_limit_fires_exactly_past_max_depth() {
        let opts = ParseOptions { max_depth: 3 };
        assert!(parse_program_with("[[[1]]]", &opts).is_ok());
        let e = parse_program_with("[[[[1]]]]", &opts).unwrap_err();
        assert_eq!(
            e.message,
            "forms nested deeper than 3 levels at line 1, column 4; flatten the program (bind intermediate results with let)"
        );
        assert!(parse_program_with("1", &ParseOptions { max_depth: 0 }).is_ok());
        assert!(parse_program_with("()", &ParseOptions { max_depth: 0 }).is_err());
    }

    #[test]
    fn deep_nesting_without_a_limit_does_not_recurse() {
        let src = "(".repeat(100_000);
        let e = parse_program_with(&src, &ParseOptions { max_depth: usize::MAX }).unwrap_err();
        assert!(e.message.starts_with("unclosed list: '(' opened at line 1, column 100000"), "{}", e.message);
        assert!(e.message.contains("100000 unclosed '('"));
        assert!(!e.message.contains("closing them all"));
    }

    /// Reads `src` and `want` and compares them with spans ignored.
    fn reads_like(src: &str, want: &str) {
        let (a, b) = (kinds(src), kinds(want));
        assert_eq!(a, b, "{src:?} should read like {want:?}");
    }

    #[test]
    fn discard_drops_the_next_form_at_any_level() {
        reads_like("#_(foo bar) 1", "1");
        reads_like("[1 #_2 3]", "[1 3]");
        reads_like("[1 #_ #_ 2 3 4]", "[1 4]");
        reads_like("#_ #_ a b c", "c");
        reads_like("(f #_(g #_h i) j)", "(f j)");
        reads_like("{:a 1 #_:b #_2}", "{:a 1}");
        reads_like("#_ ^:private x y", "y");
        reads_like("#_'(1 2) 3", "3");
    }

    #[test]
    fn metadata_is_read_and_dropped() {
        reads_like("(defn ^:private f [x] x)", "(defn f [x] x)");
        reads_like("(def ^{:doc \"d\" :added 1} x 1)", "(def x 1)");
        reads_like("(defn f [^String s ^long n] s)", "(defn f [s n] s)");
        reads_like("^:a ^:b [1]", "[1]");
        reads_like("^:a #_ x y", "y");
        reads_like("[^:a ^{:b 1} x z]", "[x z]");
    }

    #[test]
    fn ratios_read_as_the_float_division_gives() {
        assert_eq!(kinds("1/4"), vec![FormKind::Float(0.25)]);
        assert_eq!(kinds("-3/4"), vec![FormKind::Float(-0.75)]);
        assert_eq!(kinds("4/2"), vec![FormKind::Float(2.0)]);
        assert_eq!(kinds("1/3"), vec![FormKind::Float(1.0 / 3.0)]);
    }

    #[test]
    fn namespaced_keywords_dollar_symbols_and_the_empty_list() {
        assert_eq!(kinds(":order/paid"), vec![FormKind::Keyword("order/paid".into())]);
        assert_eq!(kinds("::x"), vec![FormKind::Keyword("user/x".into())]);
        assert_eq!(kinds("(as-> 1 $ (inc $))")[0], {
            let s = |n: &str| f(FormKind::Symbol { ns: None, name: n.into() });
            FormKind::List(vec![s("as->"), int(1), s("$"), f(FormKind::List(vec![s("inc"), s("$")]))])
        });
        assert_eq!(kinds("()"), vec![FormKind::List(vec![])]);
        assert_eq!(kinds("'()"), vec![FormKind::Quote(Box::new(f(FormKind::List(vec![]))))]);
    }
}
