//! Which text an error's location belongs to. A function defined in an earlier input
//! keeps the spans of that input, so an error inside it (`(f 0)` failing in `(/ 1 a)`)
//! carries a line and column of the definition, not of the input that called it.
//!
//! Spans carry no input number, so the REPL keeps the text of every input that defined a
//! name still in use, and attributes a span to the text that has a form exactly there:
//! the current input first, then the definitions, newest first. A span that starts a form
//! but ends elsewhere (a rewritten macro) is the weaker match. When nothing matches, the
//! current input is shown, as before.

use ptc_lisp_syntax::{Form, FormKind, Span};

/// How many definition inputs are kept (the oldest are forgotten past this).
const MAX_DEFINITIONS: usize = 500;

/// An earlier input that defined names.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    /// The names it defined that no later input redefined.
    pub names: Vec<String>,
    /// Its text.
    pub text: String,
}

/// The inputs that defined the names in use, oldest first.
#[derive(Debug, Default)]
pub struct Definitions {
    entries: Vec<Definition>,
}

/// Where a span points.
#[derive(Debug, PartialEq)]
pub enum Origin<'a> {
    /// Into the input just evaluated.
    Input,
    /// Into an earlier input that defined these names.
    Definition(&'a Definition),
}

impl Definitions {
    /// Remembers an input that defined `names`; earlier inputs lose those names.
    pub fn record(&mut self, text: &str, names: &[String]) {
        if names.is_empty() {
            return;
        }
        for e in &mut self.entries {
            e.names.retain(|n| !names.contains(n));
        }
        self.entries.retain(|e| !e.names.is_empty());
        if self.entries.len() >= MAX_DEFINITIONS {
            self.entries.remove(0);
        }
        self.entries.push(Definition { names: names.to_vec(), text: text.to_string() });
    }

    /// The text `span` most likely points into (see the module documentation).
    pub fn locate(&self, span: Span, input: &str) -> Origin<'_> {
        let texts =
            || std::iter::once((input, None)).chain(self.entries.iter().rev().map(|d| (d.text.as_str(), Some(d))));
        for exact in [true, false] {
            if let Some((_, found)) = texts().find(|(text, _)| has_form_at(text, span, exact)) {
                return found.map_or(Origin::Input, Origin::Definition);
            }
        }
        Origin::Input
    }
}

/// True when `text` has a form starting at `span` (and ending with it, when `exact`).
fn has_form_at(text: &str, span: Span, exact: bool) -> bool {
    let Ok(forms) = ptc_lisp_syntax::parse_program(text) else { return false };
    let mut stack: Vec<&Form> = forms.iter().collect();
    while let Some(form) = stack.pop() {
        let s = form.span;
        if s.start == span.start && s.line == span.line && s.column == span.column && (!exact || s.end == span.end) {
            return true;
        }
        if s.start > span.start || s.end < span.start {
            continue;
        }
        match &form.kind {
            FormKind::List(items)
            | FormKind::Vector(items)
            | FormKind::Map(items)
            | FormKind::Set(items)
            | FormKind::ShortFn(items) => stack.extend(items),
            FormKind::Quote(inner) => stack.push(inner),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The span of the first occurrence of `needle` in `text`, as the reader would give it.
    fn span_of(text: &str, needle: &str) -> Span {
        let start = text.find(needle).unwrap();
        let line = text[..start].matches('\n').count() as u32 + 1;
        let column = text[..start].rsplit('\n').next().unwrap().chars().count() as u32 + 1;
        Span { start: start as u32, end: (start + needle.len()) as u32, line, column }
    }

    #[test]
    fn an_error_inside_an_earlier_definition_points_at_it() {
        let mut defs = Definitions::default();
        let def = "(defn f [a]\n  (/ 1 a))";
        defs.record(def, &["f".into()]);
        match defs.locate(span_of(def, "(/ 1 a)"), "(f 0)") {
            Origin::Definition(d) => assert_eq!((d.names.as_slice(), d.text.as_str()), (&["f".to_string()][..], def)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_current_input_wins_when_it_has_the_form() {
        let mut defs = Definitions::default();
        defs.record("(def x (/ 1 2))", &["x".into()]);
        let input = "(def y (/ 1 0))";
        assert_eq!(defs.locate(span_of(input, "(/ 1 0)"), input), Origin::Input);
    }

    #[test]
    fn the_newest_definition_of_a_name_is_the_one_kept() {
        let mut defs = Definitions::default();
        defs.record("(defn f [a] (/ 1 a))", &["f".into()]);
        defs.record("(defn g [] 1)", &["g".into()]);
        defs.record("(defn f [a] (/ 2 a))", &["f".into()]);
        let texts: Vec<&str> = defs.entries.iter().map(|d| d.text.as_str()).collect();
        assert_eq!(texts, ["(defn g [] 1)", "(defn f [a] (/ 2 a))"]);
        let newest = "(defn f [a] (/ 2 a))";
        match defs.locate(span_of(newest, "(/ 2 a)"), "(f 0)") {
            Origin::Definition(d) => assert_eq!(d.text, newest),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_span_that_matches_nothing_is_the_current_input() {
        let defs = Definitions::default();
        let span = Span { start: 40, end: 45, line: 3, column: 2 };
        assert_eq!(defs.locate(span, "(f 0)"), Origin::Input);
    }

    #[test]
    fn a_form_start_is_a_weaker_match_than_an_exact_span() {
        let mut defs = Definitions::default();
        defs.record("(defn h [x] (->> x (map inc)))", &["h".into()]);
        // a rewritten form keeps its start but not its end
        let text = "(defn h [x] (->> x (map inc)))";
        let s = span_of(text, "(->> x (map inc))");
        let shifted = Span { end: s.end - 3, ..s };
        assert!(matches!(defs.locate(shifted, "(h 1)"), Origin::Definition(_)));
    }
}
