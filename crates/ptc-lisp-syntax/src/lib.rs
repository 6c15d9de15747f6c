//! `ptc-lisp-syntax`: the PTC-Lisp reader. Text in, located [`Form`]s out.
//!
//! This crate knows nothing about evaluation: it does not resolve symbols or check special
//! forms. Any input string yields forms or a [`ParseError`] with a line, a column and a
//! message that says what to write instead; it never panics (property tests and a fuzz
//! target), and collection nesting is bounded ([`ParseOptions::max_depth`]) so hostile input
//! cannot exhaust the stack.
//!
//! ```
//! let forms = ptc_lisp_syntax::parse_program("(+ 1 2) [:a \\b]").unwrap();
//! assert_eq!(forms.len(), 2);
//! assert_eq!(ptc_lisp_syntax::print_form(&forms[1]), "[:a \\b]");
//! let err = ptc_lisp_syntax::parse_program("(let [x 1]").unwrap_err();
//! assert_eq!(err.message, "unclosed list: '(' opened at line 1, column 1 was never closed; add ')'");
//! ```

pub mod ast;
pub use ast::{Form, FormKind, Span};

/// Reader options.
#[derive(Debug, Clone, Copy)]
pub struct ParseOptions {
    /// Maximum collection nesting.
    pub max_depth: usize,
}
impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions { max_depth: 256 }
    }
}

/// A located reader error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// What went wrong and what to write instead.
    pub message: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column (characters).
    pub column: u32,
    /// Location of the offending text.
    pub span: Span,
}

impl ParseError {
    /// The message plus the source line and a caret.
    pub fn render(&self, src: &str) -> String {
        let mut out = self.message.clone();
        if let Some(line) = src.lines().nth(self.line.saturating_sub(1) as usize) {
            let num = self.line.to_string();
            let pad = " ".repeat(num.len());
            let caret: String = " ".repeat(self.column.saturating_sub(1) as usize);
            out.push_str(&format!("\n {num} | {line}\n {pad} | {caret}^"));
        }
        out
    }
}

/// Reads a whole program (any number of top-level forms) with default options.
pub fn parse_program(src: &str) -> Result<Vec<Form>, ParseError> {
    parse_program_with(src, &ParseOptions::default())
}

/// Reads a whole program with explicit options.
pub fn parse_program_with(src: &str, opts: &ParseOptions) -> Result<Vec<Form>, ParseError> {
    let mut p = Parser {
        chars: src.char_indices().collect(),
        pos: 0,
        line: 1,
        col: 1,
        len: src.len(),
        max_depth: opts.max_depth,
        depth: 0,
        in_short_fn: false,
    };
    let mut forms = Vec::new();
    loop {
        p.skip_ws();
        if p.peek().is_none() {
            return Ok(forms);
        }
        forms.push(p.form()?);
    }
}

struct Parser {
    chars: Vec<(usize, char)>,
    pos: usize,
    line: u32,
    col: u32,
    len: usize,
    max_depth: usize,
    depth: usize,
    in_short_fn: bool,
}

#[derive(Clone, Copy)]
struct Mark {
    pos: usize,
    line: u32,
    col: u32,
}

fn delim_name(open: &str) -> &'static str {
    match open {
        "(" => "list",
        "[" => "vector",
        "{" => "map",
        "#{" => "set",
        _ => "short function",
    }
}

fn is_delim(c: char) -> bool {
    c.is_whitespace() || matches!(c, '(' | ')' | '[' | ']' | '{' | '}' | '"' | ';' | ',' | '\'' | '@' | '`' | '~' | '^')
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).map(|c| c.1)
    }
    fn offset(&self, pos: usize) -> u32 {
        self.chars.get(pos).map(|c| c.0).unwrap_or(self.len) as u32
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }
    fn mark(&self) -> Mark {
        Mark { pos: self.pos, line: self.line, col: self.col }
    }
    fn span(&self, m: Mark) -> Span {
        Span { start: self.offset(m.pos), end: self.offset(self.pos), line: m.line, column: m.col }
    }
    fn error_at(&self, m: Mark, msg: impl Into<String>) -> ParseError {
        ParseError {
            message: msg.into(),
            line: m.line,
            column: m.col,
            span: Span { start: self.offset(m.pos), end: self.offset(m.pos + 1), line: m.line, column: m.col },
        }
    }
    fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            if c.is_whitespace() || c == ',' {
                self.bump();
            } else if c == ';' {
                while let Some(c) = self.peek() {
                    if c == '\n' {
                        break;
                    }
                    self.bump();
                }
            } else {
                break;
            }
        }
    }

    fn form(&mut self) -> Result<Form, ParseError> {
        let m = self.mark();
        let Some(c) = self.peek() else {
            return Err(self.error_at(m, "unexpected end of input"));
        };
        match c {
            '(' => {
                self.bump();
                let items = self.seq(m, "(", ')')?;
                Ok(Form::new(FormKind::List(items), self.span(m)))
            }
            '[' => {
                self.bump();
                let items = self.seq(m, "[", ']')?;
                Ok(Form::new(FormKind::Vector(items), self.span(m)))
            }
            '{' => {
                self.bump();
                let items = self.seq(m, "{", '}')?;
                if items.len() % 2 != 0 {
                    return Err(self.error_at(m, format!("map literal needs an even number of forms (key value pairs); found {} at line {}, column {}", items.len(), m.line, m.col)));
                }
                Ok(Form::new(FormKind::Map(items), self.span(m)))
            }
            ')' | ']' | '}' => Err(self.error_at(m, format!("unexpected '{c}' at line {}, column {}: there is no open '{}' to close", m.line, m.col, match c { ')' => '(', ']' => '[', _ => '{' }))),
            '"' => {
                self.bump();
                let s = self.string_body(m, false)?;
                Ok(Form::new(FormKind::Str(s), self.span(m)))
            }
            '#' => self.dispatch(m),
            '\'' => {
                self.bump();
                match self.peek() {
                    Some('(' | '[' | '{' | '#') => Err(self.error_at(m, "quoted collections are not supported; only quoted symbols like 'github are allowed; write a vector literal [1 2 3] instead")),
                    _ => {
                        let inner = self.form()?;
                        Ok(Form::new(FormKind::Quote(Box::new(inner)), self.span(m)))
                    }
                }
            }
            '@' => Err(self.error_at(m, format!("deref syntax (@x) is not supported: PTC-Lisp has no atoms or refs; use the value directly (line {}, column {})", m.line, m.col))),
            '`' | '~' | '^' => Err(self.error_at(m, format!("'{c}' (syntax quote, unquote or metadata) is not supported at line {}, column {}", m.line, m.col))),
            '\\' => self.char_literal(m),
            ':' => self.keyword(m),
            _ => self.atom(m),
        }
    }

    fn seq(&mut self, m: Mark, open: &str, close: char) -> Result<Vec<Form>, ParseError> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(self.error_at(
                m,
                format!(
                    "forms nested deeper than {} levels at line {}, column {}; flatten the program",
                    self.max_depth, m.line, m.col
                ),
            ));
        }
        let mut items = Vec::new();
        loop {
            self.skip_ws();
            let here = self.mark();
            match self.peek() {
                None => {
                    return Err(self.error_at(
                        m,
                        format!(
                            "unclosed {}: '{open}' opened at line {}, column {} was never closed; add '{close}'",
                            delim_name(open),
                            m.line,
                            m.col
                        ),
                    ));
                }
                Some(c) if c == close => {
                    self.bump();
                    self.depth -= 1;
                    return Ok(items);
                }
                Some(c @ (')' | ']' | '}')) => {
                    return Err(self.error_at(here, format!("mismatched delimiter: '{open}' opened at line {}, column {} is closed by '{c}' at line {}, column {}; use '{close}'", m.line, m.col, here.line, here.col)));
                }
                Some(_) => items.push(self.form()?),
            }
        }
    }

    fn string_body(&mut self, m: Mark, regex: bool) -> Result<String, ParseError> {
        let mut s = String::new();
        loop {
            let esc = self.mark();
            match self.bump() {
                None => return Err(self.error_at(m, format!("unterminated string starting at line {}, column {}; add a closing '\"'", m.line, m.col))),
                Some('"') => return Ok(s),
                Some('\\') if regex => match self.bump() {
                    Some('"') => s.push('"'),
                    Some(c) => {
                        s.push('\\');
                        s.push(c);
                    }
                    None => return Err(self.error_at(m, "unterminated regex literal")),
                },
                Some('\\') => match self.bump() {
                    Some('n') => s.push('\n'),
                    Some('t') => s.push('\t'),
                    Some('r') => s.push('\r'),
                    Some('b') => s.push('\u{8}'),
                    Some('f') => s.push('\u{c}'),
                    Some('\\') => s.push('\\'),
                    Some('"') => s.push('"'),
                    Some('u') => {
                        let mut hex = String::new();
                        for _ in 0..4 {
                            if let Some(h) = self.peek().filter(|c| c.is_ascii_hexdigit()) {
                                hex.push(h);
                                self.bump();
                            }
                        }
                        match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                            Some(c) if hex.len() == 4 => s.push(c),
                            _ => return Err(self.error_at(esc, "invalid unicode escape; write \\u followed by 4 hex digits, e.g. \\u00e9")),
                        }
                    }
                    Some(c) => return Err(self.error_at(esc, format!("unsupported escape \\{c} in string at line {}, column {}; supported: \\\\ \\\" \\n \\t \\r \\b \\f \\uXXXX", esc.line, esc.col))),
                    None => return Err(self.error_at(m, format!("unterminated string starting at line {}, column {}; add a closing '\"'", m.line, m.col))),
                },
                Some(c) => s.push(c),
            }
        }
    }

    fn dispatch(&mut self, m: Mark) -> Result<Form, ParseError> {
        self.bump();
        match self.peek() {
            Some('{') => {
                self.bump();
                let items = self.seq(m, "#{", '}')?;
                Ok(Form::new(FormKind::Set(items), self.span(m)))
            }
            Some('(') => {
                if self.in_short_fn {
                    return Err(self.error_at(m, "nested #() short functions are not allowed; use (fn [x] ...) for the inner one"));
                }
                self.bump();
                self.in_short_fn = true;
                let items = self.seq(m, "#(", ')');
                self.in_short_fn = false;
                Ok(Form::new(FormKind::ShortFn(items?), self.span(m)))
            }
            Some('"') => {
                self.bump();
                let s = self.string_body(m, true)?;
                Ok(Form::new(FormKind::Regex(s), self.span(m)))
            }
            Some('\'') => {
                self.bump();
                let name = self.token();
                if name.is_empty() {
                    return Err(self.error_at(m, "#' must be followed by a name, e.g. #'my-fn"));
                }
                Ok(Form::new(FormKind::Var(name), self.span(m)))
            }
            Some('#') => {
                self.bump();
                let t = self.token();
                let v = match t.as_str() {
                    "Inf" => f64::INFINITY,
                    "-Inf" => f64::NEG_INFINITY,
                    "NaN" => f64::NAN,
                    _ => return Err(self.error_at(m, format!("unknown symbolic value ##{t}; use ##Inf, ##-Inf or ##NaN"))),
                };
                Ok(Form::new(FormKind::Float(v), self.span(m)))
            }
            Some('_') => Err(self.error_at(m, format!("reader discard syntax (#_) is not supported; use ; for comments (line {}, column {})", m.line, m.col))),
            _ => Err(self.error_at(m, format!("unsupported reader syntax '#' at line {}, column {}; supported: #{{...}} sets, #(...) functions, #\"...\" regexes, #'name vars", m.line, m.col))),
        }
    }

    fn token(&mut self) -> String {
        let mut t = String::new();
        while let Some(c) = self.peek() {
            if is_delim(c) && (c != '\'' || t.is_empty()) {
                break;
            }
            t.push(c);
            self.bump();
        }
        t
    }

    fn char_literal(&mut self, m: Mark) -> Result<Form, ParseError> {
        self.bump();
        let Some(first) = self.bump() else {
            return Err(self.error_at(m, "\\ at end of input; write a character like \\a"));
        };
        let mut t = String::from(first);
        while let Some(c) = self.peek() {
            if is_delim(c) {
                break;
            }
            t.push(c);
            self.bump();
        }
        let c = if t.chars().count() == 1 {
            first
        } else {
            match t.as_str() {
                "newline" => '\n',
                "space" => ' ',
                "tab" => '\t',
                "return" => '\r',
                "backspace" => '\u{8}',
                "formfeed" => '\u{c}',
                u if u.starts_with('u') && u.len() == 5 => match u32::from_str_radix(&u[1..], 16).ok().and_then(char::from_u32) {
                    Some(c) => c,
                    None => return Err(self.error_at(m, format!("invalid character literal \\{t}"))),
                },
                _ => return Err(self.error_at(m, format!("unknown character literal \\{t} at line {}, column {}; use \\a, \\newline, \\space, \\tab, \\return, \\backspace, \\formfeed or \\uXXXX", m.line, m.col))),
            }
        };
        Ok(Form::new(FormKind::Char(c), self.span(m)))
    }

    fn keyword(&mut self, m: Mark) -> Result<Form, ParseError> {
        self.bump();
        let t = self.token();
        if t.is_empty() {
            return Err(self
                .error_at(m, format!("a lone ':' is not a keyword (line {}, column {}); write :name", m.line, m.col)));
        }
        if let Some(rest) = t.strip_prefix(':') {
            return Err(self.error_at(m, format!("auto-resolved keywords (::{rest}) are not supported; write :{rest}")));
        }
        if t.contains('/') {
            return Err(self.error_at(
                m,
                format!("namespaced keywords like :{t} are not supported; use :{} or a string", t.replace('/', "-")),
            ));
        }
        Ok(Form::new(FormKind::Keyword(t), self.span(m)))
    }

    fn atom(&mut self, m: Mark) -> Result<Form, ParseError> {
        let t = self.token();
        if t.is_empty() {
            let c = self.peek().unwrap_or(' ');
            self.bump();
            return Err(self.error_at(m, format!("unexpected character '{c}' at line {}, column {}", m.line, m.col)));
        }
        let kind = match t.as_str() {
            "nil" => FormKind::Nil,
            "true" => FormKind::Bool(true),
            "false" => FormKind::Bool(false),
            _ => {
                let body = t.strip_prefix(['-', '+']).unwrap_or(&t);
                if body.starts_with(|c: char| c.is_ascii_digit()) {
                    self.number(&t, m)?
                } else if t == "/" {
                    FormKind::Symbol { ns: None, name: "/".into() }
                } else {
                    match t.split_once('/') {
                        Some((ns, name)) if !ns.is_empty() && !name.is_empty() => {
                            FormKind::Symbol { ns: Some(ns.into()), name: name.into() }
                        }
                        Some(_) => return Err(self.error_at(m, format!("invalid symbol {t}"))),
                        None => FormKind::Symbol { ns: None, name: t.clone() },
                    }
                }
            }
        };
        Ok(Form::new(kind, self.span(m)))
    }

    fn number(&self, t: &str, m: Mark) -> Result<FormKind, ParseError> {
        if t.contains('/') {
            return Err(self.error_at(
                m,
                format!(
                    "ratio literals like {t} are not supported; write (/ {}) which returns a float",
                    t.replace('/', " ")
                ),
            ));
        }
        let lower = t.to_ascii_lowercase();
        if lower.contains("0x") || t.ends_with('N') || t.ends_with('M') {
            return Err(self.error_at(m, format!("number literal {t} is not supported: write plain decimal integers or floats (hex, N and M suffixes are not supported)")));
        }
        if t.contains(['.', 'e', 'E']) {
            return t
                .parse::<f64>()
                .map(FormKind::Float)
                .map_err(|_| self.error_at(m, format!("invalid number {t} at line {}, column {}", m.line, m.col)));
        }
        match t.parse::<i64>() {
            Ok(i) => Ok(FormKind::Int(i)),
            Err(_) if t.trim_start_matches(['-', '+']).chars().all(|c| c.is_ascii_digit()) => Err(self.error_at(
                m,
                format!("integer literal {t} does not fit in 64 bits (range -9223372036854775808..9223372036854775807) at line {}, column {}", m.line, m.col),
            )),
            Err(_) => Err(self.error_at(m, format!("invalid number {t} at line {}, column {}", m.line, m.col))),
        }
    }
}

/// Writes `s` as a PTC-Lisp string literal: quoted, with `\\ \" \n \t \r` escaped and
/// other control characters as `\uXXXX`, so the reader reads it back unchanged.
pub fn write_string_literal(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Prints one form as PTC-Lisp text.
pub fn print_form(f: &Form) -> String {
    let mut out = String::new();
    print_into(f, &mut out);
    out
}

/// Prints forms separated by newlines.
pub fn print_program(forms: &[Form]) -> String {
    forms.iter().map(print_form).collect::<Vec<_>>().join("\n")
}

fn print_seq(items: &[Form], open: &str, close: &str, out: &mut String) {
    out.push_str(open);
    for (i, f) in items.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        print_into(f, out);
    }
    out.push_str(close);
}

fn print_into(f: &Form, out: &mut String) {
    match &f.kind {
        FormKind::Nil => out.push_str("nil"),
        FormKind::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        FormKind::Int(i) => out.push_str(&i.to_string()),
        FormKind::Float(x) => {
            if x.is_nan() {
                out.push_str("##NaN")
            } else if x.is_infinite() {
                out.push_str(if *x > 0.0 { "##Inf" } else { "##-Inf" })
            } else {
                let s = format!("{x:?}");
                out.push_str(&s);
            }
        }
        FormKind::Str(s) => write_string_literal(s, out),
        FormKind::Char(c) => match c {
            '\n' => out.push_str("\\newline"),
            ' ' => out.push_str("\\space"),
            '\t' => out.push_str("\\tab"),
            '\r' => out.push_str("\\return"),
            c => {
                out.push('\\');
                out.push(*c);
            }
        },
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
        FormKind::List(items) => print_seq(items, "(", ")", out),
        FormKind::Vector(items) => print_seq(items, "[", "]", out),
        FormKind::Map(items) => print_seq(items, "{", "}", out),
        FormKind::Set(items) => print_seq(items, "#{", "}", out),
        FormKind::ShortFn(items) => print_seq(items, "#(", ")", out),
        FormKind::Regex(r) => {
            out.push_str("#\"");
            out.push_str(&r.replace('"', "\\\""));
            out.push('"');
        }
        FormKind::Var(v) => {
            out.push_str("#'");
            out.push_str(v);
        }
        FormKind::Quote(inner) => {
            out.push('\'');
            print_into(inner, out);
        }
    }
}
