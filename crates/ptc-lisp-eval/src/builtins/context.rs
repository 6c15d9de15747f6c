//! What a builtin sees of the run: a narrow call context, not the interpreter.
//!
//! A builtin (and a native function a builtin builds, such as `partial`'s) gets a
//! [`BuiltinContext`]: its own registered name for its messages, and methods to call a
//! function back, burn fuel, charge memory, print, read the user's definitions, ask the
//! host a discovery question and run calls in parallel. Its fields are private, so every
//! limit these methods enforce — the fuel and deadline checks, the memory budget, both
//! print caps — is enforced in one place and no builtin can step around it.
//!
//! (This is not the host's [`CallCx`](crate::host::CallCx), which a tool call gets.)

use std::sync::Arc;

use super::Builtin;
use crate::error::{EvalResult, Flow};
use crate::host::Discovery;
use crate::interp::Interp;
use crate::value::Value;

/// The context a builtin runs in; see the module doc.
pub(crate) struct BuiltinContext<'a, 'h> {
    interp: &'a mut Interp<'h>,
    name: &'static str,
}

impl<'a, 'h> BuiltinContext<'a, 'h> {
    /// The context of a call to the function registered (or displayed) as `name`.
    #[inline]
    pub(crate) fn new(interp: &'a mut Interp<'h>, name: &'static str) -> Self {
        BuiltinContext { interp, name }
    }

    /// The name this function is registered under (`map`, `str/join`, `partial`), for
    /// its error messages.
    #[allow(dead_code)] // in the recipe of ARCHITECTURE.md; no builtin needs it yet
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    /// Calls any callable value (function, keyword, map, set, vector) with `args`.
    #[inline]
    pub(crate) fn apply(&mut self, f: &Value, args: &mut [Value]) -> EvalResult {
        self.interp.apply(f, args)
    }

    /// Calls `f` with `args` lent, not given: they hold the same values when it returns
    /// (see `Interp::apply_lent`).
    #[inline]
    pub(crate) fn apply_lent(&mut self, f: &Value, args: &mut [&mut Value]) -> EvalResult {
        self.interp.apply_lent(f, args)
    }

    /// Calls another builtin (checking its argument count), in a context of its own name.
    #[inline]
    pub(crate) fn call(&mut self, b: &'static Builtin, args: &mut [Value]) -> EvalResult {
        b.call(&mut *self.interp, args)
    }

    /// Burns `n` fuel units (one per step of work); checks the deadline now and then.
    #[inline]
    pub(crate) fn tick(&mut self, n: u64) -> Result<(), Flow> {
        self.interp.tick(n)
    }

    /// Charges memory for `bytes` the program built; fails past `max_heap_bytes`.
    #[inline]
    pub(crate) fn charge(&mut self, bytes: u64) -> Result<(), Flow> {
        self.interp.charge(bytes)
    }

    /// The most iterations one loop may run (`max_loop_iterations`); `trampoline` bounds
    /// its bounces by it.
    pub(crate) fn max_loop_iterations(&self) -> u64 {
        self.interp.limits().max_loop_iterations
    }

    /// Bytes of the memory budget not charged yet.
    pub(crate) fn heap_left(&self) -> u64 {
        self.interp.heap_left()
    }

    /// The memory budget (`max_heap_bytes`).
    pub(crate) fn heap_limit(&self) -> u64 {
        self.interp.heap_limit()
    }

    /// Checks the deadline and cancellation (and a walk that stopped early).
    pub(crate) fn check_time(&self) -> Result<(), Flow> {
        self.interp.check_time()
    }

    /// Fails cleanly when the evaluation stack is nearly used up (deep recursion).
    #[inline]
    pub(crate) fn check_stack(&self) -> Result<(), Flow> {
        self.interp.check_stack()
    }

    /// A JSON parse budget of `bytes_left` bytes, checking this run's deadline.
    pub(crate) fn json_budget(&self, bytes_left: u64) -> crate::json::ParseBudget<'_> {
        self.interp.json_budget(bytes_left)
    }

    /// The printed form of `v` (at most `max_bytes`, `usize::MAX` for all of it), built
    /// within the memory budget and charged to it.
    pub(crate) fn print_value(&mut self, v: &Value, max_bytes: usize) -> EvalResult<String> {
        self.interp.print_value(v, max_bytes)
    }

    /// Prints one line (`println`, `doc`), under both print caps: a line longer than
    /// `max_print_length` characters is cut (saying how long it was), the line is charged
    /// to the memory budget, and past `max_print_bytes` in total lines are dropped (one
    /// marker says so).
    pub(crate) fn print(&mut self, line: String) -> Result<(), Flow> {
        self.interp.print(line)
    }

    /// The `max_print_length` cap: the characters one printed line keeps.
    pub(crate) fn max_print_length(&self) -> usize {
        self.interp.max_print_length()
    }

    /// The user's definition of `name` (`def`), if there is one.
    pub(crate) fn definition(&self, name: &str) -> Option<&Value> {
        self.interp.definitions().get(name)
    }

    /// The docstring of the user's definition `name`, if it has one.
    pub(crate) fn definition_doc(&self, name: &str) -> Option<&str> {
        self.interp.definitions().doc(name)
    }

    /// Every user definition, in name order.
    pub(crate) fn definitions(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.interp.definitions().iter()
    }

    /// Asks the host a discovery question. `None`: the host does not know the name.
    pub(crate) fn discover(&mut self, query: &Discovery<'_>) -> Option<EvalResult> {
        self.interp.discover(query)
    }

    /// The host's clock in milliseconds since the epoch; `None` when the host keeps runs
    /// deterministic (the default).
    pub(crate) fn clock_millis(&self) -> Option<i64> {
        self.interp.clock_millis()
    }

    /// Counts a keyword made at run time against `max_symbols`.
    pub(crate) fn note_made_keyword(&mut self, name: &Arc<str>) -> Result<(), Flow> {
        self.interp.note_made_keyword(name)
    }

    /// What the rest of a lazy `for` makes of one item of its lazy binding.
    pub(crate) fn for_rest(&mut self, comp: &crate::lazy::ForSeq, item: Value) -> EvalResult {
        self.interp.for_rest(comp, item)
    }

    /// Runs `calls` (each a function and its arguments) in parallel branches
    /// (`pmap`, `pcalls`): results in order, the first failing call by position decides
    /// the error, and what the branches print and call is merged in call order under
    /// this run's caps.
    pub(crate) fn parallel(&mut self, calls: Vec<(Value, Vec<Value>)>) -> EvalResult {
        crate::parallel::run(self.interp, calls, self.name)
    }
}
