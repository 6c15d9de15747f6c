//! Compiled agents: ask the model once for a program, then run that program many times
//! over new context without a model.
//!
//! [`SubAgent::compile`] runs the agent as a single-shot mission (one turn) on its own
//! context as the sample; the program of that turn, if it produced a valid answer, is
//! kept. [`CompiledAgent::execute`] runs it with another context and the same tools and
//! checks the result against the signature, exactly as the loop would. Tools that need a
//! model at call time (agent tools, LLM tools on the caller's model) report an error:
//! there is no caller.
//!
//! ```
//! use ptc_subagent::{ScriptedLlm, SubAgent};
//! use serde_json::json;
//!
//! let agent = SubAgent::builder("Total of the paid orders")
//!     .signature("{total :int}")
//!     .context_value("orders", json!([{"amount": 5, "paid": true}, {"amount": 7, "paid": false}]))
//!     .build()?;
//! let llm = ScriptedLlm::texts(["```clojure\n(return {:total (sum (map :amount (filter :paid data/orders)))})\n```"]);
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let compiled = runtime.block_on(agent.compile(&llm)).map_err(|s| format!("{:?}", s.fail))?;
//!
//! let mut context = serde_json::Map::new();
//! context.insert("orders".into(), json!([{"amount": 2, "paid": true}, {"amount": 3, "paid": true}]));
//! assert_eq!(compiled.execute(context), Ok(json!({"total": 5})));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ptc_lisp_eval::{Cancel, Engine, RunResult, Value};
use serde_json::Value as Json;

use crate::config::SubAgent;
use crate::exec::{self, ExecRequest};
use crate::llm::Llm;
use crate::reason::Reason;
use crate::step::{Fail, Step};

/// A program derived once by a model, runnable without one.
#[derive(Clone)]
pub struct CompiledAgent {
    agent: SubAgent,
    source: String,
    engine: Engine,
    derivation: Step,
}

impl std::fmt::Debug for CompiledAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledAgent").field("source", &self.source).finish_non_exhaustive()
    }
}

/// What [`SubAgent::compile`] does.
pub(crate) async fn compile(agent: &SubAgent, llm: &dyn Llm) -> Result<CompiledAgent, Step> {
    let mut config = (*agent.config).clone();
    config.max_turns = 1;
    config.retry_turns = 0;
    let single = SubAgent { config: Arc::new(config), tools: agent.tools.clone() };
    let step = single.run(llm).await;
    let source = step.turns.last().and_then(|t| t.program.clone());
    match (step.is_ok(), source) {
        (true, Some(source)) => {
            let engine = crate::config::engine_for(&agent.config);
            Ok(CompiledAgent { agent: agent.clone(), source, engine, derivation: step })
        }
        (true, None) => {
            let mut failed = step;
            failed.fail = Some(Fail::new(Reason::NoCodeFound, "the model answered without a program to compile"));
            failed.status = crate::step::Status::Error;
            Err(failed)
        }
        (false, _) => Err(step),
    }
}

impl CompiledAgent {
    /// The program.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The mission that derived the program.
    pub fn derivation(&self) -> &Step {
        &self.derivation
    }

    /// Runs the program over `context` (blocking; no model is asked) and checks the answer
    /// against the agent's signature.
    pub fn execute(&self, context: serde_json::Map<String, Json>) -> Result<Json, Fail> {
        let Value::Map(context) = ptc_lisp_eval::json::from_json(&Json::Object(context)) else {
            return Err(Fail::new(Reason::ValidationError, "the context must be a JSON object"));
        };
        let req = ExecRequest {
            source: self.source.clone(),
            context,
            memory: self.agent.config.prelude.memory().clone(),
            turn_history: Vec::new(),
            turn: 1,
            tools: self.agent.tools.clone(),
            cache: Arc::new(Mutex::new(HashMap::new())),
            observer: None,
            cancel: Cancel::new(),
            span: tracing::Span::none(),
            nest: None,
            extra: self.agent.config.compose.program_tools.as_ref().map(|t| t.0.host()),
        };
        let outcome = exec::execute(&self.engine, req).outcome;
        let value = match outcome.result {
            RunResult::Returned(v) | RunResult::Value(v) => v,
            RunResult::Failed(v) => return Err(crate::mission::user_fail(&v)),
            RunResult::Error(e) => return Err(Fail::new(e.kind.as_str(), e.message)),
        };
        let value = crate::mission::normalize_keys(&value);
        if let Some(sig) = &self.agent.config.signature {
            let report = ptc_signature::validate(&value, &sig.output, ptc_signature::Mode::Enabled);
            if !report.is_ok() {
                return Err(Fail::new(Reason::ValidationError, report.render_errors()));
            }
        }
        ptc_lisp_eval::json::to_json(&value).map_err(|e| Fail::new(Reason::ValidationError, e.to_string()))
    }
}
