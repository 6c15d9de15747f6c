//! Dry runs: a whole mission checked, and its first request shown, without asking a
//! model (the seed's planned "dry run mode").
//!
//! Building the agent already checks the prompt's placeholders, the signatures, the
//! tools (names, signatures, exposure, strict validation), the context against the
//! context signature and every limit. A dry run adds what needs the model: its price
//! when a cost budget is set, the first request's estimated cost against that budget,
//! and limits that contradict each other.

use serde::Serialize;

use crate::config::SubAgent;
use crate::llm::{Llm, LlmRequest};

/// What a dry run found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct DryRun {
    /// The model, as it names itself.
    pub model: String,
    /// The first request, exactly as it would be sent.
    pub first_request: LlmRequest,
    /// The first request's estimated cost, when the model's price is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_cost_usd: Option<f64>,
    /// Problems that would make the mission fail or misbehave; empty when it is ready.
    pub problems: Vec<String>,
}

impl DryRun {
    /// True when nothing stands in the mission's way.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// What [`SubAgent::dry_run`] does.
pub(crate) fn dry_run(agent: &SubAgent, llm: &dyn Llm) -> DryRun {
    let cfg = &agent.config;
    let first_request = agent.first_request();
    let model = llm.name();
    let price = cfg.prices.lookup(&model);
    let estimated_cost_usd = price.map(|p| crate::cost::estimate(&p, &first_request, 0));
    let mut problems = Vec::new();
    match (cfg.max_cost_usd, estimated_cost_usd) {
        (Some(budget), None) => problems.push(format!(
            "max_cost_usd: {budget} is set, but no price is known for the model {model:?}; give one (a price table, or \"price\" in its LLM registry entry)"
        )),
        (Some(budget), Some(est)) if est > budget => problems.push(format!(
            "max_cost_usd: the first request alone would cost about ${est:.4}, over the ${budget} budget"
        )),
        _ => {}
    }
    if let Some(mission) = cfg.mission_timeout
        && mission < cfg.limits.timeout
    {
        problems.push(format!(
            "mission_timeout: {} ms is shorter than one program's timeout ({} ms); a long program would end the mission",
            mission.as_millis(),
            cfg.limits.timeout.as_millis()
        ));
    }
    DryRun { model, first_request, estimated_cost_usd, problems }
}
