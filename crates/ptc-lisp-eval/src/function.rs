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
pub type NativeBody = dyn Fn(&mut BuiltinContext, &[Value], &mut [Value]) -> EvalResult + Send + Sync;

/// A callable value.
pub enum Function {
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
    /// An infinite sequence (`(range)`, `iterate`...), consumed lazily by bounding consumers.
    Lazy(Arc<crate::lazy::LazySeq>),
    /// `(reduced x)`: ends a `reduce` or a transduction early with `x`.
    Reduced(Value),
}

/// A user closure: compiled lambda plus captured values.
pub struct Closure {
    /// The compiled body.
    pub lambda: Arc<Lambda>,
    /// Captured values, indexed by `Node::Capture`.
    pub captures: Vec<Value>,
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
        Value::Func(Arc::new(Function::Native { name, held, body: Box::new(body) }))
    }

    /// Calls `visit` with every value this function holds: a closure's captures, a native
    /// function's held values (and its state now), the value inside `reduced`, the values
    /// a lazy sequence was built from (its inner steps as function values).
    pub(crate) fn each_held(&self, visit: &mut dyn FnMut(Value)) {
        match self {
            Function::Builtin(_) | Function::Tool(_) => {}
            Function::Closure(c) => c.captures.iter().cloned().for_each(visit),
            Function::Native { held, .. } => held.each(visit),
            Function::Lazy(l) => l.each_held(visit),
            Function::Reduced(v) => visit(v.clone()),
        }
    }
}

impl Drop for Function {
    /// What a function holds is dropped by `release`, so a chain of functions capturing
    /// functions (or deep data) drops on any thread.
    fn drop(&mut self) {
        match self {
            Function::Builtin(_) | Function::Tool(_) | Function::Lazy(_) => {}
            Function::Closure(c) => crate::release::release(std::mem::take(&mut c.captures)),
            Function::Native { held, body, .. } => crate::release::release((
                std::mem::take(held),
                std::mem::replace(
                    body,
                    Box::new(|_: &mut BuiltinContext, _: &[Value], _: &mut [Value]| Ok(Value::Nil)),
                ),
            )),
            Function::Reduced(v) => crate::release::release(std::mem::take(v)),
        }
    }
}

/// The values a native function holds: fixed when it was built, plus the state of a
/// stateful transducer step (`dedupe`, `distinct`, `partition-all`), which changes as it
/// runs.
#[derive(Default)]
pub struct Held {
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

impl StepState for std::sync::Mutex<Vec<Value>> {
    fn each(&self, visit: &mut dyn FnMut(Value)) {
        // a poisoned lock still holds its values
        let held: Vec<Value> = self.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        held.into_iter().for_each(visit);
    }
}

impl StepState for std::sync::Mutex<Option<Value>> {
    fn each(&self, visit: &mut dyn FnMut(Value)) {
        let held = self.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        held.into_iter().for_each(visit);
    }
}

impl StepState for std::sync::Mutex<std::collections::HashSet<Value>> {
    fn each(&self, visit: &mut dyn FnMut(Value)) {
        let held: Vec<Value> = self.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().cloned().collect();
        held.into_iter().for_each(visit);
    }
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Function::Builtin(b) => write!(f, "#<builtin {}>", b.name),
            Function::Closure(c) => write!(f, "#fn[{}]", c.lambda.param_names.join(" ")),
            Function::Native { name, .. } => write!(f, "#<fn {name}>"),
            Function::Tool(n) => write!(f, "#<tool {n}>"),
            Function::Lazy(l) => write!(f, "#<infinite {}>", l.label),
            Function::Reduced(v) => write!(f, "#<reduced {v:?}>"),
        }
    }
}
