//! The forms the reader produces: a plain tree with a span on every node.

/// Where a form sits in the source text.
///
/// `start`/`end` are byte offsets (half-open); `line` and `column` are 1-based and point
/// at the first character of the form (columns count Unicode scalar values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Span {
    /// Byte offset of the first byte.
    pub start: u32,
    /// Byte offset one past the last byte.
    pub end: u32,
    /// 1-based line of `start`.
    pub line: u32,
    /// 1-based column of `start`.
    pub column: u32,
}

/// One form with its location.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// What the form is.
    pub kind: FormKind,
    /// Where it was read from.
    pub span: Span,
}

/// The kinds of forms PTC-Lisp source can contain.
#[derive(Debug, Clone, PartialEq)]
pub enum FormKind {
    /// `nil`
    Nil,
    /// `true` / `false`
    Bool(bool),
    /// A 64-bit integer literal (`-1`, `42`).
    Int(i64),
    /// A float literal, including `##Inf`, `##-Inf`, `##NaN`.
    Float(f64),
    /// A string literal with escapes already decoded.
    Str(String),
    /// A character literal (`\a`, `\newline`); PTC-Lisp treats it as a 1-char string.
    Char(char),
    /// A keyword without its leading colon (`:user-id` -> `user-id`).
    Keyword(String),
    /// A symbol; `ns` is set for `ns/name` forms (`str/join`, `tool/search`).
    /// The lone symbol `/` has `ns: None, name: "/"`.
    Symbol {
        /// Namespace part before the `/`, if any.
        ns: Option<String>,
        /// Name part.
        name: String,
    },
    /// `( ... )`
    List(Vec<Form>),
    /// `[ ... ]`
    Vector(Vec<Form>),
    /// `{ k v ... }` as a flat list of alternating keys and values (always even length).
    Map(Vec<Form>),
    /// `#{ ... }`
    Set(Vec<Form>),
    /// `#( ... )`: the forms inside the parentheses (the body call).
    ShortFn(Vec<Form>),
    /// `#"..."`: the regex source exactly as written between the quotes
    /// (only `\"` is unescaped).
    Regex(String),
    /// `#'name`
    Var(String),
    /// `'sym` or a quoted collection `'(1 a)`, `'[a]`, `'{:k v}`, `'#{a}`.
    /// `(quote x)` is read as an ordinary list.
    Quote(Box<Form>),
}

impl Form {
    /// Builds a form (used by tests and by code that synthesises forms).
    pub fn new(kind: FormKind, span: Span) -> Self {
        Form { kind, span }
    }

    /// The symbol's name if this form is a symbol without namespace.
    pub fn as_plain_symbol(&self) -> Option<&str> {
        match &self.kind {
            FormKind::Symbol { ns: None, name } => Some(name),
            _ => None,
        }
    }
}

impl Form {
    /// Structural equality that ignores spans: the question "do these two read the same?".
    ///
    /// Floats compare by value except that NaN equals NaN (the reader has one NaN, `##NaN`),
    /// and `0.0` and `-0.0` differ (they print differently).
    ///
    /// ```
    /// use ptc_lisp_syntax::parse_program;
    /// let a = parse_program("[1 ##NaN]").unwrap();
    /// let b = parse_program("  [1  ##NaN ]").unwrap();
    /// assert!(a[0].eq_ignoring_spans(&b[0]));
    /// assert_ne!(a[0], b[0]);
    /// ```
    pub fn eq_ignoring_spans(&self, other: &Form) -> bool {
        use FormKind::*;
        let all = |a: &[Form], b: &[Form]| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.eq_ignoring_spans(y));
        match (&self.kind, &other.kind) {
            (Float(x), Float(y)) => {
                (x.is_nan() && y.is_nan()) || (x == y && x.is_sign_negative() == y.is_sign_negative())
            }
            (List(a), List(b))
            | (Vector(a), Vector(b))
            | (Map(a), Map(b))
            | (Set(a), Set(b))
            | (ShortFn(a), ShortFn(b)) => all(a, b),
            (Quote(a), Quote(b)) => a.eq_ignoring_spans(b),
            (a, b) => a == b,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(kind: FormKind) -> Form {
        Form::new(kind, Span::default())
    }

    fn at(kind: FormKind, start: u32) -> Form {
        Form::new(kind, Span { start, end: start + 1, line: 1, column: start + 1 })
    }

    #[test]
    fn eq_ignoring_spans_ignores_spans_only() {
        assert!(at(FormKind::Int(1), 0).eq_ignoring_spans(&at(FormKind::Int(1), 5)));
        assert!(!f(FormKind::Int(1)).eq_ignoring_spans(&f(FormKind::Int(2))));
        assert!(!f(FormKind::Int(1)).eq_ignoring_spans(&f(FormKind::Float(1.0))));
        let v = |items| f(FormKind::Vector(items));
        assert!(v(vec![at(FormKind::Nil, 1)]).eq_ignoring_spans(&v(vec![at(FormKind::Nil, 9)])));
        assert!(!v(vec![f(FormKind::Nil)]).eq_ignoring_spans(&v(vec![])));
        assert!(!v(vec![]).eq_ignoring_spans(&f(FormKind::List(vec![]))));
        assert!(!v(vec![f(FormKind::Nil)]).eq_ignoring_spans(&v(vec![f(FormKind::Bool(false))])));
        let q = |n: &str| f(FormKind::Quote(Box::new(f(FormKind::Symbol { ns: None, name: n.into() }))));
        assert!(q("a").eq_ignoring_spans(&q("a")));
        assert!(!q("a").eq_ignoring_spans(&q("b")));
    }

    #[test]
    fn eq_ignoring_spans_floats() {
        let x = |v: f64| f(FormKind::Float(v));
        assert!(x(f64::NAN).eq_ignoring_spans(&x(-f64::NAN)));
        assert!(!x(f64::NAN).eq_ignoring_spans(&x(1.0)));
        assert!(!x(0.0).eq_ignoring_spans(&x(-0.0)));
        assert!(x(1.5).eq_ignoring_spans(&x(1.5)));
    }
}
