//! Function values: builtins, closures and native composed functions.

use std::fmt;
use std::sync::Arc;

use crate::builtins::Builtin;
use crate::builtins::context::BuiltinContext;
use crate::error::EvalResult;
use crate::node::Lambda;
use crate::value::Value;

/// The body of a native composed function (`partial`, `comp`, `juxt`...): it gets the
/// interpreter, the values the function holds ([`Held`]'s fixed values, in order) and the
/// call's arguments.
pub(crate) type NativeBody = dyn Fn(&mut BuiltinContext, &[Value], &mut [Value]) -> EvalResult + Send + Sync;

/// A function value: a builtin, a user function, a function a builtin made (`partial`,
/// `comp`...) or a host tool. Opaque: an embedder can ask what kind it is
/// ([`Function::kind`]) and make builtin and tool values, but never reaches the analysed
/// body of a user function or the interpreter a builtin runs on.
pub struct Function(FnRepr);

/// What a function value is, as an embedder sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FunctionKind<'a> {
    /// A registry builtin, by its canonical name (`map`, `join`).
    Builtin(&'static str),
    /// A user function (`fn`, `defn`, `#(...)`) and how many values it captured.
    Closure {
        /// Name of a named `fn`/`defn`, if any.
        name: Option<&'a str>,
        /// How many values it captured from its surroundings (`0`: it can be rebuilt from
        /// its source alone).
        captures: usize,
    },
    /// A function a builtin built (`partial`, `comp`, `complement`...), by that builtin's
    /// name.
    Native(&'static str),
    /// A host tool used as a value, by its name.
    Tool(&'a str),
}

impl Function {
    /// The builtin `b` (an entry of [`crate::registry`]) as a function.
    pub fn builtin(b: &'static Builtin) -> Function {
        Function(FnRepr::Builtin(b))
    }

    /// The host tool `name` as a function (a call goes to the [`crate::Host`]).
    pub fn tool(name: impl Into<Arc<str>>) -> Function {
        Function(FnRepr::Tool(name.into()))
    }

    /// What kind of function this is.
    pub fn kind(&self) -> FunctionKind<'_> {
        match &self.0 {
            FnRepr::Builtin(b) => FunctionKind::Builtin(b.name),
            FnRepr::Closure(c) => FunctionKind::Closure { name: c.lambda.name.as_deref(), captures: c.captures.len() },
            FnRepr::Native { name, .. } => FunctionKind::Native(name),
            FnRepr::Tool(name) => FunctionKind::Tool(name),
        }
    }

    /// A shared function value of `repr`.
    pub(crate) fn arc(repr: FnRepr) -> Arc<Function> {
        Arc::new(Function(repr))
    }

    /// What the function is inside the crate.
    pub(crate) fn repr(&self) -> &FnRepr {
        &self.0
    }
}

/// The kinds of function values, inside the crate.
pub(crate) enum FnRepr {
    /// A registry builtin.
    Builtin(&'static Builtin),
    /// A user closure.
    Closure(Closure),
    /// A function built by a builtin (`partial`, `comp`, `complement`...).
    Native {
        /// Display name (`partial`, `comp`).
        name: &'static str,
        /// The values the body holds, where walks can see them.
        held: Held,
        /// Implementation.
        body: Box<NativeBody>,
    },
    /// A host tool used as a value.
    Tool(Arc<str>),
}

/// A user closure: compiled lambda plus captured values.
pub(crate) struct Closure {
    /// The compiled body.
    pub(crate) lambda: Arc<Lambda>,
    /// Captured values, indexed by `Node::Capture`.
    pub(crate) captures: Vec<Value>,
    /// For a function of a `letfn`: every function of its group (it is one of them), which
    /// share its captures; `Node::Sibling` makes one of them.
    pub(crate) group: Option<Arc<[Arc<Lambda>]>>,
}

impl Function {
    /// Wraps a native closure as a function value. The body gets the values in `held` with
    /// every call, so it need not capture any: what a function holds stays where the
    /// engine's nesting check can see it. (A body that does capture a value must list a
    /// clone in `held` too.)
    pub(crate) fn native(
        name: &'static str,
        held: Held,
        body: impl Fn(&mut BuiltinContext, &[Value], &mut [Value]) -> EvalResult + Send + Sync + 'static,
    ) -> Value {
        Value::Func(Function::arc(FnRepr::Native { name, held, body: Box::new(body) }))
    }

    /// Calls `visit` with every value this function holds: a closure's captures, a native
    /// function's held values (and its state now), the value inside `reduced`, the values
    /// a lazy sequence was built from (its inner steps as function values).
    pub(crate) fn each_held(&self, visit: &mut dyn FnMut(Value)) {
        match &self.0 {
            FnRepr::Builtin(_) | FnRepr::Tool(_) => {}
            FnRepr::Closure(c) => c.captures.iter().cloned().for_each(visit),
            FnRepr::Native { held, .. } => held.each(visit),
        }
    }
}

impl Drop for FnRepr {
    /// What a function holds is dropped by `release`, so a chain of functions capturing
    /// functions (or deep data) drops on any thread.
    fn drop(&mut self) {
        match self {
            FnRepr::Builtin(_) | FnRepr::Tool(_) => {}
            FnRepr::Closure(c) => crate::release::release(std::mem::take(&mut c.captures)),
            FnRepr::Native { held, body, .. } => crate::release::release((
                std::mem::take(held),
                std::mem::replace(
                    body,
                    Box::new(|_: &mut BuiltinContext, _: &[Value], _: &mut [Value]| Ok(Value::Nil)),
                ),
            )),
        }
    }
}

/// The values a native function holds: fixed when it was built, plus the state of a
/// stateful transducer step (`dedupe`, `distinct`, `partition-all`), which changes as it
/// runs.
#[derive(Default)]
pub(crate) struct Held {
    fixed: Vec<Value>,
    state: Option<Arc<dyn StepState>>,
}

impl Held {
    /// The values a function holds for good.
    pub(crate) fn values(fixed: Vec<Value>) -> Self {
        Held { fixed, state: None }
    }

    /// Nothing.
    pub(crate) fn none() -> Self {
        Held::default()
    }

    /// One more fixed value.
    pub(crate) fn with(mut self, v: Value) -> Self {
        self.fixed.push(v);
        self
    }

    /// State the function changes as it runs.
    pub(crate) fn with_state(mut self, state: Arc<dyn StepState>) -> Self {
        self.state = Some(state);
        self
    }

    /// The fixed values, in the order they were given.
    pub(crate) fn fixed(&self) -> &[Value] {
        &self.fixed
    }

    fn each(&self, visit: &mut dyn FnMut(Value)) {
        self.fixed.iter().cloned().for_each(&mut *visit);
        if let Some(s) = &self.state {
            s.each(visit);
        }
    }
}

/// The changing state of a transducer step, readable by walks.
pub(crate) trait StepState: Send + Sync {
    /// Calls `visit` with (clones of) the values held now.
    fn each(&self, visit: &mut dyn FnMut(Value));
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            FnRepr::Builtin(b) => write!(f, "#<builtin {}>", b.name),
            FnRepr::Closure(c) => write!(f, "#fn[{}]", c.lambda.param_names.join(" ")),
            FnRepr::Native { name, .. } => write!(f, "#<fn {name}>"),
            FnRepr::Tool(n) => write!(f, "#<tool {n}>"),
        }
    }
}
