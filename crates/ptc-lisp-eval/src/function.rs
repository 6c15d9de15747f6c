//! Function values: builtins, closures and native composed functions.

use std::fmt;
use std::sync::Arc;

use crate::builtins::Builtin;
use crate::error::EvalResult;
use crate::interp::Interp;
use crate::node::Lambda;
use crate::value::Value;

/// The body of a native composed function (`partial`, `comp`, `juxt`...).
pub type NativeBody = dyn Fn(&mut Interp, &mut [Value]) -> EvalResult + Send + Sync;

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
    /// Wraps a native closure as a function value.
    pub fn native(
        name: &'static str,
        body: impl Fn(&mut Interp, &mut [Value]) -> EvalResult + Send + Sync + 'static,
    ) -> Value {
        Value::Func(Arc::new(Function::Native { name, body: Box::new(body) }))
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
