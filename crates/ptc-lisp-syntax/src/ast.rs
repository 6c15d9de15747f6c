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
    /// `'sym` (quoted symbol; quoted collections are rejected by the reader).
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
