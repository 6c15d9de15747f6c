//! Last-use moves: a local read for the last time is moved out of its slot instead of
//! cloned.
//!
//! Values are reference counted, and the collection builtins update a collection in place
//! when they hold its only reference (`Arc::make_mut`). A local that still sits in its slot
//! while `assoc` runs is a second reference, so without this pass every
//! `(fn [m x] (assoc m k v))` in a `reduce` copies the map's path instead of updating it.
//!
//! The pass runs once per function body (and once over the top-level forms). It follows
//! evaluation order, so each read is attributed to the binding that is live at that point
//! (slots are reused by sibling scopes), and records the reads as a trace: a sequence, with
//! the branches of `if` and `case` as alternatives. Walking that trace backwards gives, for
//! each read, whether any read of the same binding can still follow it. A read becomes
//! [`Node::LocalMove`] when:
//! - no read of its binding can follow it (the branches of an `if` are exclusive, so
//!   `(if (< i n) (recur (inc i) (assoc m k i)) m)` moves `m` in both), and
//! - no repeating construct (a `loop` body, what follows a `for`/`doseq` binding) lies between the binding and the
//!   read, so the read runs at most once per execution of its binding. The function body
//!   itself repeats on `recur`, but `recur` rebinds every parameter, and a `let` inside it
//!   rebinds its slot before the read on every pass.
//!
//! In `(assoc m k (inc (get m k 0)))` the `m` given to `get` is the last read (arguments
//! run left to right), so `get` takes it and `assoc`'s copy is the only one left when it
//! runs.
//!
//! Reads that only borrow the slot (keyword lookups and comparisons on a local) count as
//! reads but stay borrows.

use crate::node::{CaptureFrom, ForClause, Node, Pattern};

/// Rewrites single, non-repeated reads of locals in `body` into moves. `params` and `rest`
/// are the function's parameter patterns (empty for the top level).
///
/// Returns whether the parameters stay in their slots for the whole body: each is a plain
/// name (no destructuring, no `& rest`), none of their reads became a move and no `recur`
/// rebinds them. A call can then lend such a function its arguments and take them back
/// from the frame afterwards (see `Interp::apply_lent`).
pub(crate) fn mark_moves(params: &mut [Pattern], mut rest: Option<&mut Pattern>, body: &mut [Node]) -> bool {
    let mut count = Pass::default();
    count.run(params, rest.as_deref_mut(), body);
    let decisions = count.decide();
    // the parameters are bound first, so a plain parameter list's bindings are 0..len
    let plain = rest.is_none() && params.iter().all(|p| matches!(p, Pattern::Bind(_)));
    let param_moved =
        count.reads.iter().zip(&decisions).any(|(r, moved)| *moved && r.binding.is_some_and(|b| b < params.len()));
    let keeps = plain && !param_moved && !count.recurs_to_fn;
    let mut rewrite = Pass { decisions: Some(decisions), ..Pass::default() };
    rewrite.run(params, rest, body);
    keeps
}

#[derive(Clone, Copy)]
struct Binding {
    region: u32,
}

/// What evaluation order records: reads in order, and the exclusive branches of `if` and
/// `case`.
enum Event {
    /// The read with this index in [`Pass::reads`].
    Read(usize),
    /// Exactly one of these sequences runs.
    Branches(Vec<Vec<Event>>),
}

#[derive(Clone, Copy)]
struct Read {
    binding: Option<usize>,
    region: u32,
    movable: bool,
}

#[derive(Default)]
struct Pass {
    /// Slot -> the binding live in it.
    live: Vec<Option<usize>>,
    bindings: Vec<Binding>,
    reads: Vec<Read>,
    region: u32,
    next_region: u32,
    /// Second pass: for each read in order, whether it becomes a move.
    decisions: Option<Vec<bool>>,
    cursor: usize,
    /// Inside an `:or` default: reads are recorded but never moved.
    pinned: u32,
    /// The trace being recorded: the innermost open sequence is last.
    trace: Vec<Vec<Event>>,
    /// `loop` bodies the visit is inside of.
    loops: u32,
    /// A `recur` outside every `loop`: it rebinds the function's parameters.
    recurs_to_fn: bool,
}

impl Pass {
    fn run(&mut self, params: &mut [Pattern], rest: Option<&mut Pattern>, body: &mut [Node]) {
        for p in params.iter_mut().chain(rest) {
            self.bind(p, self.region);
        }
        for n in body {
            self.visit(n);
        }
    }

    fn decide(&mut self) -> Vec<bool> {
        let trace = self.trace.pop().unwrap_or_default();
        let mut last = vec![false; self.reads.len()];
        let mut live = vec![false; self.bindings.len()];
        self.mark_last(&trace, &mut live, &mut last);
        self.reads
            .iter()
            .zip(last)
            .map(|(r, last)| match r.binding {
                Some(b) => r.movable && last && self.bindings[b].region == r.region,
                None => false,
            })
            .collect()
    }

    /// Walks `events` backwards from `live` (the bindings read after them), marking each
    /// read after which no read of its binding can follow; leaves in `live` the bindings
    /// read from the start of `events` on.
    fn mark_last(&self, events: &[Event], live: &mut [bool], last: &mut [bool]) {
        for e in events.iter().rev() {
            match e {
                Event::Read(i) => {
                    if let Some(b) = self.reads[*i].binding {
                        last[*i] = !live[b];
                        live[b] = true;
                    }
                }
                Event::Branches(branches) => {
                    let after = live.to_vec();
                    for branch in branches {
                        let mut l = after.clone();
                        self.mark_last(branch, &mut l, last);
                        for (acc, x) in live.iter_mut().zip(l) {
                            *acc |= x;
                        }
                    }
                }
            }
        }
    }

    /// Records the branches `visit` is called on as exclusive alternatives.
    fn branches<'n>(&mut self, nodes: impl IntoIterator<Item = Option<&'n mut Node>>) {
        if self.decisions.is_some() {
            for n in nodes.into_iter().flatten() {
                self.visit(n);
            }
            return;
        }
        let mut out = Vec::new();
        for n in nodes {
            self.trace.push(Vec::new());
            if let Some(n) = n {
                self.visit(n);
            }
            out.push(self.trace.pop().unwrap_or_default());
        }
        self.event(Event::Branches(out));
    }

    fn event(&mut self, e: Event) {
        match self.trace.last_mut() {
            Some(seq) => seq.push(e),
            None => self.trace.push(vec![e]),
        }
    }

    fn fresh_region(&mut self) -> u32 {
        self.next_region += 1;
        self.next_region
    }

    /// Records a read of `slot`; in the rewrite pass, answers whether it becomes a move.
    fn read(&mut self, slot: u32, movable: bool) -> bool {
        if let Some(decisions) = &self.decisions {
            let d = decisions.get(self.cursor).copied().unwrap_or(false);
            self.cursor += 1;
            return d;
        }
        let binding = self.live.get(slot as usize).copied().flatten();
        self.reads.push(Read { binding, region: self.region, movable: movable && self.pinned == 0 });
        self.event(Event::Read(self.reads.len() - 1));
        false
    }

    fn bind_slot(&mut self, slot: u32, region: u32) {
        let i = slot as usize;
        if self.live.len() <= i {
            self.live.resize(i + 1, None);
        }
        self.bindings.push(Binding { region });
        self.live[i] = Some(self.bindings.len() - 1);
    }

    /// Binds a pattern's slots, then visits its `:or` defaults (so a default that reads a
    /// slot of the same pattern counts against the new binding: conservative).
    fn bind(&mut self, p: &mut Pattern, region: u32) {
        self.bind_slots(p, region);
        self.visit_defaults(p);
    }

    fn bind_slots(&mut self, p: &mut Pattern, region: u32) {
        match p {
            Pattern::Bind(s) => self.bind_slot(*s, region),
            Pattern::Ignore => {}
            Pattern::Seq { items, rest, as_slot } => {
                for i in items.iter_mut() {
                    self.bind_slots(i, region);
                }
                if let Some(r) = rest {
                    self.bind_slots(r, region);
                }
                if let Some(s) = as_slot {
                    self.bind_slot(*s, region);
                }
            }
            Pattern::Map { entries, as_slot } => {
                for e in entries.iter_mut() {
                    self.bind_slots(&mut e.pattern, region);
                }
                if let Some(s) = as_slot {
                    self.bind_slot(*s, region);
                }
            }
        }
    }

    fn visit_defaults(&mut self, p: &mut Pattern) {
        match p {
            Pattern::Bind(_) | Pattern::Ignore => {}
            Pattern::Seq { items, rest, .. } => {
                for i in items {
                    self.visit_defaults(i);
                }
                if let Some(r) = rest {
                    self.visit_defaults(r);
                }
            }
            Pattern::Map { entries, .. } => {
                for e in entries {
                    if let Some(d) = &mut e.default {
                        // a default runs only when its key is missing; its reads stay clones
                        self.pinned += 1;
                        self.visit(d);
                        self.pinned -= 1;
                    }
                    self.visit_defaults(&mut e.pattern);
                }
            }
        }
    }

    fn visit_all(&mut self, nodes: &mut [Node]) {
        for n in nodes {
            self.visit(n);
        }
    }

    fn visit(&mut self, n: &mut Node) {
        match n {
            Node::Local(s) => {
                let s = *s;
                if self.read(s, true) {
                    *n = Node::LocalMove(s);
                }
            }
            Node::LocalMove(s) => {
                self.read(*s, false);
            }
            Node::Const(_)
            | Node::Capture(_)
            | Node::SelfFn
            | Node::Sibling(_)
            | Node::Global(..)
            | Node::Builtin(_)
            | Node::Data(..)
            | Node::ToolRef(_)
            | Node::TurnHistory(_)
            | Node::Raise(..) => {}
            Node::Vector(items) | Node::Set(items) | Node::Do(items) | Node::And(items) | Node::Or(items) => {
                self.visit_all(items)
            }
            Node::Map(entries) => {
                for (k, v) in entries {
                    self.visit(k);
                    self.visit(v);
                }
            }
            Node::KeyedMap(m) => {
                for (_, v) in m.values.iter_mut() {
                    self.visit(v);
                }
            }
            Node::If(b) => {
                let (test, then, otherwise) = &mut **b;
                self.visit(test);
                self.branches([Some(then), Some(otherwise)]);
            }
            Node::Let(bindings, body) => {
                for (p, init) in bindings.iter_mut() {
                    self.visit(init);
                    let region = self.region;
                    self.bind(p, region);
                }
                self.visit(body);
            }
            Node::Loop(l) => {
                let inner = self.fresh_region();
                for (p, init) in l.bindings.iter_mut() {
                    self.visit(init);
                    self.bind(p, inner);
                }
                let outer = std::mem::replace(&mut self.region, inner);
                self.loops += 1;
                self.visit(&mut l.body);
                self.loops -= 1;
                self.region = outer;
            }
            Node::Recur(args) => {
                if self.loops == 0 {
                    self.recurs_to_fn = true;
                }
                self.visit_all(args)
            }
            Node::Fn(_, captures) => {
                for c in captures.iter() {
                    if let CaptureFrom::Local(s) = c {
                        self.read(*s, false);
                    }
                }
            }
            Node::Letfn(l) => {
                for c in l.captures.iter() {
                    if let CaptureFrom::Local(s) = c {
                        self.read(*s, false);
                    }
                }
                let region = self.region;
                for s in l.slots.iter() {
                    self.bind_slot(*s, region);
                }
                self.visit(&mut l.body);
            }
            Node::CallBuiltin(_, args, _) | Node::ToolCall(_, args, _) | Node::CallSibling(_, args, _) => {
                self.visit_all(args)
            }
            Node::Pipeline(p) => self.visit_all(&mut p.nodes),
            Node::Arith(_, _, operands, _) => {
                let (x, y) = &mut **operands;
                self.visit(x);
                if let Some(y) = y {
                    self.visit(y);
                }
            }
            Node::Call(f, args, _) => {
                self.visit(f);
                self.visit_all(args);
            }
            Node::Test(_, target, _) => match &mut **target {
                // the evaluator reads a local argument in place
                Node::Local(s) => {
                    self.read(*s, false);
                }
                other => self.visit(other),
            },
            Node::GetKey(_, target, default) => {
                match &mut **target {
                    // the evaluator borrows a local target in place
                    Node::Local(s) => {
                        self.read(*s, false);
                    }
                    other => self.visit(other),
                }
                if let Some(d) = default {
                    self.visit(d);
                }
            }
            Node::Compare(_, operands) => {
                let (a, b) = &mut **operands;
                self.visit_compared(a);
                self.visit_compared(b);
            }
            Node::CompareItems(_, sides, _) => {
                let (xs, ys) = &mut **sides;
                self.visit_all(xs);
                self.visit_all(ys);
            }
            Node::Def { value, .. } => self.visit(value),
            Node::Case(c) => {
                self.visit(&mut c.expr);
                // no default: nothing runs when no clause matches
                let default = Some(c.default.as_mut());
                self.branches(c.clauses.iter_mut().map(|(_, result)| Some(result)).chain(default));
            }
            Node::For(f) => {
                // each binding clause repeats everything after it once per element: it
                // opens a region of its own
                let outer = self.region;
                for clause in f.clauses.iter_mut() {
                    match clause {
                        ForClause::Bind(p, coll) => {
                            self.visit(coll);
                            self.region = self.fresh_region();
                            let region = self.region;
                            self.bind(p, region);
                        }
                        ForClause::Let(bindings) => {
                            for (p, init) in bindings.iter_mut() {
                                self.visit(init);
                                let region = self.region;
                                self.bind(p, region);
                            }
                        }
                        ForClause::When(t) | ForClause::While(t) => self.visit(t),
                    }
                }
                self.visit(&mut f.body);
                self.region = outer;
            }
            Node::Return(v) | Node::Fail(v) => self.visit(v),
        }
    }

    /// Comparison operands that are locals (or keyword lookups on locals) are borrowed by
    /// the evaluator.
    fn visit_compared(&mut self, n: &mut Node) {
        match n {
            Node::Local(s) => {
                self.read(*s, false);
            }
            other => self.visit(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::analyze::{AnalyzeEnv, analyze_program};

    /// How many reads of the local in `slot` became moves in `src`.
    fn moves_of(slot: u32, src: &str) -> usize {
        let forms = ptc_lisp_syntax::parse_program(src).unwrap();
        let env = AnalyzeEnv { max_symbols: 10_000, ..AnalyzeEnv::default() };
        let program = analyze_program(&forms, &env).unwrap();
        format!("{:?}", program.nodes).matches(&format!("LocalMove({slot})")).count()
    }

    #[test]
    fn reads_in_exclusive_branches_are_each_last() {
        // `m` (slot 1) in the recur and in the result: both moves, so assoc updates in place
        assert_eq!(moves_of(1, "(loop [i 0 m {}] (if (< i 3) (recur (inc i) (assoc m i i)) m))"), 2);
        assert_eq!(moves_of(0, "(let [v [1]] (case 1 1 (conj v 1) 2 (conj v 2) v))"), 3);
        // a read after the if keeps the reads inside it clones
        assert_eq!(moves_of(0, "(let [v [1]] (if true (count v) 0) (conj v 2))"), 1);
        assert_eq!(moves_of(0, "(let [v [1]] [(if true (count v) 0) (conj v 2)])"), 1);
    }

    #[test]
    fn the_last_of_several_reads_moves() {
        // `get`'s `m` is read after `assoc`'s (arguments run left to right)
        assert_eq!(moves_of(0, "(fn [m k] (assoc m k (inc (get m k 0))))"), 1);
        assert_eq!(moves_of(1, "(fn [m k] (assoc m k (inc (get m k 0))))"), 1);
        assert_eq!(moves_of(0, "(let [v [1 2]] [(count v) (conj v 3) (count v)])"), 1);
    }

    /// Whether the first function in `src` keeps its parameters in their slots.
    fn keeps_params(src: &str) -> bool {
        let forms = ptc_lisp_syntax::parse_program(src).unwrap();
        let env = AnalyzeEnv { max_symbols: 10_000, ..AnalyzeEnv::default() };
        let program = analyze_program(&forms, &env).unwrap();
        let text = format!("{:?}", program.nodes);
        let at = text.find("keeps_params: ").unwrap() + "keeps_params: ".len();
        text[at..].starts_with("true")
    }

    #[test]
    fn functions_that_only_borrow_their_parameters_keep_them() {
        assert!(keeps_params("(fn [a b] (compare [(:p b) (:q b)] [(:p a) (:q a)]))"));
        assert!(keeps_params("(fn [x] (loop [i 0] (if (< i 3) (recur (inc i)) (:k x))))"));
        // moved into a call, rebound by recur, destructured, variadic
        assert!(!keeps_params("(fn [a b] (compare (count a) (count b)))"));
        assert!(!keeps_params("(fn [a b] (if (nil? a) (recur 0 b) (compare a b)))"));
        assert!(!keeps_params("(fn [[a] b] (compare (:k a) (:k b)))"));
        assert!(!keeps_params("(fn [a & more] (:k a))"));
    }

    #[test]
    fn reads_inside_repeating_constructs_of_outer_bindings_stay_clones() {
        assert_eq!(moves_of(0, "(let [v [1]] (loop [i 0] (if (< i 2) (recur (inc i)) (conj v i))))"), 0);
        assert_eq!(moves_of(0, "(let [v [1]] (for [x [1 2]] (conj v x)))"), 0);
    }
}
