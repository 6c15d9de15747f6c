//! The `Host` trait: the evaluator's only door to the outside world.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::value::Value;

/// What the evaluator needs from its embedder. Tool arguments arrive as a string-keyed
/// map (keys already converted `:user-id` -> `"user_id"`).
pub trait Host: Send + Sync {
    /// Names of the tools this host offers (used for analysis and error messages).
    fn tool_names(&self) -> Vec<String>;

    /// True when the tool exists.
    fn has_tool(&self, name: &str) -> bool {
        self.tool_names().iter().any(|n| n == name)
    }

    /// Calls a tool. `Err` carries a message shown to the program's author.
    fn call_tool(&self, name: &str, args: Value) -> Result<Value, String>;
}

/// A host without tools.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoTools;

impl Host for NoTools {
    fn tool_names(&self) -> Vec<String> {
        Vec::new()
    }
    fn call_tool(&self, name: &str, _args: Value) -> Result<Value, String> {
        Err(format!("unknown tool {name}"))
    }
}

/// A tool implemented by a Rust closure.
pub type ToolFn = Arc<dyn Fn(Value) -> Result<Value, String> + Send + Sync>;

/// A host backed by a table of Rust closures; handy for tests and embedding.
#[derive(Default, Clone)]
pub struct FnHost {
    tools: BTreeMap<String, ToolFn>,
}

impl FnHost {
    /// An empty table.
    pub fn new() -> Self {
        FnHost::default()
    }

    /// Adds a tool.
    pub fn with_tool(mut self, name: &str, f: impl Fn(Value) -> Result<Value, String> + Send + Sync + 'static) -> Self {
        self.tools.insert(name.to_string(), Arc::new(f));
        self
    }
}

impl Host for FnHost {
    fn tool_names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }
    fn has_tool(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }
    fn call_tool(&self, name: &str, args: Value) -> Result<Value, String> {
        match self.tools.get(name) {
            Some(f) => f(args),
            None => Err(format!("unknown tool {name}")),
        }
    }
}

/// One entry of the tool-call ledger.
#[derive(Debug, Clone)]
pub struct ToolCallRecord {
    /// Tool name.
    pub name: String,
    /// Arguments as sent (string-keyed map).
    pub args: Value,
    /// Result when the call succeeded.
    pub result: Option<Value>,
    /// Error message when it failed.
    pub error: Option<String>,
    /// How long the call took.
    pub duration: Duration,
}
