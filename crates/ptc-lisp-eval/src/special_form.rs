//! The special forms: one table of names, so the analyzer, the definition scanner and
//! discovery agree on what is a special form and which forms define a name.

/// A special form of PTC-Lisp (or a Clojure form it rejects with a hint).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpecialForm {
    Quote,
    Comment,
    Do,
    If,
    IfNot,
    When,
    WhenNot,
    Cond,
    Condp,
    Case,
    And,
    Or,
    Let,
    Loop,
    Recur,
    Fn,
    Def,
    Defonce,
    Defn,
    DefnPrivate,
    IfLet,
    WhenLet,
    IfSome,
    WhenSome,
    WhenFirst,
    Thread,
    ThreadLast,
    AsThread,
    CondThread,
    CondThreadLast,
    SomeThread,
    SomeThreadLast,
    For,
    Doseq,
    Return,
    Fail,
    Dot,
    /// `letfn`: local functions that may call each other.
    Letfn,
    /// `(dotimes [i n] body...)`: `doseq` over `(range n)`.
    Dotimes,
    /// `require` / `ns` of the libraries PTC-Lisp already has (`clojure.string :as str`):
    /// nothing to do, so nil; anything else is rejected with the available aliases.
    Require,
    /// The hidden form multi-arity functions use to report a missing arity.
    ArityError,
    /// The hidden form `condp` and `assert` use to raise a runtime error.
    Raise,
    /// `(declare f g)`: names defined later; nothing to do (forward references resolve).
    Declare,
    /// `(assert expr msg?)`: a runtime error when expr is falsy.
    Assert,
    /// A Clojure form outside the subset (`try`, `letfn`, `ns`...): rejected with a hint.
    Unsupported,
}

const TABLE: &[(&str, SpecialForm)] = &[
    ("quote", SpecialForm::Quote),
    ("comment", SpecialForm::Comment),
    ("do", SpecialForm::Do),
    ("if", SpecialForm::If),
    ("if-not", SpecialForm::IfNot),
    ("when", SpecialForm::When),
    ("when-not", SpecialForm::WhenNot),
    ("cond", SpecialForm::Cond),
    ("condp", SpecialForm::Condp),
    ("case", SpecialForm::Case),
    ("and", SpecialForm::And),
    ("or", SpecialForm::Or),
    ("let", SpecialForm::Let),
    ("loop", SpecialForm::Loop),
    ("recur", SpecialForm::Recur),
    ("fn", SpecialForm::Fn),
    ("def", SpecialForm::Def),
    ("defonce", SpecialForm::Defonce),
    ("defn", SpecialForm::Defn),
    ("defn-", SpecialForm::DefnPrivate),
    ("if-let", SpecialForm::IfLet),
    ("when-let", SpecialForm::WhenLet),
    ("if-some", SpecialForm::IfSome),
    ("when-some", SpecialForm::WhenSome),
    ("when-first", SpecialForm::WhenFirst),
    ("->", SpecialForm::Thread),
    ("->>", SpecialForm::ThreadLast),
    ("as->", SpecialForm::AsThread),
    ("cond->", SpecialForm::CondThread),
    ("cond->>", SpecialForm::CondThreadLast),
    ("some->", SpecialForm::SomeThread),
    ("some->>", SpecialForm::SomeThreadLast),
    ("for", SpecialForm::For),
    ("doseq", SpecialForm::Doseq),
    ("return", SpecialForm::Return),
    ("fail", SpecialForm::Fail),
    (".", SpecialForm::Dot),
    ("letfn", SpecialForm::Letfn),
    (crate::desugar::ARITY_ERROR_FORM, SpecialForm::ArityError),
    (crate::desugar::RAISE_FORM, SpecialForm::Raise),
    ("declare", SpecialForm::Declare),
    ("assert", SpecialForm::Assert),
    ("try", SpecialForm::Unsupported),
    ("catch", SpecialForm::Unsupported),
    ("throw", SpecialForm::Unsupported),
    ("finally", SpecialForm::Unsupported),
    ("defmacro", SpecialForm::Unsupported),
    ("binding", SpecialForm::Unsupported),
    ("ns", SpecialForm::Require),
    ("require", SpecialForm::Require),
    ("import", SpecialForm::Unsupported),
    ("defmulti", SpecialForm::Unsupported),
    ("defmethod", SpecialForm::Unsupported),
    ("defprotocol", SpecialForm::Unsupported),
    ("defrecord", SpecialForm::Unsupported),
    ("deftype", SpecialForm::Unsupported),
    ("dotimes", SpecialForm::Dotimes),
    ("while", SpecialForm::Unsupported),
    ("eval", SpecialForm::Unsupported),
];

impl SpecialForm {
    /// The special form a head symbol names, if any.
    pub(crate) fn lookup(name: &str) -> Option<SpecialForm> {
        TABLE.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }

    /// True for the forms whose first argument is a name they define at top level.
    pub(crate) fn defines_name(self) -> bool {
        matches!(self, SpecialForm::Def | SpecialForm::Defonce | SpecialForm::Defn | SpecialForm::DefnPrivate)
    }

    /// Every name of the table (for discovery and tests).
    #[cfg(test)]
    pub(crate) fn names() -> impl Iterator<Item = &'static str> {
        TABLE.iter().map(|(n, _)| *n)
    }
}

/// The special forms and macros programs can write (`def`, `let`, `->>`...), in table
/// order; the Clojure forms PTC-Lisp rejects (`try`, `defmacro`...) and hidden forms are
/// left out.
pub fn special_forms() -> impl Iterator<Item = &'static str> {
    TABLE
        .iter()
        .filter(|(_, f)| !matches!(f, SpecialForm::Unsupported | SpecialForm::ArityError | SpecialForm::Raise))
        .map(|(n, _)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_found_and_defining_forms_are_exactly_the_def_family() {
        for n in SpecialForm::names() {
            assert!(SpecialForm::lookup(n).is_some(), "{n}");
        }
        let defining: Vec<&str> =
            SpecialForm::names().filter(|n| SpecialForm::lookup(n).is_some_and(SpecialForm::defines_name)).collect();
        assert_eq!(defining, ["def", "defonce", "defn", "defn-"]);
    }

    #[test]
    fn the_writable_forms_leave_out_the_rejected_and_hidden_ones() {
        let forms: Vec<&str> = special_forms().collect();
        for name in ["def", "defn", "let", "->>", "letfn", "require"] {
            assert!(forms.contains(&name), "{name}");
        }
        for name in ["try", "defmacro", crate::desugar::ARITY_ERROR_FORM, crate::desugar::RAISE_FORM] {
            assert!(!forms.contains(&name), "{name}");
        }
    }
}
