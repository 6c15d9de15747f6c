//! Lexer callbacks: decoding literal tokens (numbers, strings, regexes, characters,
//! keywords, symbols) and explaining the ones PTC-Lisp does not accept.
//!
//! Every error says what is wrong and what to write instead; the location text
//! ("line L, column C") is inserted between [`LexError::head`] and [`LexError::tail`].

use std::ops::Range;

use logos::{Lexer, Logos};

use crate::error::LexError;

/// What a literal's callback reads and moves: the lexer of any token type over `str`.
/// This module names no token type, so the lexer's `Token` (whose patterns name these
/// callbacks) and the callbacks do not depend on each other.
pub(crate) trait Lex {
    /// The text of the token being lexed.
    fn slice(&self) -> &str;
    /// The text after the token.
    fn remainder(&self) -> &str;
    /// The token's byte range.
    fn span(&self) -> Range<usize>;
    /// Extends the token by `n` bytes.
    fn bump(&mut self, n: usize);
}

impl<'s, T: Logos<'s, Source = str>> Lex for Lexer<'s, T> {
    fn slice(&self) -> &str {
        Lexer::slice(self)
    }
    fn remainder(&self) -> &str {
        Lexer::remainder(self)
    }
    fn span(&self) -> Range<usize> {
        Lexer::span(self)
    }
    fn bump(&mut self, n: usize) {
        Lexer::bump(self, n)
    }
}

const INT_RANGE: &str = "-9223372036854775808..9223372036854775807";
const STRING_ESCAPES: &str = r#"\\ \" \n \t \r \b \f and \uXXXX (4 hex digits)"#;
const CHAR_NAMES: &str = r"\newline \space \tab \return \backspace \formfeed";
const SYMBOL_CHARS: &str = "letters, digits and * + ! - _ ' ? < > = / . & % # $";
const KEYWORD_CHARS: &str =
    "letters, digits and - _ ? ! + * < > = . ' & % $ (and one / between a namespace and a name)";

/// `[+-]?[0-9]+`: a 64-bit integer; leading zeros (octal in Clojure) are refused.
pub(crate) fn int(lex: &mut impl Lex) -> Result<i64, LexError> {
    let text = lex.slice();
    let digits = text.trim_start_matches(['+', '-']);
    if digits.len() > 1 && digits.starts_with('0') {
        let plain = digits.trim_start_matches('0');
        let plain = if plain.is_empty() { "0" } else { plain };
        return Err(LexError::new(
            format!("integer literal {text} has a leading zero at "),
            format!("; octal literals are not supported, write {plain}"),
        ));
    }
    text.parse::<i64>().map_err(|_| {
        LexError::new(format!("integer literal {text} does not fit in 64 bits (range {INT_RANGE}) at "), "")
    })
}

/// A decimal float with a `.` and/or an exponent.
pub(crate) fn float(lex: &mut impl Lex) -> Result<f64, LexError> {
    let text = lex.slice();
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(LexError::new(
            format!("float literal {text} is too large for a 64-bit float at "),
            "; write ##Inf or ##-Inf if you mean infinity",
        )),
    }
}

/// `##Inf`, `##-Inf`, `##NaN`.
pub(crate) fn symbolic_value(lex: &mut impl Lex) -> Result<f64, LexError> {
    match lex.slice() {
        "##Inf" => Ok(f64::INFINITY),
        "##-Inf" => Ok(f64::NEG_INFINITY),
        "##NaN" => Ok(f64::NAN),
        other => Err(LexError::new(
            format!("unknown symbolic value {other} at "),
            "; the only ones are ##Inf, ##-Inf and ##NaN",
        )),
    }
}

/// After `"`: reads up to the closing quote, decoding escapes.
pub(crate) fn string(lex: &mut impl Lex) -> Result<String, LexError> {
    let open = lex.span().start;
    let body_start = lex.span().end;
    let rest = lex.remainder();
    let unterminated = || LexError::new("unterminated string starting at ", "; add a closing '\"'").at(open..open + 1);
    let mut out = String::new();
    let mut i = 0;
    while let Some(c) = rest.get(i..).and_then(|s| s.chars().next()) {
        match c {
            '"' => {
                lex.bump(i + 1);
                return Ok(out);
            }
            '\\' => {
                let escape = rest.get(i + 1..).and_then(|s| s.chars().next()).ok_or_else(unterminated)?;
                let at = body_start + i;
                let decoded = match escape {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    'b' => '\u{8}',
                    'f' => '\u{c}',
                    '\\' => '\\',
                    '"' => '"',
                    'u' => {
                        let (c, len) = unicode_escape(rest, i, at)?;
                        out.push(c);
                        i += len;
                        continue;
                    }
                    other => return Err(bad_escape(other).at(at..at + 1 + other.len_utf8())),
                };
                out.push(decoded);
                i += 1 + escape.len_utf8();
            }
            c => {
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    Err(unterminated())
}

fn bad_escape(c: char) -> LexError {
    let mut tail =
        format!("; the supported escapes are {STRING_ESCAPES}; write \\\\{c} for a backslash followed by '{c}'");
    if "dDwWsS.()[]{}+*?|^$/".contains(c) {
        tail.push_str(&format!(", or use a regex literal like #\"\\{c}\" where escapes are kept as written"));
    }
    LexError::new(format!("unsupported escape \\{c} in string at "), tail)
}

/// Decodes `\uXXXX` starting at byte `i` of `rest` (the backslash), combining a UTF-16
/// surrogate pair written as two escapes. Returns the char and the bytes consumed.
fn unicode_escape(rest: &str, i: usize, at: usize) -> Result<(char, usize), LexError> {
    let hex4 = |from: usize| -> Option<u32> {
        let digits = rest.get(from..from + 4)?;
        if digits.bytes().all(|b| b.is_ascii_hexdigit()) { u32::from_str_radix(digits, 16).ok() } else { None }
    };
    let Some(code) = hex4(i + 2) else {
        let found: String = rest.get(i..).unwrap_or("").chars().take(6).take_while(|c| *c != '"').collect();
        return Err(LexError::new(
            format!("invalid unicode escape {found} in string at "),
            r"; write \u followed by exactly 4 hex digits, like \u00e9",
        )
        .at(at..at + found.len().max(2)));
    };
    if let Some(c) = char::from_u32(code) {
        return Ok((c, 6));
    }
    // A high surrogate must be followed by an escaped low surrogate.
    let low = if rest.get(i + 6..i + 8) == Some("\\u") { hex4(i + 8) } else { None };
    match low {
        Some(low) if (0xD800..0xDC00).contains(&code) && (0xDC00..0xE000).contains(&low) => {
            let combined = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
            char::from_u32(combined).map(|c| (c, 12)).ok_or_else(|| surrogate_error(code, at))
        }
        _ => Err(surrogate_error(code, at)),
    }
}

fn surrogate_error(code: u32, at: usize) -> LexError {
    LexError::new(
        format!("unicode escape \\u{code:04X} in string at "),
        r" is half of a surrogate pair; write the character itself, or a full pair like \uD83D\uDE00",
    )
    .at(at..at + 6)
}

/// After `#"`: reads up to the closing quote. The pattern is kept as written except that
/// `\"` becomes `"`; any other backslash pair (`\d`, `\\`) is kept verbatim.
pub(crate) fn regex(lex: &mut impl Lex) -> Result<String, LexError> {
    let open = lex.span().start;
    let rest = lex.remainder();
    let mut out = String::new();
    let mut chars = rest.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                lex.bump(i + 1);
                return Ok(out);
            }
            '\\' => match chars.next() {
                Some((_, '"')) => out.push('"'),
                Some((_, escaped)) => {
                    out.push('\\');
                    out.push(escaped);
                }
                None => break,
            },
            c => out.push(c),
        }
    }
    Err(LexError::new("unterminated regex starting at ", "; add a closing '\"'").at(open..open + 2))
}

/// `\x`, `\newline`, `\uXXXX`...: a backslash, one character, and any constituents after it.
pub(crate) fn char_literal(lex: &mut impl Lex) -> Result<char, LexError> {
    let body = lex.slice().get(1..).unwrap_or("");
    let mut chars = body.chars();
    let (Some(first), rest) = (chars.next(), chars.as_str()) else {
        return Err(lone_backslash_error());
    };
    if rest.is_empty() {
        return Ok(first);
    }
    let named = match body {
        "newline" => Some('\n'),
        "space" => Some(' '),
        "tab" => Some('\t'),
        "return" => Some('\r'),
        "backspace" => Some('\u{8}'),
        "formfeed" => Some('\u{c}'),
        _ => None,
    };
    if let Some(c) = named {
        return Ok(c);
    }
    if first == 'u' && rest.chars().all(|c| c.is_ascii_hexdigit()) {
        let code = if rest.len() == 4 { u32::from_str_radix(rest, 16).ok() } else { None };
        return code.and_then(char::from_u32).ok_or_else(|| {
            LexError::new(
                format!("invalid character literal \\{body} at "),
                r"; \u needs exactly 4 hex digits naming a character (not a surrogate), like \u00e9",
            )
        });
    }
    Err(LexError::new(
        format!("unknown character literal \\{body} at "),
        format!(
            "; a character literal is one character like \\a, one of {CHAR_NAMES}, or \\uXXXX with 4 hex digits; for text write a string \"{body}\""
        ),
    ))
}

/// A backslash followed by whitespace or the end of input.
pub(crate) fn lone_backslash(_: &mut impl Lex) -> Result<char, LexError> {
    Err(lone_backslash_error())
}

fn lone_backslash_error() -> LexError {
    LexError::new(
        "a backslash at ",
        r" must be followed by a character: write \a for the letter a, \space for a space, \newline for a newline",
    )
}

/// `:name`: the keyword without its colon.
pub(crate) fn keyword(lex: &mut impl Lex) -> String {
    lex.slice().get(1..).unwrap_or("").to_string()
}

/// `::name` is `:user/name`: every program runs in the namespace `user`.
pub(crate) fn auto_keyword(lex: &mut impl Lex) -> String {
    format!("user/{}", lex.slice().get(2..).unwrap_or(""))
}

/// `n/d`: numerator and denominator; a zero denominator is refused here.
pub(crate) fn ratio(lex: &mut impl Lex) -> Result<(i64, i64), LexError> {
    let text = lex.slice();
    let (n, d) = text.split_once('/').unwrap_or((text, "1"));
    let (Ok(n), Ok(d)) = (n.parse::<i64>(), d.parse::<i64>()) else {
        return Err(LexError::new(
            format!("ratio literal {text} at "),
            format!(" has a part that does not fit in 64 bits (range {INT_RANGE})"),
        ));
    };
    if d == 0 {
        return Err(LexError::new(
            format!("ratio literal {text} at "),
            " divides by zero; the denominator after '/' must not be 0",
        ));
    }
    Ok((n, d))
}

/// A symbol, split into namespace and name on the first `/` (when something precedes it).
pub(crate) fn symbol(lex: &mut impl Lex) -> Result<(Option<String>, String), LexError> {
    let text = lex.slice();
    let (sign, unsigned) = split_sign(text);
    if unsigned.strip_prefix('.').is_some_and(|after| after.starts_with(|c: char| c.is_ascii_digit())) {
        return Err(LexError::new(
            format!("number {text} at "),
            format!(" needs a digit before the '.'; write {sign}0{unsigned}"),
        ));
    }
    if text == "/" {
        return Ok((None, "/".into()));
    }
    match text.split_once('/') {
        None => Ok((None, text.to_string())),
        Some(("", _)) => Err(LexError::new(
            format!("symbol {text} at "),
            " cannot start with '/': use / alone for division, or ns/name like str/join",
        )),
        Some((ns, "")) => Err(LexError::new(
            format!("symbol {text} at "),
            format!(" has no name after '/'; write a namespaced name like {ns}/join, or drop the '/'"),
        )),
        Some((ns, name)) => Ok((Some(ns.to_string()), name.to_string())),
    }
}

/// Splits a leading `+` or `-` off `text`.
fn split_sign(text: &str) -> (&str, &str) {
    match text.strip_prefix(['+', '-']) {
        Some(unsigned) => (text.get(..1).unwrap_or(""), unsigned),
        None => ("", text),
    }
}

/// A run of constituent characters no well-formed pattern matched: say why.
pub(crate) fn malformed(lex: &mut impl Lex) -> Result<(), LexError> {
    let text = lex.slice();
    let (sign, unsigned) = split_sign(text);
    Err(if let Some(name) = text.strip_prefix(':') {
        malformed_keyword(text, name)
    } else if unsigned.starts_with(|c: char| c.is_ascii_digit()) {
        malformed_number(text, sign, unsigned)
    } else {
        malformed_symbol(text)
    })
}

fn malformed_keyword(text: &str, name: &str) -> LexError {
    if name.is_empty() {
        return LexError::new("a lone ':' at ", " is not a keyword; write a name after the colon, like :name");
    }
    if let Some(bare) = name.strip_prefix(':')
        && bare.contains('/')
    {
        return LexError::new(
            format!("auto-resolved keywords with an alias like {text} are not supported at "),
            format!("; write the namespace in full, like :{bare}"),
        );
    }
    if name.contains('/') && name.chars().all(|c| c == '/' || is_keyword_char(c)) {
        return LexError::new(
            format!("keyword {text} at "),
            " is not a valid namespaced keyword; write one '/' between a namespace and a name, like :order/paid",
        );
    }
    let bad = name.chars().find(|c| !is_keyword_char(*c)).unwrap_or(':');
    LexError::new(
        format!("keyword {text} at "),
        format!(" contains '{bad}', which keywords cannot contain; keywords use {KEYWORD_CHARS}"),
    )
}

fn is_keyword_char(c: char) -> bool {
    c.is_alphabetic() || c.is_ascii_digit() || "+-*<>=?!_.'&%$".contains(c)
}

fn malformed_number(text: &str, sign: &str, unsigned: &str) -> LexError {
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let is_decimal = |s: &str| {
        let (int, frac) = s.split_once('.').unwrap_or((s, "0"));
        all_digits(int) && all_digits(frac)
    };
    if let Some(int) = unsigned.strip_suffix('N')
        && all_digits(int)
    {
        return LexError::new(
            format!("BigInt literals like {text} are not supported at "),
            format!("; integers are 64-bit, write {sign}{int}"),
        );
    }
    if let Some(num) = unsigned.strip_suffix('M')
        && is_decimal(num)
    {
        let float = if num.contains('.') { num.to_string() } else { format!("{num}.0") };
        return LexError::new(
            format!("BigDecimal literals like {text} are not supported at "),
            format!("; write the 64-bit float {sign}{float}"),
        );
    }
    if let Some(hex) = unsigned.strip_prefix("0x").or_else(|| unsigned.strip_prefix("0X")) {
        let decimal = i64::from_str_radix(&format!("{sign}{hex}"), 16)
            .map(|v| format!("the decimal number {v}"))
            .unwrap_or_else(|_| "a decimal number".into());
        return LexError::new(
            format!("hexadecimal literals like {text} are not supported at "),
            format!("; write {decimal}"),
        );
    }
    if let Some((radix, digits)) = unsigned.split_once(['r', 'R'])
        && all_digits(radix)
    {
        let decimal = radix
            .parse::<u32>()
            .ok()
            .filter(|r| (2..=36).contains(r))
            .and_then(|r| i64::from_str_radix(&format!("{sign}{digits}"), r).ok())
            .map(|v| format!("the decimal number {v}"))
            .unwrap_or_else(|| "a decimal number".into());
        return LexError::new(
            format!("radix literals like {text} are not supported at "),
            format!("; write {decimal}"),
        );
    }
    if let Some(int) = unsigned.strip_suffix('.')
        && all_digits(int)
    {
        return LexError::new(
            format!("float literal {text} at "),
            format!(" needs a digit after the '.'; write {sign}{int}.0"),
        );
    }
    LexError::new(
        format!("invalid number {text} at "),
        "; numbers look like 42, -7, 3.14 or 1.5e-3, and symbols cannot start with a digit",
    )
}

fn malformed_symbol(text: &str) -> LexError {
    let mut chars = text.chars();
    let first = chars.next().unwrap_or(' ');
    if !is_symbol_start(first) {
        return LexError::new(
            format!("unexpected character '{first}' at "),
            format!("; symbols use {SYMBOL_CHARS} (and start with neither a digit nor ' or #)"),
        );
    }
    match chars.find(|c| !is_symbol_char(*c)) {
        Some(':') => LexError::new(
            format!("':' is not allowed inside a symbol ({text} at "),
            "); keywords start with ':' like :name, and maps are written {:key value}",
        ),
        Some(bad) => LexError::new(
            format!("symbol {text} at "),
            format!(" contains '{bad}', which symbols cannot contain; symbols use {SYMBOL_CHARS}"),
        ),
        // Only reachable if the patterns and these predicates disagree.
        None => LexError::new(format!("unreadable token {text} at "), ""),
    }
}

fn is_symbol_start(c: char) -> bool {
    c.is_alphabetic() || "*+!-_?<>=/.&%$".contains(c)
}

fn is_symbol_char(c: char) -> bool {
    is_symbol_start(c) || c.is_ascii_digit() || "'#".contains(c)
}

/// `@`
pub(crate) fn deref(_: &mut impl Lex) -> Result<(), LexError> {
    Err(LexError::new(
        "deref syntax (@x) is not supported: PTC-Lisp has no atoms or refs; use the value directly (",
        ")",
    ))
}

/// `` ` ``
pub(crate) fn syntax_quote(_: &mut impl Lex) -> Result<(), LexError> {
    Err(LexError::new(
        "syntax quote (`) is not supported at ",
        ": PTC-Lisp has no macros; write the form itself, or 'sym to quote a symbol",
    ))
}

/// `~` and `~@`
pub(crate) fn unquote(lex: &mut impl Lex) -> Result<(), LexError> {
    Err(LexError::new(
        format!("unquote ({}) is not supported at ", lex.slice()),
        ": PTC-Lisp has no macros; write the value itself",
    ))
}

/// `#` followed by anything that is not a supported dispatch.
pub(crate) fn unknown_dispatch(lex: &mut impl Lex) -> Result<(), LexError> {
    let next: String =
        lex.remainder().chars().take_while(|c| !c.is_whitespace() && !"()[]{}\";,".contains(*c)).take(20).collect();
    const SUPPORTED: &str = "after '#' PTC-Lisp accepts only #{...} (set), #(...) (function), #\"...\" (regex), #'name (var) and ##Inf ##-Inf ##NaN";
    let (head, tail) = match next.chars().next() {
        None => ("a lone '#' at ".to_string(), format!(" is not valid syntax; {SUPPORTED}")),
        Some(':') => (
            format!("namespaced map syntax (#{next}{{...}}) is not supported at "),
            "; write a plain map like {:key value}".to_string(),
        ),
        Some('?') => (
            "reader conditionals (#?) are not supported at ".to_string(),
            "; write the PTC-Lisp form directly".to_string(),
        ),
        Some(c) if c.is_alphabetic() => (
            format!("tagged literals like #{next} are not supported at "),
            format!("; write the value as a string or map instead; {SUPPORTED}"),
        ),
        Some(_) => (format!("unknown reader syntax #{next} at "), format!("; {SUPPORTED}")),
    };
    Err(LexError::new(head, tail))
}
