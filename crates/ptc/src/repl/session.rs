//! One REPL session's state and what each input prints: definitions that persist, `*1 *2
//! *3`, `*e`, `#'user/x` for vars, and errors located in the right text.

use std::sync::Arc;

use ptc_lisp_eval::value::PMap;
use ptc_lisp_eval::{Cancel, CompileEnv, Engine, EvalError, Host, Limits, Memory, NoTools, RunInput, RunResult, Value};

use super::origin::{Definitions, Origin};
use crate::envelope::render_error;

/// The name of the last error, as programs write it.
const LAST_ERROR: &str = "*e";

/// What one input prints: lines for stdout (prints, then the result) and, when it failed,
/// the error for stderr.
#[derive(Debug, Default, PartialEq)]
pub struct Reply {
    /// Printed lines and the result.
    pub out: Vec<String>,
    /// The error, rendered with its source line and caret.
    pub err: Option<String>,
}

/// The state that carries from one input to the next.
pub struct Session {
    engine: Engine,
    context: Arc<PMap>,
    upstreams: Option<ptc_mcp_aggregator::UpstreamRuntime>,
    memory: Memory,
    /// The last three results, oldest first (`*1` is the last).
    recent: Vec<Value>,
    /// `*e`: nil until an input fails.
    last_error: Value,
    definitions: Definitions,
}

impl Session {
    /// A session running every input under `limits`, with `context` as `data/`.
    pub fn new(limits: Limits, context: Arc<PMap>, upstreams: Option<ptc_mcp_aggregator::UpstreamRuntime>) -> Self {
        Session {
            engine: Engine::new(limits),
            context,
            upstreams,
            memory: Memory::default(),
            recent: Vec::new(),
            last_error: Value::Nil,
            definitions: Definitions::default(),
        }
    }

    /// A fresh host per input, so each input has its own upstream call budget.
    fn host(&self) -> Arc<dyn Host> {
        match &self.upstreams {
            Some(rt) => Arc::new(rt.program_host()),
            None => Arc::new(NoTools),
        }
    }

    /// The context keys (`data/<key>`).
    pub fn data_keys(&self) -> Vec<String> {
        self.context.keys().filter_map(|k| k.as_str().map(str::to_string)).collect()
    }

    /// The tools programs may call (`tool/<name>`).
    pub fn tool_names(&self) -> Vec<String> {
        self.host().tools().into_iter().filter(|t| t.exposure.to_programs()).map(|t| t.name).collect()
    }

    /// The user's definitions.
    pub fn user_names(&self) -> Vec<String> {
        self.memory.names().map(|k| k.to_string()).filter(|k| k != LAST_ERROR).collect()
    }

    /// Evaluates one input.
    #[cfg(test)]
    pub fn eval(&mut self, source: &str) -> Reply {
        self.eval_with(source, source, &Cancel::new())
    }

    /// Evaluates one input; cancelling `cancel` (Ctrl-C) stops it with a `cancelled` error.
    /// `entry` is the text the user typed, which `source` (one of its forms, blanked around
    /// so that positions agree) came from: errors show the entry's line.
    pub fn eval_with(&mut self, source: &str, entry: &str, cancel: &Cancel) -> Reply {
        let host = self.host();
        let mut memory = self.memory.clone();
        // *e is offered only to inputs that mention it, so it never shows up in (dir user)
        if source.contains(LAST_ERROR) {
            memory.insert(LAST_ERROR, self.last_error.clone());
        }
        let input =
            RunInput { context: self.context.clone(), memory, turn_history: self.recent.clone(), strict_data: false };
        let program = match self.engine.compile(source, &CompileEnv::for_run(&input, host.as_ref())) {
            Ok(p) => p,
            Err(e) => {
                // a compile error is always in the text just entered
                let err = render_error(&e, entry);
                self.last_error = error_value(&e);
                return Reply { out: Vec::new(), err: Some(err) };
            }
        };
        let mut outcome = self.engine.run(&program, input, host.as_ref(), cancel);
        let mut reply = Reply { out: std::mem::take(&mut outcome.prints), err: None };
        match outcome.result {
            RunResult::Value(v) | RunResult::Returned(v) => {
                match &v {
                    Value::Var(name) if !name.contains('/') => reply.out.push(format!("#'user/{name}")),
                    // (doc "server/tool") printed its text above and returns it too
                    Value::Str(_) if source.trim_start().starts_with("(doc ") => {}
                    _ => reply.out.push(outcome.printed),
                }
                self.recent.push(v);
                if self.recent.len() > 3 {
                    self.recent.remove(0);
                }
                if !program.defined_names().iter().any(|n| n == LAST_ERROR) {
                    outcome.memory.remove(LAST_ERROR);
                }
                self.memory = outcome.memory;
                self.definitions.record(source, program.defined_names());
            }
            RunResult::Failed(v) => {
                let message = format!("the program called (fail {})", outcome.printed);
                reply.err = Some(format!("Fail: {}", outcome.printed));
                self.last_error = Value::map([
                    (Value::kw("reason"), Value::str(ptc_lisp_eval::ErrorKind::Fail.as_str())),
                    (Value::kw("message"), Value::str(message)),
                    (Value::kw("value"), v),
                ]);
            }
            RunResult::Error(e) => {
                reply.err = Some(self.render(&e, source, entry));
                self.last_error = error_value(&e);
            }
        }
        reply
    }

    /// The error with the line it points at: in this input, or in the earlier input that
    /// defined the function it happened in.
    fn render(&self, e: &EvalError, source: &str, entry: &str) -> String {
        let Some(span) = e.span else { return render_error(e, entry) };
        match self.definitions.locate(span, source) {
            Origin::Input => render_error(e, entry),
            Origin::Definition(d) => {
                let text = render_error(e, &d.text);
                let names = d.names.join(", ");
                match text.split_once('\n') {
                    Some((head, rest)) => format!("{head}\n in {names}, defined in an earlier input:\n{rest}"),
                    None => format!("{text} (in {names}, defined in an earlier input)"),
                }
            }
        }
    }
}

/// `*e`: `{:reason "arithmetic_error" :message "..." :line L :column C}` (the same
/// reason names as `ptc eval --output json`; the location when the error has one).
fn error_value(e: &EvalError) -> Value {
    let mut entries = vec![
        (Value::kw("reason"), Value::str(e.kind.as_str())),
        (Value::kw("message"), Value::str(e.message.as_str())),
    ];
    if let Some(span) = e.span {
        entries.push((Value::kw("line"), Value::Int(i64::from(span.line))));
        entries.push((Value::kw("column"), Value::Int(i64::from(span.column))));
    }
    Value::map(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Session {
        let context = ptc_lisp_eval::json::parse_context(r#"{"orders": [{"id": 1}]}"#, 1 << 20).unwrap();
        Session::new(Limits::default(), Arc::new(context), None)
    }

    fn out(reply: Reply) -> String {
        assert_eq!(reply.err, None, "unexpected error");
        reply.out.join("\n")
    }

    #[test]
    fn definitions_print_as_user_vars_and_persist() {
        let mut s = session();
        assert_eq!(out(s.eval("(def x 41)")), "#'user/x");
        assert_eq!(out(s.eval("(defn f [a] (inc a))")), "#'user/f");
        assert_eq!(out(s.eval("(f x)")), "42");
        let mut names = s.user_names();
        names.sort();
        assert_eq!(names, ["f", "x"]);
    }

    #[test]
    fn prints_come_before_the_result_and_star_1_holds_it() {
        let mut s = session();
        assert_eq!(out(s.eval("(do (println \"hi\") 1)")), "hi\n1");
        s.eval("2");
        s.eval("3");
        assert_eq!(out(s.eval("[*1 *2 *3]")), "[3 2 1]");
    }

    #[test]
    fn star_e_is_nil_then_the_last_error_as_a_map() {
        let mut s = session();
        assert_eq!(out(s.eval("*e")), "nil");
        let reply = s.eval("(+ 1 :a)");
        assert!(reply.err.as_deref().unwrap_or("").starts_with("Eval error:"), "{reply:?}");
        assert_eq!(out(s.eval("(:reason *e)")), "\"type_error\"");
        assert_eq!(out(s.eval("(string? (:message *e))")), "true");
        assert_eq!(out(s.eval("[(:line *e) (:column *e)]")), "[1 1]");
        // a successful input does not clear it, and it is no user definition
        assert_eq!(out(s.eval("(:reason *e)")), "\"type_error\"");
        assert!(s.user_names().is_empty());
        assert_eq!(out(s.eval("(dir user)")), "[]");
    }

    #[test]
    fn star_e_holds_analysis_errors_and_fail_values() {
        let mut s = session();
        assert!(s.eval("(nope 1)").err.is_some());
        assert_eq!(out(s.eval("(:reason *e)")), "\"unbound_var\"");
        let reply = s.eval("(fail {:why 1})");
        assert_eq!(reply.err.as_deref(), Some("Fail: {:why 1}"));
        assert_eq!(out(s.eval("[(:reason *e) (:value *e)]")), "[\"fail\" {:why 1}]");
    }

    #[test]
    fn context_data_and_keys_are_there() {
        let mut s = session();
        assert_eq!(s.data_keys(), ["orders"]);
        assert_eq!(out(s.eval("(:id (first data/orders))")), "1");
        assert!(s.tool_names().is_empty());
    }

    #[test]
    fn an_error_inside_an_earlier_definition_shows_that_definition() {
        let mut s = session();
        s.eval("(def base 1)");
        s.eval("(defn ratio [a]\n  (/ base a))");
        let err = s.eval("(ratio 0)").err.unwrap_or_default();
        let lines: Vec<&str> = err.lines().collect();
        assert!(lines[0].starts_with("Eval error: division by zero"), "{err}");
        assert_eq!(lines[1], " in ratio, defined in an earlier input:", "{err}");
        assert_eq!(lines[2], " 2 |   (/ base a))", "{err}");
        assert_eq!(lines[3], "   |   ^ (line 2, column 3)", "{err}");
    }

    #[test]
    fn an_error_in_the_input_itself_points_into_it() {
        let mut s = session();
        s.eval("(defn ratio [a] (/ 1 a))");
        let err = s.eval("(let [x 0]\n  (+ 1 (/ 2 x)))").err.unwrap_or_default();
        assert!(err.contains(" 2 |   (+ 1 (/ 2 x)))\n"), "{err}");
        assert!(!err.contains("earlier input"), "{err}");
    }

    #[test]
    fn a_failed_input_keeps_the_earlier_definitions() {
        let mut s = session();
        s.eval("(def x 1)");
        assert!(s.eval("(do (def x 2) (/ 1 0))").err.is_some());
        assert_eq!(out(s.eval("x")), "1");
    }
}
