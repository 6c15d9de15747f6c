//! The nesting check of everything that leaves a run (its result, its definitions, a tool
//! call's arguments): no value may hold another more than [`MAX_VALUE_NESTING`] levels
//! down, so printing, comparing and converting it are safe on any thread.

use std::collections::HashMap;
use std::sync::Arc;

use crate::meter;
use crate::value::Value;

/// Deepest nesting a result, a definition or a tool call's arguments may have, counting
/// collection items and the values functions hold.
pub const MAX_VALUE_NESTING: usize = 1_000;

/// What [`nesting`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nesting {
    /// Nothing deeper than the limit.
    Within,
    /// Some value sits deeper than the limit.
    TooDeep,
    /// The walk stopped early (deadline or cancellation; the meter recorded which).
    Stopped,
}

/// Whether `v` holds anything more than `max` levels below it, counting every level a
/// value can hold another at: collection items, map keys and values, and what functions
/// hold (a closure's captures, a native function's values and state, `reduced`, what a
/// lazy sequence was built from). A value nested too deep here could not be printed,
/// compared or converted safely off the evaluation thread.
///
/// Iterative (an explicit stack, never deeper than `max` frames), metered per node, and
/// linear in the distinct nodes: a shared node's height (levels down to its deepest leaf)
/// is computed once and remembered, so a node reached again at a greater depth is still
/// judged by its full height.
pub(crate) fn nesting(v: &Value, max: usize) -> Nesting {
    struct Frame {
        key: usize,
        /// Where this node's held values begin in `pending`.
        start: usize,
        /// Levels from this node to its deepest leaf found so far (the node itself is 1).
        height: usize,
    }
    // the held values still to visit, of every open node (each node's after its parent's)
    let mut pending: Vec<Value> = Vec::new();
    let Some(key) = identity(v) else { return Nesting::Within };
    let leaves = add_held(v, &mut pending);
    if leaves && max < 1 {
        return Nesting::TooDeep;
    }
    let mut heights: HashMap<usize, usize> = HashMap::new();
    let mut stack = vec![Frame { key, start: 0, height: if leaves { 2 } else { 1 } }];
    loop {
        // the depth of the held values of the node on top
        let depth = stack.len();
        let Some(top) = stack.last_mut() else { return Nesting::Within };
        let next = if pending.len() > top.start { pending.pop() } else { None };
        if let Some(kid) = next {
            let Some(key) = identity(&kid) else { continue };
            if let Some(&h) = heights.get(&key) {
                if depth + h - 1 > max {
                    return Nesting::TooDeep;
                }
                top.height = top.height.max(h + 1);
                continue;
            }
            if depth > max || !meter::step() {
                return if depth > max { Nesting::TooDeep } else { Nesting::Stopped };
            }
            let start = pending.len();
            let leaves = add_held(&kid, &mut pending);
            if leaves && depth + 1 > max {
                return Nesting::TooDeep;
            }
            stack.push(Frame { key, start, height: if leaves { 2 } else { 1 } });
        } else {
            let (key, h) = (top.key, top.height);
            heights.insert(key, h);
            stack.pop();
            if let Some(parent) = stack.last_mut() {
                parent.height = parent.height.max(h + 1);
            }
        }
    }
}

/// The identity of a value that can hold others (`None` for plain values).
fn identity(v: &Value) -> Option<usize> {
    Some(match v {
        Value::Vector(a) | Value::List(a) => Arc::as_ptr(a) as *const u8 as usize,
        Value::Set(a) => Arc::as_ptr(a) as *const u8 as usize,
        Value::Map(a) => Arc::as_ptr(a) as *const u8 as usize,
        Value::Func(f) => Arc::as_ptr(f) as *const u8 as usize,
        Value::Lazy(l) => Arc::as_ptr(l) as *const u8 as usize,
        Value::Reduced(r) => Arc::as_ptr(r) as *const u8 as usize,
        _ => return None,
    })
}

/// Pushes the values `v` holds that can hold others in turn onto `pending`; `true` when
/// it also holds plain values (leaves one level down).
fn add_held(v: &Value, pending: &mut Vec<Value>) -> bool {
    let mut leaves = false;
    let mut add = |x: &Value| {
        if matches!(
            x,
            Value::Vector(_)
                | Value::List(_)
                | Value::Map(_)
                | Value::Set(_)
                | Value::Func(_)
                | Value::Lazy(_)
                | Value::Reduced(_)
        ) {
            pending.push(x.clone());
        } else {
            leaves = true;
        }
    };
    match v {
        Value::Vector(a) | Value::List(a) => a.iter().for_each(&mut add),
        Value::Set(a) => a.iter().for_each(&mut add),
        Value::Map(a) => {
            for (k, x) in a.iter() {
                add(k);
                add(x);
            }
        }
        Value::Func(f) => f.each_held(&mut |x| add(&x)),
        Value::Lazy(l) => l.each_held(&mut |x| add(&x)),
        Value::Reduced(r) => add(r.value()),
        _ => {}
    }
    leaves
}
