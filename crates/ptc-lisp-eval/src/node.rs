//! The analyzed program: forms with every symbol resolved to a slot, a global, a builtin,
//! a tool or a data key. The interpreter walks this tree.

use std::sync::Arc;

use ptc_lisp_syntax::Span;

use crate::builtins::Builtin;
use crate::value::Value;

/// An analyzed expression.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    /// A literal.
    Const(Value),
    /// A local in the current frame.
    Local(u32),
    /// The only read of a local: its value is moved out of the slot (see `moves`).
    LocalMove(u32),
    /// A value captured by the current closure.
    Capture(u32),
    /// The current closure itself (named `fn`).
    SelfFn,
    /// A function of the `letfn` group the current function belongs to, by index (made
    /// from the group and captures of the function in the self slot).
    Sibling(u32),
    /// A user definition (looked up at run time), falling back to a builtin it shadows.
    Global(Arc<str>, Option<&'static Builtin>, Span),
    /// A builtin used as a value.
    Builtin(&'static Builtin),
    /// `data/key`.
    Data(Arc<str>, Span),
    /// A tool used as a value (`tool/x` not in call position).
    ToolRef(Arc<str>),
    /// `*1`, `*2`, `*3`.
    TurnHistory(u8),
    /// `[...]` with non-constant members.
    Vector(Vec<Node>),
    /// `{...}` with non-constant members.
    Map(Vec<(Node, Node)>),
    /// `{...}` whose keys are all constants (and some value is not): the keys are sorted
    /// once, at analysis, so building the map sorts nothing.
    KeyedMap(Box<KeyedMap>),
    /// `#{...}` with non-constant members.
    Set(Vec<Node>),
    /// `(if c t e)`.
    If(Box<(Node, Node, Node)>),
    /// `(do ...)` and implicit bodies.
    Do(Vec<Node>),
    /// `(and ...)`.
    And(Vec<Node>),
    /// `(or ...)`.
    Or(Vec<Node>),
    /// Sequential bindings then a body.
    Let(Vec<(Pattern, Node)>, Box<Node>),
    /// `loop`: initial bindings, then the body re-run on `recur`.
    Loop(Box<LoopNode>),
    /// `recur` with its arguments.
    Recur(Vec<Node>),
    /// `(fn ...)`: lambda plus where each captured value comes from.
    Fn(Arc<Lambda>, Vec<CaptureFrom>),
    /// Call of a builtin known at analysis time.
    CallBuiltin(&'static Builtin, Vec<Node>, Span),
    /// `(:key target)` / `(:key target default)`: keyword lookup without a call.
    GetKey(Value, Box<Node>, Option<Box<Node>>),
    /// A two-argument comparison of the core library (`=`, `<`...), evaluated without
    /// cloning operands that are constants, locals or keyword lookups.
    Compare(CmpOp, Box<(Node, Node)>),
    /// `(compare [a b] [c d])` with two vector literals of one length, or `(= [a b] [c
    /// d])` / `(not= ...)` with two vector literals: the items are evaluated in order and
    /// charged as the two vectors would be, then compared pair by pair without building
    /// either vector. The span is the call's (for the errors of `compare`).
    CompareItems(ItemsCmp, Box<(Vec<Node>, Vec<Node>)>, Span),
    /// A one- or two-argument arithmetic builtin (`+ - * rem quot mod inc dec`): integers
    /// (and floats for `+ - * inc dec`) are computed in place; anything else, and every
    /// overflow or error, goes through the builtin itself.
    Arith(ArithOp, &'static Builtin, Box<(Node, Option<Node>)>, Span),
    /// A one-argument call of a builtin that declares a test (`zero?`, `nil?`, `not`):
    /// answered in place from the argument where it lies, else by the builtin.
    Test(&'static Builtin, Box<Node>, Span),
    /// A fused chain of `map`/`filter`/`remove`/`keep` and its consumer (see `fusion`).
    Pipeline(Box<crate::fusion::Pipeline>),
    /// Call of a computed function.
    Call(Box<Node>, Vec<Node>, Span),
    /// A `letfn` function calling a function of its group (itself or a sibling) by name:
    /// no function value is made for the call.
    CallSibling(u32, Vec<Node>, Span),
    /// `(letfn [(f [x] ...) (g [y] ...)] body...)`: binds the group's functions, then runs
    /// the body.
    Letfn(Box<LetfnNode>),
    /// `(tool/name ...)`.
    ToolCall(Arc<str>, Vec<Node>, Span),
    /// `(def name doc? value)`; `defonce` skips evaluation when bound.
    Def {
        /// Defined name.
        name: Arc<str>,
        /// Docstring.
        doc: Option<Arc<str>>,
        /// Value expression.
        value: Box<Node>,
        /// `defonce`.
        once: bool,
    },
    /// `case` with constant dispatch.
    Case(Box<CaseNode>),
    /// `for` / `doseq`.
    For(Box<ForNode>),
    /// `(return v)`.
    Return(Box<Node>),
    /// `(fail v)`.
    Fail(Box<Node>),
    /// Raises an error (a call of a multi-arity function that has no matching arity).
    Raise(crate::error::ErrorKind, Arc<str>),
}

/// Where a captured value comes from in the enclosing frame.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CaptureFrom {
    /// Enclosing frame's local slot.
    Local(u32),
    /// Enclosing closure's capture.
    Capture(u32),
    /// Enclosing closure itself.
    SelfFn,
    /// A function of the enclosing closure's `letfn` group, by index.
    Sibling(u32),
}

/// A `letfn` form. Its functions share one list of captured values and refer to each
/// other through the group (by index, [`Node::Sibling`]), never by holding each other, so
/// mutual recursion makes no function value per call and no reference cycle.
#[derive(Debug, Clone)]
pub(crate) struct LetfnNode {
    /// The functions' bodies, in the order written.
    pub group: Arc<[Arc<Lambda>]>,
    /// Where each value the group captures comes from (every function's captures index
    /// this one list).
    pub captures: Vec<CaptureFrom>,
    /// The local slot each function is bound to for the body.
    pub slots: Vec<u32>,
    /// Body.
    pub body: Node,
}

/// A compiled function body.
#[derive(Debug)]
pub(crate) struct Lambda {
    /// Name for self-reference and printing (named fn / defn).
    pub name: Option<Arc<str>>,
    /// Fixed parameter patterns.
    pub params: Vec<Pattern>,
    /// Rest parameter (`& rest`).
    pub rest: Option<Pattern>,
    /// Parameter names for printing `#fn[x y]`.
    pub param_names: Vec<String>,
    /// Number of local slots the frame needs (captures and the self slot follow them).
    pub frame_size: u32,
    /// The body refers to the function itself (named `fn`), so a call stores it in the
    /// slot after the captures.
    pub uses_self: bool,
    /// The parameters are plain names that stay in their slots for the whole body (never
    /// moved out, never rebound by `recur`): a caller may lend the arguments and take
    /// them back after the call (`Interp::apply_lent`).
    pub keeps_params: bool,
    /// The parameters are plain names in the frame's first slots, in order (`[a b]`: slot
    /// 0 and 1), with no `& rest`: a call pushes the arguments as the frame's first slots
    /// instead of filling the frame with nil and binding each one.
    pub plain_params: bool,
    /// Body.
    pub body: Node,
}

/// A map literal with constant keys: `{:id i :name n}`.
#[derive(Debug, Clone)]
pub(crate) struct KeyedMap {
    /// The keys in the map's order (sorted by `Value::cmp`, no two equal).
    pub keys: Vec<Value>,
    /// The value expressions in the order written (the order they are evaluated in),
    /// each with the index of its key in `keys`.
    pub values: Vec<(u32, Node)>,
}

/// A `loop` form.
#[derive(Debug, Clone)]
pub(crate) struct LoopNode {
    /// Binding patterns and initial values.
    pub bindings: Vec<(Pattern, Node)>,
    /// Body.
    pub body: Node,
}

/// A `case` form.
#[derive(Debug, Clone)]
pub(crate) struct CaseNode {
    /// The dispatch expression.
    pub expr: Node,
    /// Constant tests (a grouped test lists several constants) and their results.
    pub clauses: Vec<(Vec<Value>, Node)>,
    /// Default result.
    pub default: Option<Node>,
}

/// A `for` or `doseq` comprehension.
#[derive(Debug, Clone)]
pub(crate) struct ForNode {
    /// Binding clauses in order.
    pub clauses: Vec<ForClause>,
    /// Body.
    pub body: Node,
    /// `doseq` discards results and returns nil.
    pub discard: bool,
}

/// One clause of a `for`.
#[derive(Debug, Clone)]
pub(crate) enum ForClause {
    /// `pattern coll`.
    Bind(Pattern, Node),
    /// `:let [...]`.
    Let(Vec<(Pattern, Node)>),
    /// `:when test`.
    When(Node),
    /// `:while test`.
    While(Node),
}

/// A binding pattern (destructuring).
#[derive(Debug, Clone)]
pub(crate) enum Pattern {
    /// Bind to a slot.
    Bind(u32),
    /// `_`.
    Ignore,
    /// `[a b & rest :as all]`.
    Seq {
        /// Positional patterns.
        items: Vec<Pattern>,
        /// `& rest` pattern.
        rest: Option<Box<Pattern>>,
        /// `:as` slot.
        as_slot: Option<u32>,
    },
    /// `{:keys [..] :strs [..] k-pattern :key :or {..} :as m}`.
    Map {
        /// Key bindings.
        entries: Vec<MapBinding>,
        /// `:as` slot.
        as_slot: Option<u32>,
    },
}

/// One key binding of a map pattern.
#[derive(Debug, Clone)]
pub(crate) struct MapBinding {
    /// The key to look up (flexible access applies).
    pub key: Value,
    /// What to bind the found value to.
    pub pattern: Pattern,
    /// `:or` default.
    pub default: Option<Node>,
}

/// Comparison operators that get a dedicated node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    /// `=`
    Eq,
    /// `not=`
    NotEq,
    /// `<`
    Lt,
    /// `>`
    Gt,
    /// `<=`
    Le,
    /// `>=`
    Ge,
}

/// What a [`Node::CompareItems`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ItemsCmp {
    /// `compare`: Clojure's -1/0/1 (or a string difference) of the two vectors.
    Compare,
    /// `=`
    Eq,
    /// `not=`
    NotEq,
}

impl ItemsCmp {
    /// The comparison a builtin makes of two vector literals, when it gets this node:
    /// `compare` only when both have the same number of items (a shorter vector sorts
    /// first without its items being compared).
    pub(crate) fn of(b: &crate::builtins::Builtin, left: usize, right: usize) -> Option<ItemsCmp> {
        match b.compare {
            Some(CmpOp::Eq) => Some(ItemsCmp::Eq),
            Some(CmpOp::NotEq) => Some(ItemsCmp::NotEq),
            Some(_) => None,
            None if b.name == "compare" && left == right => Some(ItemsCmp::Compare),
            None => None,
        }
    }
}

/// Arithmetic builtins that get a dedicated node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArithOp {
    /// `(+ a b)`
    Add,
    /// `(- a b)`
    Sub,
    /// `(* a b)`
    Mul,
    /// `(rem a b)`
    Rem,
    /// `(quot a b)`
    Quot,
    /// `(mod a b)`
    Mod,
    /// `(inc a)`
    Inc,
    /// `(dec a)`
    Dec,
}

impl ArithOp {
    /// The operator a builtin declares (`.arith(..)` on its registry entry), when the
    /// call has that operator's operand count.
    pub(crate) fn of(b: &crate::builtins::Builtin, args: usize) -> Option<ArithOp> {
        b.arith.filter(|op| op.operands() == args)
    }

    /// How many operands the operator takes.
    pub(crate) const fn operands(self) -> usize {
        match self {
            ArithOp::Inc | ArithOp::Dec => 1,
            _ => 2,
        }
    }

    /// The result when both operands are numbers and nothing can go wrong; `None` sends
    /// the call to the builtin (other types, overflow, division by zero, `mod`/`rem`/`quot`
    /// of floats). The one table is [`ArithOp::fast_num`].
    #[inline(always)]
    pub(crate) fn fast(self, a: &Value, b: Option<&Value>) -> Option<Value> {
        let b = match b {
            Some(b) => Some(Num::of(b)?),
            None => None,
        };
        self.fast_num(Num::of(a)?, b).map(Num::value)
    }
    /// The in-place arithmetic on plain numbers, for [`ArithOp::fast`] and for nested
    /// arithmetic evaluated without building intermediate values. An integer meeting a
    /// float becomes a float, as in the builtins.
    #[inline(always)]
    pub(crate) fn fast_num(self, a: Num, b: Option<Num>) -> Option<Num> {
        match (self, a, b) {
            (ArithOp::Add, Num::Int(x), Some(Num::Int(y))) => x.checked_add(y).map(Num::Int),
            (ArithOp::Sub, Num::Int(x), Some(Num::Int(y))) => x.checked_sub(y).map(Num::Int),
            (ArithOp::Mul, Num::Int(x), Some(Num::Int(y))) => x.checked_mul(y).map(Num::Int),
            (ArithOp::Rem, Num::Int(x), Some(Num::Int(y))) if y != 0 => x.checked_rem(y).map(Num::Int),
            (ArithOp::Quot, Num::Int(x), Some(Num::Int(y))) if y != 0 => x.checked_div(y).map(Num::Int),
            (ArithOp::Mod, Num::Int(x), Some(Num::Int(y))) if x >= 0 && y > 0 => Some(Num::Int(x % y)),
            (ArithOp::Inc, Num::Int(x), None) => x.checked_add(1).map(Num::Int),
            (ArithOp::Dec, Num::Int(x), None) => x.checked_sub(1).map(Num::Int),
            (ArithOp::Add, Num::Float(x), Some(Num::Float(y))) => Some(Num::Float(x + y)),
            (ArithOp::Sub, Num::Float(x), Some(Num::Float(y))) => Some(Num::Float(x - y)),
            (ArithOp::Mul, Num::Float(x), Some(Num::Float(y))) => Some(Num::Float(x * y)),
            (ArithOp::Add, Num::Int(x), Some(Num::Float(y))) => Some(Num::Float(x as f64 + y)),
            (ArithOp::Add, Num::Float(x), Some(Num::Int(y))) => Some(Num::Float(x + y as f64)),
            (ArithOp::Sub, Num::Int(x), Some(Num::Float(y))) => Some(Num::Float(x as f64 - y)),
            (ArithOp::Sub, Num::Float(x), Some(Num::Int(y))) => Some(Num::Float(x - y as f64)),
            (ArithOp::Mul, Num::Int(x), Some(Num::Float(y))) => Some(Num::Float(x as f64 * y)),
            (ArithOp::Mul, Num::Float(x), Some(Num::Int(y))) => Some(Num::Float(x * y as f64)),
            (ArithOp::Inc, Num::Float(x), None) => Some(Num::Float(x + 1.0)),
            (ArithOp::Dec, Num::Float(x), None) => Some(Num::Float(x - 1.0)),
            _ => None,
        }
    }
}

/// A plain number: what nested arithmetic passes between its operations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num {
    /// An integer.
    Int(i64),
    /// A double.
    Float(f64),
}

impl Num {
    /// The number in `v`, if it is one.
    #[inline(always)]
    pub(crate) fn of(v: &Value) -> Option<Num> {
        match v {
            Value::Int(i) => Some(Num::Int(*i)),
            Value::Float(f) => Some(Num::Float(*f)),
            _ => None,
        }
    }

    /// As a value.
    #[inline(always)]
    pub(crate) fn value(self) -> Value {
        match self {
            Num::Int(i) => Value::Int(i),
            Num::Float(f) => Value::Float(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const OPS: [ArithOp; 8] = [
        ArithOp::Add,
        ArithOp::Sub,
        ArithOp::Mul,
        ArithOp::Rem,
        ArithOp::Quot,
        ArithOp::Mod,
        ArithOp::Inc,
        ArithOp::Dec,
    ];

    fn number() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<i64>().prop_map(Value::Int),
            (-20i64..20).prop_map(Value::Int),
            prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(-1i64), Just(0i64)].prop_map(Value::Int),
            any::<f64>().prop_map(Value::Float),
            (-20i64..20).prop_map(|i| Value::Float(i as f64 / 4.0)),
        ]
    }

    proptest! {
        #[test]
        fn fast_num_agrees_with_fast(op in 0usize..8, a in number(), b in number()) {
            let op = OPS[op];
            let b = if matches!(op, ArithOp::Inc | ArithOp::Dec) { None } else { Some(b) };
            let via_values = op.fast(&a, b.as_ref());
            let na = Num::of(&a).unwrap_or(Num::Int(0));
            let via_nums = op.fast_num(na, b.as_ref().and_then(Num::of)).map(Num::value);
            // compare bit patterns so NaN results agree too
            let bits = |v: &Option<Value>| match v {
                Some(Value::Float(f)) => Some(format!("f{}", f.to_bits())),
                Some(Value::Int(i)) => Some(format!("i{i}")),
                Some(_) => Some("other".to_string()),
                None => None,
            };
            prop_assert_eq!(bits(&via_values), bits(&via_nums));
        }
    }
}
