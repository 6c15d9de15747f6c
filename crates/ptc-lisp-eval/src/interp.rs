//! The interpreter: walks analyzed nodes with a slot stack, meters fuel and memory.

use std::sync::Arc;
use std::time::Instant;

use smallvec::SmallVec;

use crate::builtins::brief;
use crate::builtins::compare_values;
use crate::error::{ErrorKind, EvalError, EvalResult, Flow, err};
use crate::function::{Closure, FnRepr, Function};
use crate::host::{CallCx, Discovery, Host, ToolCall, ToolCallRecord, ToolErrorKind};
use crate::limits::{Limits, SharedBudget, cost};
use crate::memory::Memory;
use crate::node::{CaptureFrom, CmpOp, ForClause, ForNode, ItemsCmp, Lambda, Node, Num, Pattern};
use crate::prints::{Chunk, Mark, Prints};
use crate::stack;
use crate::tool_keys::tool_args;
use crate::value::{PMap, PSet, PVector, Value};

/// How many fuel units pass between deadline checks.
const CHECK_EVERY: u64 = 1024;

/// A `data/` value found in the context map `owner` under the key node `key`.
struct DataHit {
    owner: Arc<PMap>,
    key: Arc<str>,
    value: Value,
}

/// Evaluation state of one run (or one parallel branch).
pub(crate) struct Interp<'h> {
    stack: Vec<Value>,
    base: usize,
    /// Absolute stack index of the current closure's first captured value.
    capture_base: usize,
    /// Absolute stack index holding the current closure itself (named fns).
    self_slot: usize,
    recur_args: Vec<Value>,
    depth: u32,
    fuel: u64,
    /// Fuel burned before this interpreter started (a branch: its parent's at the fork).
    fuel_base: u64,
    /// Fuel of the earlier calls of a parallel branch (see [`Interp::begin_branch_call`]).
    fuel_done: u64,
    /// The fuel count at which `tick` next checks the deadline and `max_fuel`.
    next_check: u64,
    /// User definitions (`def`), persisted by the host between runs.
    globals: Memory,
    /// Context data (`data/`).
    data: Arc<PMap>,
    /// `data/` values read in place by arithmetic and comparisons, by key.
    data_cache: [std::cell::OnceCell<DataHit>; 4],
    /// Missing `data/` keys are errors instead of nil.
    strict_data: bool,
    /// Results of earlier turns, oldest first (`*1` is the last).
    turn_history: Arc<Vec<Value>>,
    /// The host (tools, discovery).
    host: &'h dyn Host,
    /// Limits of this run.
    limits: Arc<Limits>,
    /// Deadline, memory and cancellation shared with parallel branches.
    budget: Arc<SharedBudget>,
    /// Captured output lines (capped by `max_print_bytes`).
    prints: Prints,
    /// Tool call ledger.
    tool_calls: Vec<ToolCallRecord>,
    /// True inside pmap/pcalls branches (`return` is not allowed there).
    in_parallel: bool,
    /// Address near the bottom of this thread's stack (see [`Interp::reset_stack`]).
    stack_base: usize,
    /// Bytes of stack this interpreter may use before calls fail cleanly.
    stack_budget: usize,
    /// Keyword names `keyword` made from strings during this run (capped by `max_symbols`).
    made_keywords: std::collections::HashSet<Arc<str>>,
}

impl<'h> Interp<'h> {
    /// A fresh interpreter.
    pub(crate) fn new(
        host: &'h dyn Host,
        limits: Arc<Limits>,
        budget: Arc<SharedBudget>,
        data: Arc<PMap>,
        globals: Memory,
        turn_history: Arc<Vec<Value>>,
    ) -> Self {
        let (stack_base, stack_budget) = stack::budget_here();
        Interp {
            stack: Vec::with_capacity(256),
            base: 0,
            capture_base: usize::MAX,
            self_slot: usize::MAX,
            recur_args: Vec::new(),
            depth: 0,
            fuel: 0,
            fuel_base: 0,
            fuel_done: 0,
            next_check: CHECK_EVERY.min(fuel_stop(limits.max_fuel, 0)),
            globals,
            data,
            data_cache: Default::default(),
            strict_data: false,
            turn_history,
            host,
            prints: Prints::new(limits.max_print_bytes),
            limits,
            budget,
            tool_calls: Vec::new(),
            in_parallel: false,
            stack_base,
            stack_budget,
            made_keywords: std::collections::HashSet::new(),
        }
    }

    /// Counts a keyword name made at run time (`keyword`): past `max_symbols` unique names,
    /// the run ends in `symbol_limit_exceeded`, as a program text with that many would.
    pub(crate) fn note_made_keyword(&mut self, name: &Arc<str>) -> Result<(), Flow> {
        if self.made_keywords.contains(name) {
            return Ok(());
        }
        if self.made_keywords.len() >= self.limits.max_symbols {
            return err(
                ErrorKind::SymbolLimitExceeded,
                format!(
                    "keyword: the program made more than {} unique keywords at run time (max_symbols); keep varying names as strings (maps take string keys) instead of turning each into a keyword",
                    self.limits.max_symbols
                ),
            );
        }
        self.made_keywords.insert(name.clone());
        Ok(())
    }

    /// Re-reads the stack budget of the current thread (a branch moved to its own thread).
    pub(crate) fn reset_stack(&mut self) {
        (self.stack_base, self.stack_budget) = stack::budget_here();
    }

    #[inline]
    pub(crate) fn check_stack(&self) -> Result<(), Flow> {
        let now = stack::here();
        let used = self.stack_base.saturating_sub(now);
        if used > stack::DEEP_BYTES {
            stack::note_depth(now);
        }
        if used > self.stack_budget {
            return err(
                ErrorKind::RecursionLimitExceeded,
                "recursion too deep: the evaluation stack is exhausted; use loop/recur or reduce instead of deep recursion",
            );
        }
        Ok(())
    }

    /// A branch interpreter for pmap/pcalls: same data, host, budget; a snapshot of the
    /// user definitions (defs made in the branch are discarded).
    pub(crate) fn branch(&self) -> Interp<'h> {
        let mut b = Interp::new(
            self.host,
            self.limits.clone(),
            self.budget.clone(),
            self.data.clone(),
            self.globals.clone(),
            self.turn_history.clone(),
        );
        b.strict_data = self.strict_data;
        b.in_parallel = true;
        b.depth = self.depth;
        b.fuel_base = self.fuel_base.saturating_add(self.fuel);
        b.next_check = CHECK_EVERY.min(fuel_stop(b.limits.max_fuel, b.fuel_base));
        b
    }

    /// Fuel used so far.
    pub(crate) fn fuel(&self) -> u64 {
        self.fuel_done.saturating_add(self.fuel)
    }

    /// Starts the next call of a parallel branch: `max_fuel` is checked for each call on
    /// its own (the fuel before the fork plus the call's), so whether a call runs out does
    /// not depend on which worker ran which calls; the parent checks the sum when the
    /// branches join ([`Interp::add_branch_fuel`]).
    pub(crate) fn begin_branch_call(&mut self) {
        self.fuel_done = self.fuel_done.saturating_add(self.fuel);
        self.fuel = 0;
        self.next_check = CHECK_EVERY.min(fuel_stop(self.limits.max_fuel, self.fuel_base));
    }

    /// Burns `n` fuel units; checks `max_fuel` when it is reached and the deadline every
    /// 1024 units.
    #[inline]
    pub(crate) fn tick(&mut self, n: u64) -> Result<(), Flow> {
        self.fuel = self.fuel.saturating_add(n);
        if self.fuel >= self.next_check {
            return self.checkpoint();
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn checkpoint(&mut self) -> Result<(), Flow> {
        let stop = fuel_stop(self.limits.max_fuel, self.fuel_base);
        if let Some(max) = self.limits.max_fuel
            && self.fuel >= stop
        {
            return err(
                ErrorKind::FuelExhausted,
                format!(
                    "fuel exhausted: the program did more than {max} steps of work (max_fuel); process less data per program, or stop loops earlier"
                ),
            );
        }
        self.next_check = self.fuel.saturating_add(CHECK_EVERY).min(stop);
        self.budget.check_time()
    }

    /// Counts the fuel parallel branches burned (`pmap`, `pcalls`) as this run's.
    pub(crate) fn add_branch_fuel(&mut self, fuel: u64) -> Result<(), Flow> {
        self.tick(fuel)
    }

    /// Charges memory for something the program built.
    #[inline]
    pub(crate) fn charge(&mut self, bytes: u64) -> Result<(), Flow> {
        self.budget.charge(bytes)
    }

    /// Runs top-level nodes in a frame of `frame_size` slots.
    pub(crate) fn run_program(&mut self, nodes: &[Node], frame_size: u32) -> EvalResult {
        self.stack.clear();
        self.stack.resize(frame_size as usize, Value::Nil);
        self.base = 0;
        let mut last = Value::Nil;
        for n in nodes {
            last = self.eval(n)?;
        }
        Ok(last)
    }

    #[inline]
    fn slot(&self, i: u32) -> EvalResult {
        match self.stack.get(self.base + i as usize) {
            Some(Value::Int(n)) => Ok(Value::Int(*n)),
            Some(v) => Ok(v.clone()),
            None => internal("local slot out of range"),
        }
    }

    #[inline]
    fn take_slot(&mut self, i: u32) -> Value {
        match self.stack.get_mut(self.base + i as usize) {
            Some(v) => std::mem::take(v),
            None => Value::Nil,
        }
    }

    #[inline]
    fn set_slot(&mut self, i: u32, v: Value) {
        if let Some(s) = self.stack.get_mut(self.base + i as usize) {
            *s = v;
        }
    }

    #[inline]
    fn capture(&self, i: u32) -> EvalResult {
        match self.stack.get(self.capture_base.wrapping_add(i as usize)) {
            Some(v) => Ok(v.clone()),
            None => internal("capture outside closure"),
        }
    }

    /// The values a closure captures, from this frame.
    fn captured(&mut self, from: &[CaptureFrom]) -> EvalResult<Vec<Value>> {
        let mut caps = Vec::with_capacity(from.len());
        for c in from {
            caps.push(match c {
                CaptureFrom::Local(i) => self.slot(*i)?,
                CaptureFrom::Capture(i) => self.capture(*i)?,
                CaptureFrom::SelfFn => self.current_fn()?,
                CaptureFrom::Sibling(j) => self.sibling_fn(*j)?,
            });
        }
        Ok(caps)
    }

    /// Function `j` of the current function's `letfn` group, as a value: the current
    /// function itself when it is that one, else a new function with the same captures.
    fn sibling_fn(&mut self, j: u32) -> EvalResult {
        let Some(Value::Func(f)) = self.stack.get(self.self_slot) else { return internal(OUTSIDE_GROUP) };
        let (c, lambda) = group_member(f, j)?;
        if Arc::ptr_eq(lambda, &c.lambda) {
            return Ok(Value::Func(f.clone()));
        }
        let made = Closure { lambda: lambda.clone(), captures: c.captures.clone(), group: c.group.clone() };
        self.charge(cost::items(made.captures.len() as u64))?;
        Ok(Value::Func(Function::arc(FnRepr::Closure(made))))
    }

    fn current_fn(&self) -> EvalResult {
        match self.stack.get(self.self_slot) {
            Some(v @ Value::Func(_)) => Ok(v.clone()),
            _ => internal("self reference outside closure"),
        }
    }

    /// Evaluates one node.
    pub(crate) fn eval(&mut self, node: &Node) -> EvalResult {
        match node {
            Node::Const(v) => Ok(v.clone()),
            Node::Local(i) => self.slot(*i),
            Node::LocalMove(i) => Ok(self.take_slot(*i)),
            Node::Capture(i) => self.capture(*i),
            Node::If(b) => {
                if self.eval(&b.0)?.truthy() {
                    self.eval(&b.1)
                } else {
                    self.eval(&b.2)
                }
            }
            Node::Do(nodes) => {
                let mut last = Value::Nil;
                for n in nodes {
                    last = self.eval(n)?;
                }
                Ok(last)
            }
            Node::And(nodes) => {
                let mut last = Value::Bool(true);
                for n in nodes {
                    last = self.eval(n)?;
                    if !last.truthy() {
                        return Ok(last);
                    }
                }
                Ok(last)
            }
            Node::Or(nodes) => {
                let mut last = Value::Nil;
                for n in nodes {
                    last = self.eval(n)?;
                    if last.truthy() {
                        return Ok(last);
                    }
                }
                Ok(last)
            }
            Node::Let(bindings, body) => {
                for (p, n) in bindings {
                    let v = self.eval(n)?;
                    self.bind(p, v)?;
                }
                self.eval(body)
            }
            Node::GetKey(key, target, default) => {
                let found = match &**target {
                    Node::Local(i) => match self.stack.get(self.base + *i as usize) {
                        Some(Value::Map(m)) => flex_get(m, key).cloned(),
                        Some(other) => get_in_value(other, key),
                        None => None,
                    },
                    other => {
                        let coll = self.eval(other)?;
                        get_in_value(&coll, key)
                    }
                };
                match (found, default) {
                    (Some(v), _) => Ok(v),
                    (None, Some(d)) => self.eval(d),
                    (None, None) => Ok(Value::Nil),
                }
            }
            Node::Compare(op, operands) => {
                let (a, b) = &**operands;
                let result = match (self.peek(a), self.peek(b)) {
                    (Some(x), Some(y))
                        if !matches!(x, Value::Func(_) | Value::Lazy(_))
                            && !matches!(y, Value::Func(_) | Value::Lazy(_)) =>
                    {
                        compare(*op, x, y)?
                    }
                    _ => {
                        let x = self.eval(a)?;
                        let y = self.eval(b)?;
                        let x = self.realized_operand(x)?;
                        let y = self.realized_operand(y)?;
                        compare(*op, &x, &y)?
                    }
                };
                Ok(Value::Bool(result))
            }
            Node::CompareItems(how, sides, span) => self.compare_items(*how, &sides.0, &sides.1, *span),
            Node::CallBuiltin(b, args, span) => {
                let mut vals: SmallVec<[Value; 4]> = SmallVec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                self.tick(1)?;
                b.call(self, &mut vals).map_err(|e| with_span(e, *span))
            }
            Node::Arith(op, b, operands, span) => {
                let (x, y) = &**operands;
                // operands that need no evaluation are read in place
                let fast = match (self.peek(x), y.as_ref().map(|y| self.peek(y))) {
                    (Some(a), None) => op.fast(a, None),
                    (Some(a), Some(Some(bv))) => op.fast(a, Some(bv)),
                    _ => None,
                };
                if let Some(v) = fast {
                    self.tick(1)?;
                    return Ok(v);
                }
                self.arith_slow(*op, b, x, y.as_ref(), *span)
            }
            Node::Test(b, x, span) => {
                if let (Some(v), Some(test)) = (self.peek(x), b.test)
                    && let Some(answer) = test(v)
                {
                    self.tick(1)?;
                    return Ok(Value::Bool(answer));
                }
                self.test_slow(b, x, *span)
            }
            Node::Call(f, args, span) => {
                let fv = self.eval(f)?;
                let mut vals: SmallVec<[Value; 4]> = SmallVec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                self.apply(&fv, &mut vals).map_err(|e| with_span(e, *span))
            }
            _ => self.eval_cold(node),
        }
    }

    /// A test node whose argument needs evaluating, or that the test declined.
    #[inline(never)]
    fn test_slow(&mut self, b: &'static crate::builtins::Builtin, x: &Node, span: ptc_lisp_syntax::Span) -> EvalResult {
        let v = match self.peek(x) {
            Some(v) => v.clone(),
            None => self.eval(x)?,
        };
        if let Some(answer) = b.test.and_then(|test| test(&v)) {
            self.tick(1)?;
            return Ok(Value::Bool(answer));
        }
        self.tick(1)?;
        b.call(self, &mut [v]).map_err(|e| with_span(e, span))
    }

    /// An arithmetic node whose operands need evaluating, or that the fast path declined.
    #[inline(never)]
    fn arith_slow(
        &mut self,
        op: crate::node::ArithOp,
        b: &'static crate::builtins::Builtin,
        x: &Node,
        y: Option<&Node>,
        span: ptc_lisp_syntax::Span,
    ) -> EvalResult {
        // nested arithmetic on plain numbers: computed in one go, charged one unit per
        // operation as the step-by-step path below would
        if let Some((v, ops)) = self.arith_pure(op, x, y) {
            self.tick(ops)?;
            return Ok(v.value());
        }
        let a = match self.peek(x) {
            Some(v) => v.clone(),
            None => self.eval(x)?,
        };
        self.tick(1)?;
        match y {
            None => match op.fast(&a, None) {
                Some(v) => Ok(v),
                None => b.call(self, &mut [a]).map_err(|e| with_span(e, span)),
            },
            Some(y) => {
                let bv = match self.peek(y) {
                    Some(v) => v.clone(),
                    None => self.eval(y)?,
                };
                match op.fast(&a, Some(&bv)) {
                    Some(v) => Ok(v),
                    None => b.call(self, &mut [a, bv]).map_err(|e| with_span(e, span)),
                }
            }
        }
    }

    /// [`Node::CompareItems`]: what `compare`, `=` or `not=` of the two vector literals
    /// answers, with the same evaluation order, memory charges, fuel and errors, but the
    /// items held in two small buffers instead of two vectors.
    fn compare_items(&mut self, how: ItemsCmp, xs: &[Node], ys: &[Node], span: ptc_lisp_syntax::Span) -> EvalResult {
        let mut left: SmallVec<[Value; 4]> = SmallVec::with_capacity(xs.len());
        for n in xs {
            left.push(self.eval(n)?);
        }
        self.charge(cost::items(xs.len() as u64))?;
        let mut right: SmallVec<[Value; 4]> = SmallVec::with_capacity(ys.len());
        for n in ys {
            right.push(self.eval(n)?);
        }
        self.charge(cost::items(ys.len() as u64))?;
        match how {
            ItemsCmp::Compare => {
                // the builtin call's own step
                self.tick(1)?;
                let c = crate::builtins::clojure_compare_items(left.iter().zip(right.iter()))
                    .map_err(|e| with_span(e, span))?;
                Ok(Value::Int(c))
            }
            ItemsCmp::Eq | ItemsCmp::NotEq => {
                let same = left.len() == right.len()
                    && crate::meter::within(|| false, || left.iter().zip(right.iter()).all(|(x, y)| x.equiv(y)));
                Ok(Value::Bool(same == (how == ItemsCmp::Eq)))
            }
        }
    }

    /// An arithmetic node whose operands are plain numbers read in place or nested
    /// arithmetic of such, with the number of operations in it. `None` when any operand is
    /// something else or any operation declines ([`ArithOp::fast_num`]): nothing has been
    /// evaluated or charged then, and the caller takes the step-by-step path.
    #[inline]
    fn arith_pure(&self, op: crate::node::ArithOp, x: &Node, y: Option<&Node>) -> Option<(Num, u64)> {
        let mut ops = 1;
        let a = self.pure_operand(x, &mut ops, 0)?;
        let b = match y {
            Some(y) => Some(self.pure_operand(y, &mut ops, 0)?),
            None => None,
        };
        Some((op.fast_num(a, b)?, ops))
    }

    /// A number read in place: a constant, a local (a move of a number may leave it in its
    /// slot: the slot is dead after its only read) or a captured value.
    #[inline(always)]
    fn num_at(&self, n: &Node) -> Option<Num> {
        match n {
            Node::Const(v) => Num::of(v),
            Node::Local(i) | Node::LocalMove(i) => Num::of(self.stack.get(self.base + *i as usize)?),
            Node::Capture(i) => Num::of(self.stack.get(self.capture_base.wrapping_add(*i as usize))?),
            _ => None,
        }
    }

    /// A number operand for [`Interp::arith_pure`]: read in place or nested arithmetic.
    #[inline(always)]
    fn pure_operand(&self, n: &Node, ops: &mut u64, depth: u32) -> Option<Num> {
        match self.num_at(n) {
            Some(v) => Some(v),
            None => self.pure_num(n, ops, depth),
        }
    }

    fn pure_num(&self, n: &Node, ops: &mut u64, depth: u32) -> Option<Num> {
        match n {
            Node::Arith(op, _, operands, _) if depth < 16 => {
                *ops += 1;
                let (x, y) = &**operands;
                let a = self.pure_operand(x, ops, depth + 1)?;
                let b = match y {
                    Some(y) => Some(self.pure_operand(y, ops, depth + 1)?),
                    None => None,
                };
                op.fast_num(a, b)
            }
            _ => self.peek_num(n),
        }
    }

    #[inline(never)]
    fn peek_num(&self, n: &Node) -> Option<Num> {
        Num::of(self.peek(n)?)
    }

    /// Evaluates `recur`'s arguments into `recur_args` (the buffer's allocation is reused
    /// from one iteration to the next).
    #[inline]
    fn stash_recur_args(&mut self, args: &[Node]) -> Result<(), Flow> {
        let mut vals = std::mem::take(&mut self.recur_args);
        vals.clear();
        for a in args {
            vals.push(self.eval(a)?);
        }
        self.recur_args = vals;
        Ok(())
    }

    /// One pass of a loop body, walking its tail positions (`if`, `do`, `let`) so that a
    /// `recur` there stashes its arguments without unwinding as `Flow::Recur`: `Ok(None)`
    /// means "recur", with the new values in `recur_args`. Anything else is evaluated
    /// normally (and a `recur` deeper in it still arrives as `Flow::Recur`).
    fn loop_pass(&mut self, node: &Node) -> EvalResult<Option<Value>> {
        match node {
            Node::If(b) => {
                if self.eval(&b.0)?.truthy() {
                    self.loop_pass(&b.1)
                } else {
                    self.loop_pass(&b.2)
                }
            }
            Node::Do(nodes) => match nodes.split_last() {
                Some((last, init)) => {
                    for n in init {
                        self.eval(n)?;
                    }
                    self.loop_pass(last)
                }
                None => Ok(Some(Value::Nil)),
            },
            Node::Let(bindings, body) => {
                for (p, n) in bindings {
                    let v = self.eval(n)?;
                    self.bind(p, v)?;
                }
                self.loop_pass(body)
            }
            Node::Recur(args) => {
                self.stash_recur_args(args)?;
                Ok(None)
            }
            other => self.eval(other).map(Some),
        }
    }

    /// The less frequent node kinds, kept out of `eval` so its stack frame stays small.
    #[inline(never)]
    fn eval_cold(&mut self, node: &Node) -> EvalResult {
        match node {
            Node::SelfFn => self.current_fn(),
            Node::Sibling(j) => self.sibling_fn(*j),
            Node::Global(name, fallback, span) => match self.globals.get(name) {
                Some(v) => Ok(v.clone()),
                None => match fallback {
                    Some(b) => Ok(Value::Func(Function::arc(FnRepr::Builtin(b)))),
                    None => Err(EvalError::new(
                        ErrorKind::UnboundVar,
                        format!("{name} is not defined yet: its def has not run at this point"),
                    )
                    .at(*span)
                    .into()),
                },
            },
            Node::Builtin(b) => Ok(Value::Func(Function::arc(FnRepr::Builtin(b)))),
            Node::Data(key, span) => self.data_ref(key).map_err(|e| with_span(e, *span)),
            Node::ToolRef(name) => Ok(Value::Func(Function::arc(FnRepr::Tool(name.clone())))),
            Node::TurnHistory(n) => {
                let h = &self.turn_history;
                let n = *n as usize;
                Ok(if h.len() >= n { h[h.len() - n].clone() } else { Value::Nil })
            }
            Node::Vector(items) => {
                // sized once: no regrowth while the items are pushed
                let mut v: Vec<Value> = Vec::with_capacity(items.len());
                for n in items {
                    v.push(self.eval(n)?);
                }
                self.charge(cost::items(items.len() as u64))?;
                Ok(Value::from_pvec(PVector::from_vec(v)))
            }
            Node::Map(entries) => {
                let mut kv: Vec<(Value, Value)> = Vec::with_capacity(entries.len());
                for (k, v) in entries {
                    let k = self.eval(k)?;
                    let v = self.eval(v)?;
                    kv.push((k, v));
                }
                self.charge(cost::entries(entries.len() as u64))?;
                Ok(Value::Map(Arc::new(map_of_entries(kv))))
            }
            Node::KeyedMap(m) => {
                // the keys are in map order already: each value goes to its key's place
                let mut kv: Vec<(Value, Value)> = m.keys.iter().map(|k| (k.clone(), Value::Nil)).collect();
                for (at, n) in &m.values {
                    let v = self.eval(n)?;
                    if let Some(entry) = kv.get_mut(*at as usize) {
                        entry.1 = v;
                    }
                }
                self.charge(cost::entries(m.values.len() as u64))?;
                Ok(Value::Map(Arc::new(PMap::from_sorted_unique(kv))))
            }
            Node::Set(items) => {
                let mut s = PSet::new();
                for n in items {
                    s.insert(self.eval(n)?);
                }
                self.charge(cost::items(items.len() as u64))?;
                Ok(Value::Set(Arc::new(s)))
            }
            Node::Loop(l) => {
                for (p, n) in &l.bindings {
                    let v = self.eval(n)?;
                    self.bind(p, v)?;
                }
                let mut iterations: u64 = 0;
                loop {
                    match self.loop_pass(&l.body) {
                        Ok(Some(v)) => return Ok(v),
                        Ok(None) | Err(Flow::Recur) => {
                            iterations += 1;
                            if iterations > self.limits.max_loop_iterations {
                                return loop_limit(self.limits.max_loop_iterations);
                            }
                            self.tick(1)?;
                            let mut args = std::mem::take(&mut self.recur_args);
                            for ((p, _), v) in l.bindings.iter().zip(args.iter_mut()) {
                                let v = std::mem::take(v);
                                match p {
                                    Pattern::Bind(slot) => self.set_slot(*slot, v),
                                    _ => self.bind(p, v)?,
                                }
                            }
                            args.clear();
                            self.recur_args = args;
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
            Node::Recur(args) => {
                self.stash_recur_args(args)?;
                Err(Flow::Recur)
            }
            Node::Fn(lambda, captures) => {
                let caps = self.captured(captures)?;
                self.charge(cost::items(caps.len() as u64))?;
                Ok(Value::Func(Function::arc(FnRepr::Closure(Closure {
                    lambda: lambda.clone(),
                    captures: caps,
                    group: None,
                }))))
            }
            Node::Letfn(l) => {
                let caps = self.captured(&l.captures)?;
                self.charge(cost::items((caps.len() * l.group.len()) as u64))?;
                for (lambda, slot) in l.group.iter().zip(l.slots.iter()) {
                    let f = Closure { lambda: lambda.clone(), captures: caps.clone(), group: Some(l.group.clone()) };
                    self.set_slot(*slot, Value::Func(Function::arc(FnRepr::Closure(f))));
                }
                self.eval(&l.body)
            }
            Node::CallSibling(j, args, span) => {
                let f = match self.stack.get(self.self_slot) {
                    Some(Value::Func(f)) => f.clone(),
                    _ => return internal(OUTSIDE_GROUP),
                };
                let (c, lambda) = group_member(&f, *j)?;
                let mut vals: SmallVec<[Value; 4]> = SmallVec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                self.check_stack()?;
                // the callee's self slot holds the caller: same group, same captures
                self.call_closure(&f, lambda, &c.captures, &mut vals, None).map_err(|e| with_span(e, *span))
            }
            Node::ToolCall(name, args, span) => {
                let mut vals: SmallVec<[Value; 4]> = SmallVec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                self.call_tool(name, &mut vals).map_err(|e| with_span(e, *span))
            }
            Node::Def { name, doc, value, once } => {
                if *once && self.globals.contains(name) {
                    return Ok(Value::Var(name.clone()));
                }
                let v = self.eval(value)?;
                self.globals.insert(name.clone(), v);
                if let Some(d) = doc {
                    self.globals.set_doc(name.clone(), d.clone());
                }
                Ok(Value::Var(name.clone()))
            }
            Node::Case(c) => {
                let v = self.eval(&c.expr)?;
                for (tests, result) in &c.clauses {
                    if tests.iter().any(|t| t.equiv(&v)) {
                        return self.eval(result);
                    }
                }
                match &c.default {
                    Some(d) => self.eval(d),
                    // as Clojure: no match and no default is an error, not a silent nil
                    None => err(
                        ErrorKind::RuntimeError,
                        format!(
                            "case: no clause matches {} and there is no default; add a default as the last form, e.g. (case x 1 :one :other), or use condp/cond",
                            crate::builtins::brief(&v)
                        ),
                    ),
                }
            }
            Node::For(f) => self.eval_for(f),
            Node::Pipeline(p) => crate::fusion::eval(self, p),
            Node::Return(v) => {
                let v = self.eval(v)?;
                if self.in_parallel {
                    return err(
                        ErrorKind::RuntimeError,
                        "return called inside pmap/pcalls; return the value from the branch function instead",
                    );
                }
                Err(Flow::Return(v))
            }
            Node::Fail(v) => {
                let v = self.eval(v)?;
                Err(Flow::Fail(v))
            }
            Node::Raise(kind, msg) => err(*kind, msg.to_string()),
            _ => internal("hot node reached the cold path"),
        }
    }

    /// A reference to a node's value when it needs no evaluation work: constants, locals,
    /// captures and keyword lookups on locals.
    #[inline(always)]
    fn peek<'a>(&'a self, n: &'a Node) -> Option<&'a Value> {
        static NIL: Value = Value::Nil;
        match n {
            Node::Const(v) => Some(v),
            Node::Local(i) => self.stack.get(self.base + *i as usize),
            Node::Capture(i) => self.stack.get(self.capture_base.wrapping_add(*i as usize)),
            Node::Data(key, _) => match self.cached_data(key) {
                Some(v) => Some(v),
                None => self.peek_data(key),
            },
            Node::GetKey(k, target, None) => match &**target {
                Node::Local(i) => match self.stack.get(self.base + *i as usize) {
                    Some(Value::Map(m)) => Some(flex_get(m, k).unwrap_or(&NIL)),
                    Some(Value::Nil) => Some(&NIL),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        }
    }

    /// A `data/` value found before (the context does not change during a run).
    #[inline(always)]
    fn cached_data(&self, key: &Arc<str>) -> Option<&Value> {
        for c in &self.data_cache {
            match c.get() {
                Some(hit) if Arc::ptr_eq(&hit.key, key) && Arc::ptr_eq(&hit.owner, &self.data) => {
                    return Some(&hit.value);
                }
                Some(_) => {}
                None => return None,
            }
        }
        None
    }

    /// A `data/` value read in place, remembered for [`Interp::cached_data`] while there is
    /// room; `None` when it is missing and that is an error.
    #[inline(never)]
    fn peek_data(&self, key: &Arc<str>) -> Option<&Value> {
        static NIL: Value = Value::Nil;
        match flex_get_named(&self.data, key) {
            Some(v) => {
                if let Some(free) = self.data_cache.iter().find(|c| c.get().is_none()) {
                    let _ = free.set(DataHit { owner: self.data.clone(), key: key.clone(), value: v.clone() });
                }
                Some(v)
            }
            None if self.strict_data => None,
            None => Some(&NIL),
        }
    }

    fn data_ref(&self, key: &str) -> EvalResult {
        if let Some(v) = flex_get_named(&self.data, key) {
            return Ok(v.clone());
        }
        if self.strict_data {
            let mut keys: Vec<String> = self.data.keys().map(crate::builtins::printed).collect();
            keys.truncate(20);
            return err(
                ErrorKind::RuntimeError,
                format!(
                    "data/{key} is not bound: the context did not provide a \"{key}\" key (available: {})",
                    if keys.is_empty() { "none".to_string() } else { keys.join(", ") }
                ),
            );
        }
        Ok(Value::Nil)
    }

    /// Calls any callable value: functions, keywords, maps, sets, vectors.
    pub(crate) fn apply(&mut self, f: &Value, args: &mut [Value]) -> EvalResult {
        match f {
            Value::Func(func) => self.call_function(func, args),
            Value::Keyword(_) => match args {
                [m] => Ok(get_in_value(m, f).unwrap_or(Value::Nil)),
                [m, d] => Ok(get_in_value(m, f).unwrap_or_else(|| std::mem::take(d))),
                _ => err(
                    ErrorKind::ArityError,
                    format!(
                        "keyword {} called with {} arguments; use (:k map) or (:k map default)",
                        brief(f),
                        args.len()
                    ),
                ),
            },
            Value::Map(_) => match args {
                [k] => Ok(get_in_value(f, k).unwrap_or(Value::Nil)),
                [k, d] => Ok(get_in_value(f, k).unwrap_or_else(|| std::mem::take(d))),
                _ => err(
                    ErrorKind::ArityError,
                    format!("map called with {} arguments; use (m key) or (m key default)", args.len()),
                ),
            },
            Value::Set(s) => match args {
                [x] => Ok(if s.contains(x) { x.clone() } else { Value::Nil }),
                _ => err(ErrorKind::ArityError, format!("set called with {} arguments; use (s x)", args.len())),
            },
            Value::Vector(v) => match args {
                [Value::Int(i)] if *i >= 0 && (*i as usize) < v.len() => Ok(v[*i as usize].clone()),
                [i] => err(
                    ErrorKind::RuntimeError,
                    format!(
                        "index {} out of bounds for vector of length {}; use (get v i) to get nil instead",
                        brief(i),
                        v.len()
                    ),
                ),
                _ => err(ErrorKind::ArityError, format!("vector called with {} arguments; use (v index)", args.len())),
            },
            Value::List(_) => err(
                ErrorKind::NotCallable,
                format!(
                    "not callable: {} (list); only functions, keywords, maps, sets and vectors can be called. Read an item of a list or sequence (what rest, next and & more give) with (nth xs i); write literal data as a vector [..]",
                    brief(f)
                ),
            ),
            other => err(
                ErrorKind::NotCallable,
                format!(
                    "not callable: {} ({}); only functions, keywords, maps, sets and vectors can be called. If you meant a literal list, write a vector [..]",
                    brief(other),
                    other.type_name()
                ),
            ),
        }
    }

    /// Calls a function value.
    pub(crate) fn call_function(&mut self, func: &Arc<Function>, args: &mut [Value]) -> EvalResult {
        self.check_stack()?;
        match func.repr() {
            FnRepr::Builtin(b) => {
                self.tick(1)?;
                b.call(self, args)
            }
            FnRepr::Closure(c) => self.call_closure(func, &c.lambda, &c.captures, args, None),
            FnRepr::Native { name, body, held } => {
                self.tick(1)?;
                body(&mut crate::builtins::BuiltinContext::new(self, name), held.fixed(), args)
            }
            FnRepr::Tool(name) => {
                let name = name.clone();
                self.call_tool(&name, args)
            }
        }
    }

    /// Calls `f` with arguments it only borrows: when the call returns, whatever it
    /// returns, `args` hold the values they held before. A closure that keeps its
    /// parameters in their slots (`Lambda::keeps_params`) gets the values moved into its
    /// frame and moved back out after its body, so the call touches no reference count (a
    /// sort comparator over 100k maps otherwise writes to every map it compares, twice);
    /// any other function gets clones. Metered exactly as [`Interp::apply`].
    pub(crate) fn apply_lent(&mut self, f: &Value, args: &mut [&mut Value]) -> EvalResult {
        if let Value::Func(func) = f
            && let FnRepr::Closure(c) = func.repr()
            && c.lambda.keeps_params
            && c.lambda.params.len() == args.len()
        {
            self.check_stack()?;
            let mut vals: SmallVec<[Value; 4]> = args.iter_mut().map(|a| std::mem::take(&mut **a)).collect();
            let result = self.call_closure(func, &c.lambda, &c.captures, &mut vals, Some(&mut *args));
            // a call that failed before binding its parameters (fuel, depth) left them here
            for (a, v) in args.iter_mut().zip(vals.iter_mut()) {
                if !v.is_nil() {
                    **a = std::mem::take(v);
                }
            }
            return result;
        }
        let mut vals: SmallVec<[Value; 4]> = args.iter().map(|a| (**a).clone()).collect();
        self.apply(f, &mut vals)
    }

    /// Runs a closure's body in a new frame; with `give_back`, the parameters' slots are
    /// moved into it before the frame is dropped (see [`Interp::apply_lent`]).
    fn call_closure(
        &mut self,
        func: &Arc<Function>,
        lambda: &Lambda,
        captures: &[Value],
        args: &mut [Value],
        give_back: Option<&mut [&mut Value]>,
    ) -> EvalResult {
        let fixed = lambda.params.len();
        if args.len() < fixed || (lambda.rest.is_none() && args.len() != fixed) {
            return err(
                ErrorKind::ArityError,
                format!(
                    "{} called with {} argument{}, expects {}{}",
                    fn_label(lambda),
                    args.len(),
                    if args.len() == 1 { "" } else { "s" },
                    if lambda.rest.is_some() { "at least " } else { "" },
                    fixed
                ),
            );
        }
        self.tick(1)?;
        if self.depth >= self.limits.max_recursion_depth {
            return err(
                ErrorKind::RecursionLimitExceeded,
                format!(
                    "recursion depth limit exceeded ({} nested calls, max_recursion_depth); use loop/recur or reduce instead of deep recursion",
                    self.limits.max_recursion_depth
                ),
            );
        }
        self.depth += 1;
        // frame layout: [locals][captured values][the function itself, if it refers to itself]
        let new_base = self.stack.len();
        let frame = lambda.frame_size as usize;
        self.stack.reserve(frame + captures.len() + usize::from(lambda.uses_self));
        // plain parameters: the arguments are the frame's first slots (the arity check
        // above made their number the parameters')
        let bound = if lambda.plain_params {
            self.stack.extend(args.iter_mut().map(std::mem::take));
            args.len()
        } else {
            0
        };
        self.stack.extend(std::iter::repeat_n(Value::Nil, frame.saturating_sub(bound)));
        self.stack.extend(captures.iter().cloned());
        if lambda.uses_self {
            self.stack.push(Value::Func(func.clone()));
        }
        let saved = (self.base, self.capture_base, self.self_slot);
        self.base = new_base;
        self.capture_base = new_base + frame;
        self.self_slot = new_base + frame + captures.len();
        let result = self.run_closure_body(lambda, args);
        if let Some(back) = give_back {
            for (p, dst) in lambda.params.iter().zip(back.iter_mut()) {
                if let Pattern::Bind(slot) = p
                    && let Some(v) = self.stack.get_mut(new_base + *slot as usize)
                {
                    **dst = std::mem::take(v);
                }
            }
        }
        self.stack.truncate(new_base);
        (self.base, self.capture_base, self.self_slot) = saved;
        self.depth -= 1;
        result
    }

    fn run_closure_body(&mut self, lambda: &Lambda, args: &mut [Value]) -> EvalResult {
        if !lambda.plain_params {
            self.bind_params(lambda, args)?;
        }
        let mut iterations: u64 = 0;
        loop {
            match self.eval(&lambda.body) {
                Err(Flow::Recur) => {
                    iterations += 1;
                    if iterations > self.limits.max_loop_iterations {
                        return loop_limit(self.limits.max_loop_iterations);
                    }
                    self.tick(1)?;
                    let mut args = std::mem::take(&mut self.recur_args);
                    // recur in a variadic fn passes the rest as one value
                    for (p, v) in lambda.params.iter().zip(args.iter_mut()) {
                        self.bind(p, std::mem::take(v))?;
                    }
                    if let Some(rest) = &lambda.rest {
                        let v = args.get_mut(lambda.params.len()).map(std::mem::take).unwrap_or(Value::Nil);
                        self.bind(rest, v)?;
                    }
                    args.clear();
                    self.recur_args = args;
                }
                other => return other,
            }
        }
    }

    fn bind_params(&mut self, lambda: &Lambda, args: &mut [Value]) -> Result<(), Flow> {
        let fixed = lambda.params.len();
        for (p, v) in lambda.params.iter().zip(args.iter_mut()) {
            match p {
                Pattern::Bind(slot) => {
                    let v = std::mem::take(v);
                    self.set_slot(*slot, v);
                }
                _ => {
                    let v = std::mem::take(v);
                    self.bind(p, v)?;
                }
            }
        }
        if let Some(rest) = &lambda.rest {
            let extra = &mut args[fixed..];
            let v = if extra.is_empty() { Value::Nil } else { Value::list(extra.iter_mut().map(std::mem::take)) };
            self.bind(rest, v)?;
        }
        Ok(())
    }

    /// Binds a pattern to a value (destructuring).
    pub(crate) fn bind(&mut self, p: &Pattern, v: Value) -> Result<(), Flow> {
        match p {
            Pattern::Bind(slot) => {
                self.set_slot(*slot, v);
                Ok(())
            }
            Pattern::Ignore => Ok(()),
            Pattern::Seq { items, rest, as_slot } => {
                if let Some(l) = crate::lazy::as_lazy(&v) {
                    // an infinite sequence: the positional items are pulled, the rest stays lazy
                    let l = l.clone();
                    for (i, p) in items.iter().enumerate() {
                        let item = crate::lazy::nth(
                            &mut crate::builtins::BuiltinContext::new(self, "destructuring"),
                            i,
                            l.clone(),
                        )?;
                        self.bind(p, item)?;
                    }
                    if let Some(r) = rest {
                        let tail = crate::lazy::drop(items.len(), &l)?;
                        self.bind(r, tail)?;
                    }
                    if let Some(s) = as_slot {
                        self.set_slot(*s, v);
                    }
                    return Ok(());
                }
                if !matches!(v, Value::Nil | Value::Vector(_) | Value::List(_) | Value::Str(_)) {
                    return err(
                        ErrorKind::DestructureError,
                        format!(
                            "cannot destructure {} {} with a vector pattern; it needs a vector, list, string or nil (for a map write {{:keys [a b]}}, or (seq m) for its entries)",
                            v.type_name(),
                            brief(&v)
                        ),
                    );
                }
                if let (Some(r), None) = (rest, as_slot)
                    && let Value::Vector(vec) | Value::List(vec) = &v
                    && Arc::strong_count(vec) == 1
                {
                    // `[x & more]` of a vector nothing else holds (a `loop` recurring on
                    // `more` hands it over): the items are taken off its front in place, so
                    // walking a big vector this way copies nothing at each turn
                    if let Value::Vector(mut vec) | Value::List(mut vec) = v {
                        let front = Arc::make_mut(&mut vec);
                        for p in items.iter() {
                            let item = front.pop_front().unwrap_or(Value::Nil);
                            self.bind(p, item)?;
                        }
                        // a sequence, as in Clojure (`conj` adds to its front)
                        let tail = if vec.is_empty() { Value::Nil } else { Value::List(vec) };
                        self.bind(r, tail)?;
                    }
                    return Ok(());
                }
                if let Value::Vector(vec) | Value::List(vec) = &v {
                    // positional items straight from the vector: no intermediate list
                    for (i, p) in items.iter().enumerate() {
                        self.bind(p, vec.get(i).cloned().unwrap_or(Value::Nil))?;
                    }
                    if let Some(r) = rest {
                        let tail = if vec.len() <= items.len() {
                            Value::Nil
                        } else {
                            Value::List(Arc::new(vec.skip(items.len())))
                        };
                        self.bind(r, tail)?;
                    }
                    if let Some(s) = as_slot {
                        self.set_slot(*s, v);
                    }
                    return Ok(());
                }
                // only the items bound are built (a string's characters one at a time); a
                // `& rest` keeps the remainder, charged before it is collected
                let mut it = crate::builtins::seq_iter("destructuring", &v)?;
                for p in items.iter() {
                    let item = it.next().unwrap_or(Value::Nil);
                    self.bind(p, item)?;
                }
                if let Some(r) = rest {
                    let left = crate::builtins::seq_len(&v).unwrap_or(0).saturating_sub(items.len());
                    let tail = if left > 0 {
                        self.charge(cost::items(left as u64).saturating_add(crate::builtins::materialized_cost(&v)))?;
                        Value::list(it.by_ref())
                    } else {
                        Value::Nil
                    };
                    self.bind(r, tail)?;
                }
                drop(it);
                if let Some(s) = as_slot {
                    self.set_slot(*s, v);
                }
                Ok(())
            }
            Pattern::Map { entries, as_slot } => {
                let map = match &v {
                    Value::Map(m) => Some(m.clone()),
                    Value::Nil => None,
                    // keyword arguments: (fn [& {:keys [a]}] ...) called with :a 1
                    Value::Vector(items) | Value::List(items)
                        if items.len() == 1 && matches!(items[0], Value::Map(_)) =>
                    {
                        match &items[0] {
                            Value::Map(m) => Some(m.clone()),
                            _ => None,
                        }
                    }
                    Value::Vector(items) | Value::List(items) if items.len() % 2 == 0 => {
                        let pairs: Vec<Value> = items.iter().cloned().collect();
                        Some(Arc::new(PMap::from_entries(pairs.chunks(2).map(|c| (c[0].clone(), c[1].clone())))))
                    }
                    other => {
                        return err(
                            ErrorKind::DestructureError,
                            format!(
                                "cannot destructure {} {} with a map pattern ({{:keys [...]}}); it needs a map or nil",
                                other.type_name(),
                                brief(other)
                            ),
                        );
                    }
                };
                for e in entries {
                    let found = map.as_ref().and_then(|m| flex_get(m, &e.key).cloned());
                    let val = match found {
                        Some(x) => x,
                        None => match &e.default {
                            Some(d) => self.eval(d)?,
                            None => Value::Nil,
                        },
                    };
                    self.bind(&e.pattern, val)?;
                }
                if let Some(s) = as_slot {
                    // keyword arguments bind :as to the map they make, not to the arguments
                    let whole = match (&v, map) {
                        (Value::Vector(_) | Value::List(_), Some(m)) => Value::Map(m),
                        _ => v,
                    };
                    self.set_slot(*s, whole);
                }
                Ok(())
            }
        }
    }

    fn eval_for(&mut self, f: &ForNode) -> EvalResult {
        let mut out = ForOut::default();
        if let Some(ForClause::Bind(p, coll)) = f.clauses.first() {
            // a `for` over a lazy first binding is itself lazy (see `crate::lazy`)
            let coll = match self.binding_coll(coll)? {
                BindColl::Ints { start, n, step } => {
                    self.for_ints(f, 0, p, (start, n, step), &mut out)?;
                    return self.for_out(f, out);
                }
                BindColl::Value(coll) => coll,
            };
            if let Some(seq) = crate::lazy::as_lazy(&coll)
                && !f.discard
                && !for_bounded(f, 0)
            {
                return self.lazy_for(f, 0, seq);
            }
            self.for_bind(f, 0, p, coll, &mut out)?;
        } else {
            self.for_level(f, 0, &mut out)?;
        }
        self.for_out(f, out)
    }

    /// What a finished `for` (or `doseq`) answers.
    fn for_out(&mut self, f: &ForNode, out: ForOut) -> EvalResult {
        if f.discard {
            return Ok(Value::Nil);
        }
        // each item was charged as it was kept
        self.charge(cost::HEADER)?;
        out.into_value()
    }

    /// The collection of a `for`/`doseq` binding. An all-integer `(range ...)` that fits in
    /// the heap left is charged as the builtin charges it (its memory at once, a fuel unit
    /// per number) and its numbers are counted out as the binding takes them, so an inner
    /// `(range 1000)` run a thousand times builds no vector; any other range is the
    /// builtin's (a lazy one when too long to hold).
    fn binding_coll(&mut self, coll: &Node) -> EvalResult<BindColl> {
        if let Node::CallBuiltin(b, args, span) = coll
            && b.source == Some(crate::fusion::SourceKind::Range)
            && (1..=3).contains(&args.len())
        {
            let mut vals: SmallVec<[Value; 4]> = SmallVec::with_capacity(args.len());
            for a in args {
                vals.push(self.eval(a)?);
            }
            self.tick(1)?;
            if let Some((start, n, step)) = crate::fusion::int_range(&vals)
                && cost::items(n) <= self.heap_left()
            {
                self.charge(cost::items(n)).map_err(|e| with_span(e, *span))?;
                return Ok(BindColl::Ints { start, n, step });
            }
            return b.call(self, &mut vals).map(BindColl::Value).map_err(|e| with_span(e, *span));
        }
        self.eval(coll).map(BindColl::Value)
    }

    /// The binding at clause `i` over the numbers of a counted-out range, then the levels
    /// after it for each.
    fn for_ints(
        &mut self,
        f: &ForNode,
        i: usize,
        p: &Pattern,
        (start, n, step): (i64, u64, i64),
        out: &mut ForOut,
    ) -> Result<bool, Flow> {
        let mut x = i128::from(start);
        for _ in 0..n {
            // the range's unit for the number and the binding's for the item
            self.tick(2)?;
            self.bind(p, Value::Int(x as i64))?;
            x += i128::from(step);
            if !self.for_level(f, i + 1, out)? {
                break;
            }
        }
        Ok(out.tail.is_none())
    }

    /// A binding over an infinite sequence: only a `:while` right after it (before the next
    /// binding) can end it, so without one it is the unbounded-realisation error.
    fn for_lazy(
        &mut self,
        f: &ForNode,
        i: usize,
        p: &Pattern,
        seq: Arc<crate::lazy::LazySeq>,
        out: &mut ForOut,
    ) -> Result<bool, Flow> {
        if seq.is_infinite() && !for_bounded(f, i) {
            if f.discard {
                return crate::lazy::unbounded::<bool>("doseq", &seq);
            }
            // nothing after an endless binding is ever reached: the rest of the
            // comprehension from here is the lazy tail of the result
            out.tail = Some(self.lazy_for(f, i, &seq)?);
            return Ok(false);
        }
        let mut cursor = crate::lazy::Cursor::owned(seq);
        loop {
            let Some(item) = cursor
                .next(&mut crate::builtins::BuiltinContext::new(self, if f.discard { "doseq" } else { "for" }))?
            else {
                return Ok(true);
            };
            self.charge(cost::ELEM)?;
            self.bind(p, item)?;
            if !self.for_level(f, i + 1, out)? {
                return Ok(out.tail.is_none());
            }
        }
    }

    /// The binding at clause `i` over `coll`, then the levels after it for each item.
    fn for_bind(
        &mut self,
        f: &ForNode,
        i: usize,
        p: &Pattern,
        mut coll: Value,
        out: &mut ForOut,
    ) -> Result<bool, Flow> {
        if let Some(seq) = crate::lazy::take_lazy(&mut coll) {
            return self.for_lazy(f, i, p, seq, out);
        }
        // one item at a time: the characters of a long string are not all built first
        for item in crate::builtins::seq_iter("for", &coll)? {
            self.tick(1)?;
            self.bind(p, item)?;
            if !self.for_level(f, i + 1, out)? {
                break;
            }
        }
        Ok(out.tail.is_none())
    }

    /// A comparison operand with a finite lazy sequence realised (`(= [0 1] (take-while ...))`).
    #[cold]
    fn realized_operand(&mut self, v: Value) -> EvalResult {
        if crate::lazy::is_finite_lazy(&v) {
            return crate::lazy::realized(&mut crate::builtins::BuiltinContext::new(self, "="), "=", v);
        }
        Ok(v)
    }

    /// A `for` from its binding at clause `level` over the lazy `seq`: a lazy sequence
    /// holding the comprehension and a copy of this frame (with the bindings before
    /// `level`), run one item at a time by [`Interp::for_rest`].
    fn lazy_for(&mut self, f: &ForNode, level: usize, seq: &Arc<crate::lazy::LazySeq>) -> EvalResult {
        let frame: Vec<Value> = self.stack.get(self.base..).map(|s| s.to_vec()).unwrap_or_default();
        self.charge(cost::items(frame.len() as u64))?;
        let comp = crate::lazy::ForSeq {
            node: Arc::new(f.clone()),
            captures_at: self.capture_base.wrapping_sub(self.base),
            self_at: self.self_slot.wrapping_sub(self.base),
            frame,
            level,
        };
        crate::lazy::comprehension(comp, seq)
    }

    /// What the rest of a lazy `for` (every clause after its lazy binding) makes of one
    /// `item` of that binding, run in a copy of the frame the `for` was written in: a
    /// vector, or a lazy sequence when an endless binding further in made it one.
    pub(crate) fn for_rest(&mut self, comp: &crate::lazy::ForSeq, item: Value) -> EvalResult {
        self.check_stack()?;
        let Some(ForClause::Bind(p, _)) = comp.node.clauses.get(comp.level) else {
            return internal("a lazy for without a first binding");
        };
        let new_base = self.stack.len();
        self.stack.extend(comp.frame.iter().cloned());
        let saved = (self.base, self.capture_base, self.self_slot);
        self.base = new_base;
        self.capture_base = new_base.wrapping_add(comp.captures_at);
        self.self_slot = new_base.wrapping_add(comp.self_at);
        let mut out = ForOut::default();
        let result = match self.bind(p, item) {
            Ok(()) => self.for_level(&comp.node, comp.level + 1, &mut out).map(|_| ()),
            Err(e) => Err(e),
        };
        self.stack.truncate(new_base);
        (self.base, self.capture_base, self.self_slot) = saved;
        result?;
        out.into_value()
    }

    /// Returns false when a `:while` stopped this level.
    fn for_level(&mut self, f: &ForNode, i: usize, out: &mut ForOut) -> Result<bool, Flow> {
        let Some(clause) = f.clauses.get(i) else {
            let v = self.eval(&f.body)?;
            if !f.discard {
                // charged before it is kept: nested bindings multiply (n^3 items for three)
                self.charge(cost::ELEM)?;
                out.items.push_back(v);
            }
            return Ok(true);
        };
        match clause {
            ForClause::Bind(p, coll) => match self.binding_coll(coll)? {
                BindColl::Ints { start, n, step } => self.for_ints(f, i, p, (start, n, step), out),
                BindColl::Value(coll) => self.for_bind(f, i, p, coll, out),
            },
            ForClause::Let(bindings) => {
                for (p, n) in bindings {
                    let v = self.eval(n)?;
                    self.bind(p, v)?;
                }
                self.for_level(f, i + 1, out)
            }
            ForClause::When(test) => {
                // a :while after the :when still ends the binding before it
                if self.eval(test)?.truthy() {
                    return self.for_level(f, i + 1, out);
                }
                Ok(true)
            }
            ForClause::While(test) => {
                if self.eval(test)?.truthy() {
                    self.for_level(f, i + 1, out)
                } else {
                    Ok(false)
                }
            }
        }
    }

    /// The printed form of `v`, built within the memory budget (and charged to it): a
    /// value whose printed form is huge (shared structure nested sixty times) fails with
    /// `memory_exceeded` instead of building gigabytes. With `max_bytes` of `usize::MAX`
    /// (the whole form) it is never cut: too deep a value is an error too.
    pub(crate) fn print_value(&mut self, v: &Value, max_bytes: usize) -> EvalResult<String> {
        let used = self.budget.heap_used.load(std::sync::atomic::Ordering::Relaxed);
        let left = usize::try_from(self.budget.heap_limit.saturating_sub(used)).unwrap_or(usize::MAX);
        let cap = left.min(max_bytes);
        let opts = crate::printer::PrintOptions { max_bytes: cap.saturating_add(1), ..Default::default() };
        let (text, truncated) = crate::printer::to_clojure_with(v, &opts);
        self.budget.check_time()?;
        if truncated && text.len() > cap && cap == left {
            self.charge(left as u64 + 1)?;
        }
        if truncated && text.len() <= cap && max_bytes == usize::MAX {
            // cut for its depth, not its size: the whole form was asked for (`str`,
            // `pr-str`, `.toString`), and a cut one would be a wrong answer
            return err(
                ErrorKind::RecursionLimitExceeded,
                "a value nested more than 1,000 levels deep cannot be turned into text whole; build flatter data",
            );
        }
        self.charge(text.len() as u64)?;
        Ok(text)
    }

    /// Prints one line under both print caps: cut at `max_print_length` characters
    /// (saying how long it was), charged to the memory budget, and recorded within
    /// `max_print_bytes` (see [`Prints`]). Every print path comes through here.
    pub(crate) fn print(&mut self, mut line: String) -> Result<(), Flow> {
        let max = self.limits.max_print_length;
        if line.len() > max {
            let total = line.chars().count();
            if total > max {
                let head: String = line.chars().take(max).collect();
                line = format!("{head}... ({max}/{total} chars)");
            }
        }
        self.charge(line.len() as u64)?;
        self.prints.record(line);
        Ok(())
    }

    /// The `max_print_length` cap.
    pub(crate) fn max_print_length(&self) -> usize {
        self.limits.max_print_length
    }

    /// Where the print log stands (a branch marks it before each call).
    pub(crate) fn prints_mark(&self) -> Mark {
        self.prints.mark()
    }

    /// What was printed since `mark`, taken out of the log.
    pub(crate) fn prints_since(&mut self, mark: Mark) -> Chunk {
        self.prints.since(mark)
    }

    /// Records what a branch's call printed, under this run's caps.
    pub(crate) fn absorb_prints(&mut self, chunk: Chunk) {
        self.prints.absorb(chunk);
    }

    /// The printed lines of the run (closed by the marker when some were dropped).
    pub(crate) fn take_prints(&mut self) -> Vec<String> {
        std::mem::replace(&mut self.prints, Prints::new(self.limits.max_print_bytes)).into_lines()
    }

    /// The tool call ledger, taken out.
    pub(crate) fn take_tool_calls(&mut self) -> Vec<ToolCallRecord> {
        std::mem::take(&mut self.tool_calls)
    }

    /// Appends a branch's tool calls to the ledger.
    pub(crate) fn extend_tool_calls(&mut self, calls: Vec<ToolCallRecord>) {
        self.tool_calls.extend(calls);
    }

    /// The user definitions.
    pub(crate) fn definitions(&self) -> &Memory {
        &self.globals
    }

    /// The user definitions, taken out (the run keeps none).
    pub(crate) fn take_definitions(&mut self) -> Memory {
        std::mem::take(&mut self.globals)
    }

    /// Makes missing `data/` keys errors instead of nil.
    pub(crate) fn set_strict_data(&mut self, strict: bool) {
        self.strict_data = strict;
    }

    /// The limits of this run.
    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The budget shared with parallel branches.
    pub(crate) fn shared_budget(&self) -> &Arc<SharedBudget> {
        &self.budget
    }

    /// Bytes of the memory budget not charged yet.
    pub(crate) fn heap_left(&self) -> u64 {
        let used = self.budget.heap_used.load(std::sync::atomic::Ordering::Relaxed);
        self.budget.heap_limit.saturating_sub(used)
    }

    /// The memory budget.
    pub(crate) fn heap_limit(&self) -> u64 {
        self.budget.heap_limit
    }

    /// Checks the deadline and cancellation.
    pub(crate) fn check_time(&self) -> Result<(), Flow> {
        self.budget.check_time()
    }

    /// A JSON parse budget of `bytes_left` bytes that checks this run's deadline.
    pub(crate) fn json_budget(&self, bytes_left: u64) -> crate::json::ParseBudget<'_> {
        crate::json::ParseBudget { bytes_left, budget: Some(&self.budget), nodes: 0, failure: None }
    }

    /// The host's clock (`None`: the host keeps runs deterministic).
    pub(crate) fn clock_millis(&self) -> Option<i64> {
        self.host.clock_millis()
    }

    /// Asks the host a discovery question. `None`: the host does not know the name.
    /// A world fault (data-kind error) answers nil, as seed 002 says; others raise.
    pub(crate) fn discover(&mut self, query: &Discovery<'_>) -> Option<EvalResult> {
        let cx = CallCx::new(self.budget.deadline, &self.budget.cancel, None);
        let answer = self.host.discover(query, &cx)?;
        Some(match answer {
            Ok(v) => Ok(v),
            Err(e) if e.is_data() => Ok(Value::Nil),
            Err(e) => match e.kind {
                ToolErrorKind::Timeout => Err(self.budget.timeout_error().into()),
                ToolErrorKind::Cancelled => err(ErrorKind::Cancelled, "the run was cancelled by the host"),
                _ => err(ErrorKind::RuntimeError, e.message),
            },
        })
    }

    /// Calls a host tool with named arguments.
    pub(crate) fn call_tool(&mut self, name: &str, args: &mut [Value]) -> EvalResult {
        let arg_map = tool_args(name, args)?;
        // the host gets data: lazy sequences in the arguments are realised first
        let arg_map = crate::lazy::realize_within(
            &mut crate::builtins::BuiltinContext::new(self, "a tool call"),
            "a tool call",
            arg_map,
            crate::nesting::MAX_VALUE_NESTING,
        )?;
        // the host may convert, compare or keep the arguments on any thread
        match crate::nesting::nesting(&arg_map, crate::nesting::MAX_VALUE_NESTING) {
            crate::nesting::Nesting::Within => {}
            crate::nesting::Nesting::TooDeep => {
                return err(
                    ErrorKind::InvalidToolArgs,
                    format!(
                        "the arguments of tool '{name}' are nested more than {} levels deep; pass flatter data",
                        crate::nesting::MAX_VALUE_NESTING
                    ),
                );
            }
            crate::nesting::Nesting::Stopped => return Err(crate::meter::stopped().into()),
        }
        let used = self.budget.tool_calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let remaining = match self.limits.max_tool_calls {
            Some(max) if used > max as u64 => {
                return err(
                    ErrorKind::ToolCallLimitExceeded,
                    format!(
                        "tool call limit exceeded: at most {max} tool calls per program (max_tool_calls); batch the work into fewer calls"
                    ),
                );
            }
            Some(max) => Some(max as u64 - used),
            None => None,
        };
        self.budget.check_time()?;
        let call = ToolCall { name: name.to_string(), args: arg_map };
        let cx = CallCx::new(self.budget.deadline, &self.budget.cancel, remaining);
        let started = Instant::now();
        let result = self.host.call(&call, &cx);
        let duration = started.elapsed();
        let meta = cx.take_meta();
        let ToolCall { name: tool, args } = call;
        let mut record = ToolCallRecord { name: tool, args, result: None, error: None, duration, meta };
        let out = match result {
            Ok(v) => {
                record.result = Some(v.clone());
                Ok(v)
            }
            Err(e) => {
                let flow = match &e.kind {
                    ToolErrorKind::Data { reason } => Ok(Value::map([
                        (Value::kw("ok"), Value::Bool(false)),
                        (Value::kw("reason"), Value::kw(reason.as_str())),
                        (Value::kw("message"), Value::str(e.message.as_str())),
                    ])),
                    ToolErrorKind::Failed => err(ErrorKind::ToolError, format!("Tool '{name}' failed: {}", e.message)),
                    ToolErrorKind::InvalidArgs => {
                        err(ErrorKind::InvalidToolArgs, format!("Tool '{name}' rejected its arguments: {}", e.message))
                    }
                    ToolErrorKind::UnknownTool => err(ErrorKind::UnknownTool, e.message.clone()),
                    ToolErrorKind::Timeout => Err(self.budget.timeout_error().into()),
                    ToolErrorKind::Cancelled => err(ErrorKind::Cancelled, "the run was cancelled by the host"),
                };
                record.error = Some(e);
                flow
            }
        };
        self.tool_calls.push(record);
        // a host that ignored the deadline must not let the program run on past it
        self.budget.check_time()?;
        out
    }
}

/// The local fuel count at which a run with `max_fuel` that had burned `base` before
/// this interpreter started is over its limit (`u64::MAX` without a limit).
fn fuel_stop(max_fuel: Option<u64>, base: u64) -> u64 {
    match max_fuel {
        Some(max) => max.saturating_sub(base).saturating_add(1),
        None => u64::MAX,
    }
}

/// The map of a literal's entries in the order written (a later duplicate key wins):
/// sorted once and built in one piece instead of inserted key by key.
fn map_of_entries(mut kv: Vec<(Value, Value)>) -> PMap {
    // stable: of equal keys, the one written last ends a run
    kv.sort_by(|a, b| a.0.cmp(&b.0));
    if kv.windows(2).any(|w| w[0].0.cmp(&w[1].0).is_eq()) {
        let mut out: Vec<(Value, Value)> = Vec::with_capacity(kv.len());
        for (k, v) in kv {
            match out.last_mut() {
                Some(last) if last.0.cmp(&k).is_eq() => last.1 = v,
                _ => out.push((k, v)),
            }
        }
        kv = out;
    }
    PMap::from_sorted_unique(kv)
}

/// Flexible key lookup (DIV-47): exact key, then keyword<->string, then the name with
/// `-` replaced by `_` in both forms.
pub(crate) fn flex_get<'a>(m: &'a PMap, key: &Value) -> Option<&'a Value> {
    // a keyword finds a string key of its name too (JSON keys are strings), in one scan
    let found = m.get_either_name(key);
    match key {
        Value::Keyword(k) | Value::Str(k) if found.is_none() => flex_normalized(m, k),
        _ => found,
    }
}

fn flex_normalized<'a>(m: &'a PMap, name: &str) -> Option<&'a Value> {
    if !name.contains('-') {
        return None;
    }
    let n = name.replace('-', "_");
    m.get_named(&n, true).or_else(|| m.get_named(&n, false))
}

/// The key actually stored in `m` that a flexible lookup of `key` finds.
pub(crate) fn flex_get_key(m: &PMap, key: &Value) -> Option<Value> {
    if m.contains_key(key) {
        return Some(key.clone());
    }
    let name = match key {
        Value::Keyword(s) | Value::Str(s) => s,
        _ => return None,
    };
    let normalized = name.replace('-', "_");
    let candidates =
        [Value::str(&**name), Value::kw(&**name), Value::str(normalized.as_str()), Value::kw(normalized.as_str())];
    candidates.into_iter().find(|c| m.contains_key(c))
}

/// The key a write of `k` into `m` uses (DIV-47 for writes): a keyword the map holds only
/// as a string key, as JSON data from the context or a tool does (`"status"` for
/// `:status`, `"user_id"` for `:user-id`), writes that key, so `assoc`, `dissoc`, `merge`,
/// `assoc-in` and `update-in` replace or remove the field instead of adding a second one
/// beside it. Any other key, or a keyword the map holds as written, is used as given.
pub(crate) fn write_key(m: &PMap, k: Value) -> Value {
    let Value::Keyword(name) = &k else { return k };
    if m.is_empty() || m.contains_key(&k) {
        return k;
    }
    if m.get_named(name, false).is_some() {
        return Value::str(&**name);
    }
    if name.contains('-') {
        let n = name.replace('-', "_");
        if m.get_named(&n, true).is_some() {
            return Value::kw(n.as_str());
        }
        if m.get_named(&n, false).is_some() {
            return Value::str(n.as_str());
        }
    }
    k
}

/// Flexible lookup by a bare name (for `data/name`): keyword, string, normalized.
pub(crate) fn flex_get_named<'a>(m: &'a PMap, name: &str) -> Option<&'a Value> {
    m.get_named(name, true).or_else(|| m.get_named(name, false)).or_else(|| flex_normalized(m, name))
}

/// `get` semantics for one level: maps (flexible), vectors by index, sets by member,
/// strings by index; anything else nil.
pub(crate) fn get_in_value(coll: &Value, key: &Value) -> Option<Value> {
    match coll {
        Value::Map(m) => flex_get(m, key).cloned(),
        Value::Vector(v) => match key {
            Value::Int(i) if *i >= 0 => v.get(*i as usize).cloned(),
            _ => None,
        },
        Value::Set(s) => {
            if s.contains(key) {
                Some(key.clone())
            } else {
                None
            }
        }
        Value::Str(s) => match key {
            Value::Int(i) if *i >= 0 => s.chars().nth(*i as usize).map(|c| Value::str(c.to_string())),
            _ => None,
        },
        _ => None,
    }
}

#[inline]
fn compare(op: CmpOp, a: &Value, b: &Value) -> EvalResult<bool> {
    use std::cmp::Ordering::{Greater, Less};
    if let (Value::Int(x), Value::Int(y)) = (a, b) {
        return Ok(match op {
            CmpOp::Eq => x == y,
            CmpOp::NotEq => x != y,
            CmpOp::Lt => x < y,
            CmpOp::Gt => x > y,
            CmpOp::Le => x <= y,
            CmpOp::Ge => x >= y,
        });
    }
    Ok(match op {
        CmpOp::Eq => a.equiv(b),
        CmpOp::NotEq => !a.equiv(b),
        CmpOp::Lt => compare_values(a, b)? == Some(Less),
        CmpOp::Gt => compare_values(a, b)? == Some(Greater),
        CmpOp::Le => matches!(compare_values(a, b)?, Some(o) if o != Greater),
        CmpOp::Ge => matches!(compare_values(a, b)?, Some(o) if o != Less),
    })
}

fn fn_label(l: &Lambda) -> String {
    match &l.name {
        Some(n) => format!("function {n}"),
        None => format!("fn [{}]", l.param_names.join(" ")),
    }
}

/// What a `letfn` node reports when the function in the self slot is not of a group: the
/// analyser only makes those nodes inside group functions.
const OUTSIDE_GROUP: &str = "a letfn function outside its group";

/// The closure `f` (a `letfn` function) and function `j` of its group.
fn group_member(f: &Function, j: u32) -> EvalResult<(&Closure, &Arc<Lambda>)> {
    if let FnRepr::Closure(c) = f.repr()
        && let Some(lambda) = c.group.as_ref().and_then(|g| g.get(j as usize))
    {
        return Ok((c, lambda));
    }
    internal(OUTSIDE_GROUP)
}

fn loop_limit<T>(max: u64) -> EvalResult<T> {
    err(
        ErrorKind::LoopLimitExceeded,
        format!(
            "Loop iteration limit exceeded ({max} iterations). Use reduce/map over a finite sequence instead, or split work across smaller loops."
        ),
    )
}

/// The collection of a `for` binding ([`Interp::binding_coll`]).
enum BindColl {
    /// An all-integer range, charged, whose numbers are counted out.
    Ints {
        start: i64,
        n: u64,
        step: i64,
    },
    Value(Value),
}

/// What a `for` made so far: its items, then (once an endless binding was reached) the
/// lazy rest of it.
#[derive(Default)]
struct ForOut {
    items: PVector,
    tail: Option<Value>,
}

impl ForOut {
    /// The items as a vector, or followed by the lazy tail as one lazy sequence.
    fn into_value(self) -> EvalResult {
        match self.tail.as_ref().and_then(crate::lazy::as_lazy) {
            Some(tail) if self.items.is_empty() => Ok(Value::Lazy(tail.clone())),
            Some(tail) => crate::lazy::concat(self.items, tail),
            None => Ok(Value::from_pvec(self.items)),
        }
    }
}

/// True when a `:while` right after binding `i` (before the next binding) can end it.
fn for_bounded(f: &ForNode, i: usize) -> bool {
    f.clauses
        .get(i + 1..)
        .unwrap_or_default()
        .iter()
        .take_while(|c| !matches!(c, ForClause::Bind(..)))
        .any(|c| matches!(c, ForClause::While(_)))
}

fn internal<T>(what: &str) -> EvalResult<T> {
    err(ErrorKind::RuntimeError, format!("internal interpreter error: {what}"))
}

pub(crate) fn with_span(e: Flow, span: ptc_lisp_syntax::Span) -> Flow {
    match e {
        Flow::Error(mut b) => {
            if b.span.is_none() {
                b.span = Some(span);
            }
            Flow::Error(b)
        }
        other => other,
    }
}
