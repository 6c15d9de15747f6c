//! `to_clojure`: the printed form of values, bounded on every input.
//!
//! Floats print with at most 10 decimals and trailing zeros trimmed (`5.0`,
//! `3.3333333333`); maps print with keys sorted (they are stored sorted); strings are
//! quoted and escaped. Printing stops at a byte budget, so values whose printed form is
//! exponential (a vector nested inside itself 60 times) stay cheap to print.

use std::fmt::Write;

use crate::function::FnRepr;
use crate::value::Value;

/// Printing options.
#[derive(Debug, Clone, Copy)]
pub struct PrintOptions {
    /// Items shown per collection before `...` and a `(k/n)` marker.
    pub limit: Option<usize>,
    /// Characters shown per string before `...` and a `(k/n chars)` marker.
    pub printable_limit: Option<usize>,
    /// Hard cap on output bytes; printing stops with `...` past it.
    pub max_bytes: usize,
}

impl Default for PrintOptions {
    fn default() -> Self {
        PrintOptions { limit: None, printable_limit: None, max_bytes: 64 * 1024 * 1024 }
    }
}

/// Prints a value in full (bounded only by a 64 MiB safety cap).
pub fn to_clojure(v: &Value) -> String {
    to_clojure_with(v, &PrintOptions::default()).0
}

/// Prints with options; returns the text and whether anything was truncated.
pub fn to_clojure_with(v: &Value, opts: &PrintOptions) -> (String, bool) {
    let mut p = Printer { out: String::new(), opts, truncated: false, depth: 0 };
    p.value(v);
    (p.out, p.truncated)
}

/// The first `max_chars` characters of `s`, with `...` when it was longer (for messages
/// that quote program input: an error never echoes megabytes).
pub fn clip(s: &str, max_chars: usize) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(max_chars) {
        None => std::borrow::Cow::Borrowed(s),
        Some((i, _)) => std::borrow::Cow::Owned(format!("{}... ({} chars)", &s[..i], s.chars().count())),
    }
}

/// The REPL preview used in feedback: `user=> <value>` with at most `max_chars` characters.
/// Returns `None` for nil and var results (they produce no preview line).
pub fn repl_preview(v: &Value, max_chars: usize) -> Option<String> {
    repl_preview_with(v, 50, max_chars)
}

/// [`repl_preview`] showing at most `max_items` items of each collection (the rest as `...`).
pub fn repl_preview_with(v: &Value, max_items: usize, max_chars: usize) -> Option<String> {
    if matches!(v, Value::Nil | Value::Var(_)) {
        return None;
    }
    let opts = PrintOptions { limit: Some(max_items), printable_limit: None, max_bytes: max_chars * 4 + 64 };
    let (text, _) = to_clojure_with(v, &opts);
    let line = format!("user=> {text}");
    if line.chars().count() > max_chars {
        let cut: String = line.chars().take(max_chars).collect();
        Some(format!("{cut} ... (truncated at {max_chars} chars; use println on specific fields)"))
    } else {
        Some(line)
    }
}

/// Formats a float as Clojure prints it (Java's `Double.toString`): the shortest digits
/// that read back as the same number (`0.30000000000000004`), always with a `.` (`5.0`),
/// scientific below 10^-3 and from 10^7 (`1.0E20`), `##Inf`/`##-Inf`/`##NaN` for
/// specials. Rounding for display belongs to the caller (the agent's `float_precision`).
pub fn format_float(f: f64) -> String {
    if f.is_nan() {
        return "##NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "##Inf".into() } else { "##-Inf".into() };
    }
    let a = f.abs();
    if a == 0.0 || (1e-3..1e7).contains(&a) {
        let s = format!("{f}");
        if s.contains('.') { s } else { format!("{s}.0") }
    } else {
        let s = format!("{f:e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = if m.contains('.') { m.to_string() } else { format!("{m}.0") };
        format!("{m}E{e}")
    }
}

/// Quotes and escapes a string as a PTC-Lisp string literal.
pub fn quote_str(s: &str, out: &mut String) {
    ptc_lisp_syntax::write_string_literal(s, out);
}

struct Printer<'a> {
    out: String,
    opts: &'a PrintOptions,
    truncated: bool,
    depth: usize,
}

impl Printer<'_> {
    fn full(&mut self) -> bool {
        if self.out.len() >= self.opts.max_bytes {
            if !self.truncated {
                self.truncated = true;
                self.out.push_str("...");
            }
            true
        } else {
            false
        }
    }

    fn value(&mut self, v: &Value) {
        if self.full() {
            return;
        }
        if self.depth > 1_000 {
            self.out.push_str("...");
            self.truncated = true;
            return;
        }
        if matches!(v, Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_)) {
            let entered = crate::meter::within(
                || false,
                || {
                    self.node(v);
                    true
                },
            );
            if !entered {
                self.out.push_str("...");
                self.truncated = true;
            }
        } else {
            self.node(v);
        }
    }

    fn node(&mut self, v: &Value) {
        match v {
            Value::Nil => self.out.push_str("nil"),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) => {
                let _ = write!(self.out, "{i}");
            }
            Value::Float(f) => self.out.push_str(&format_float(*f)),
            Value::Str(s) => self.string(s),
            Value::Keyword(k) => {
                self.out.push(':');
                self.name(k);
            }
            // as Clojure prints a symbol: its name, unquoted ('a and (quote a) print a)
            Value::Symbol(s) => self.name(s),
            Value::Var(s) => {
                self.out.push_str("#'");
                self.name(s);
            }
            Value::Regex(r) => {
                self.out.push_str("#\"");
                self.name(r.source());
                self.out.push('"');
            }
            Value::Func(f) => match f.repr() {
                FnRepr::Closure(c) => {
                    self.out.push_str("#fn[");
                    self.out.push_str(&c.lambda.param_names.join(" "));
                    self.out.push(']');
                }
                FnRepr::Builtin(_) => self.out.push_str("#<builtin>"),
                FnRepr::Native { .. } => self.out.push_str("#fn[...]"),
                FnRepr::Tool(_) => self.out.push_str("#<fn>"),
            },
            Value::Lazy(l) => {
                self.out.push_str(if l.is_infinite() { "#<infinite " } else { "#<lazy " });
                self.out.push_str(&l.label);
                self.out.push('>');
            }
            Value::Reduced(_) => self.out.push_str("#<reduced>"),
            // one arm for both: each nesting level of a deep value costs this frame
            Value::Vector(items) | Value::List(items) => {
                let (open, close) = if matches!(v, Value::List(_)) { ("(", ")") } else { ("[", "]") };
                self.seq(open, close, items.len(), items.iter().map(Item::One));
            }
            Value::Set(items) => {
                self.seq("#{", "}", items.len(), items.iter().map(Item::One));
            }
            Value::Map(m) => {
                self.seq("{", "}", m.len(), m.iter().map(|(k, v)| Item::Pair(k, v)));
            }
        }
    }

    /// A name (keyword, symbol, var, regex source) within the byte budget: `(symbol s)`
    /// and `(keyword s)` make names of any length, and a preview must stay within its cap.
    fn name(&mut self, s: &str) {
        let room = self.opts.max_bytes.saturating_sub(self.out.len());
        if s.len() <= room {
            self.out.push_str(s);
            return;
        }
        let mut cut = room;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        self.out.push_str(&s[..cut]);
        self.out.push_str("...");
        self.truncated = true;
    }

    fn string(&mut self, s: &str) {
        match self.opts.printable_limit {
            Some(limit) if s.chars().count() > limit => {
                let total = s.chars().count();
                let head: String = s.chars().take(limit).collect();
                let mut q = String::new();
                quote_str(&format!("{head} ..."), &mut q);
                self.out.push_str(&q);
                let _ = write!(self.out, " ({limit}/{total} chars)");
                self.truncated = true;
            }
            _ => {
                // never quote more than the byte budget has room for
                let room = self.opts.max_bytes.saturating_sub(self.out.len());
                let mut cut = s.len().min(room);
                while !s.is_char_boundary(cut) {
                    cut -= 1;
                }
                let mut q = String::with_capacity(cut + 2);
                quote_str(&s[..cut], &mut q);
                self.out.push_str(&q);
                if cut < s.len() {
                    self.truncated = true;
                    self.out.push_str("...");
                }
            }
        }
    }

    fn seq<'v>(&mut self, open: &str, close: &str, total: usize, items: impl Iterator<Item = Item<'v>>) {
        self.out.push_str(open);
        self.depth += 1;
        let limit = self.opts.limit.unwrap_or(usize::MAX);
        let mut shown = 0;
        for (i, item) in items.enumerate() {
            if i >= limit {
                break;
            }
            if self.full() {
                break;
            }
            if i > 0 {
                self.out.push(' ');
            }
            match item {
                Item::One(v) => self.value(v),
                Item::Pair(k, v) => {
                    self.value(k);
                    self.out.push(' ');
                    self.value(v);
                }
            }
            shown += 1;
        }
        self.depth -= 1;
        if shown < total && !self.truncated {
            self.out.push_str(if shown > 0 { " ..." } else { "..." });
            self.out.push_str(close);
            let _ = write!(self.out, " ({shown}/{total})");
            self.truncated = true;
        } else {
            self.out.push_str(close);
        }
    }
}

enum Item<'a> {
    One(&'a Value),
    Pair(&'a Value, &'a Value),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats() {
        assert_eq!(format_float(5.0), "5.0");
        assert_eq!(format_float(10.0 / 3.0), "3.3333333333333335");
        assert_eq!(format_float(3.3), "3.3");
        assert_eq!(format_float(1e20), "1.0E20");
        assert_eq!(format_float(1e-4), "1.0E-4");
        assert_eq!(format_float(2f64.sqrt()), "1.4142135623730951");
        assert_eq!(format_float(f64::NAN), "##NaN");
        assert_eq!(format_float(-f64::INFINITY), "##-Inf");
        assert_eq!(format_float(0.1 + 0.2), "0.30000000000000004");
    }

    #[test]
    fn truncation_markers() {
        let v = Value::vector((1..=5).map(Value::Int));
        let (s, t) = to_clojure_with(&v, &PrintOptions { limit: Some(2), ..Default::default() });
        assert_eq!(s, "[1 2 ...] (2/5)");
        assert!(t);
        let v = Value::str("very long string here");
        let (s, _) = to_clojure_with(&v, &PrintOptions { printable_limit: Some(9), ..Default::default() });
        assert_eq!(s, "\"very long ...\" (9/21 chars)");
    }

    #[test]
    fn long_names_stay_within_the_byte_cap() {
        let long = "x".repeat(8_000);
        for v in [
            Value::Symbol(format!("{long}/{long}").into()),
            Value::kw(long.as_str()),
            Value::Var(long.as_str().into()),
            Value::vector([Value::Symbol(long.as_str().into())]),
        ] {
            let (s, t) = to_clojure_with(&v, &PrintOptions { max_bytes: 4096, ..Default::default() });
            assert!(s.len() <= 4096 + 8, "{} bytes", s.len());
            assert!(t && s.contains("..."), "{s}");
        }
    }

    #[test]
    fn exponential_value_prints_bounded() {
        let mut v = Value::vector([]);
        for _ in 0..60 {
            v = Value::vector([v.clone(), v]);
        }
        let (s, t) = to_clojure_with(&v, &PrintOptions { max_bytes: 10_000, ..Default::default() });
        assert!(t);
        assert!(s.len() < 10_100);
    }
}
