//! The loop reports through `tracing`: spans `run`, `turn`, `llm` and `tool`, with the
//! turn and token fields a subscriber needs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use ptc_subagent::{LlmResponse, ScriptEntry, ScriptedLlm, SubAgent, TokenUsage, Tool};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;

/// `name#id` and the span's recorded fields.
type SpanLog = Vec<(String, Vec<(String, String)>)>;

#[derive(Default, Clone)]
struct Spans(Arc<Mutex<SpanLog>>);

struct Fields<'a>(&'a mut Vec<(String, String)>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_string(), format!("{value:?}")));
    }
}

impl<S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
        let mut fields = Vec::new();
        attrs.record(&mut Fields(&mut fields));
        let mut spans = self.0.lock().unwrap();
        spans.push((format!("{}#{}", attrs.metadata().name(), id.into_u64()), fields));
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let mut spans = self.0.lock().unwrap();
        let key = format!("#{}", id.into_u64());
        if let Some((_, fields)) = spans.iter_mut().rev().find(|(n, _)| n.ends_with(&key)) {
            values.record(&mut Fields(fields));
        }
    }
}

#[test]
fn run_turn_llm_and_tool_spans_carry_their_measurements() {
    let spans = Spans::default();
    tracing_subscriber::registry().with(spans.clone()).init();

    let agent = SubAgent::builder("Go").tool(Tool::new("t", |_| Ok(json!(1)))).build().unwrap();
    let llm = ScriptedLlm::new([ScriptEntry::Respond(LlmResponse {
        content: "```clojure\n(return (tool/t {}))\n```".into(),
        usage: TokenUsage { input: 11, output: 5, ..Default::default() },
        ..Default::default()
    })]);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let step = rt.block_on(agent.run(&llm));
    assert!(step.is_ok());

    let spans = spans.0.lock().unwrap().clone();
    let find = |name: &str| {
        spans
            .iter()
            .find(|(n, _)| n.split('#').next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} span in {spans:?}"))
            .1
            .clone()
    };
    let has = |fields: &[(String, String)], k: &str, v: &str| fields.iter().any(|(fk, fv)| fk == k && fv == v);
    let run = find("run");
    assert!(has(&run, "status", "\"ok\"") && has(&run, "turns", "1"), "{run:?}");
    let turn = find("turn");
    assert!(
        has(&turn, "turn", "1") && has(&turn, "input_tokens", "11") && has(&turn, "output_tokens", "5"),
        "{turn:?}"
    );
    let llm_span = find("llm");
    assert!(has(&llm_span, "input_tokens", "11") && has(&llm_span, "attempt", "1"), "{llm_span:?}");
    let tool = find("tool");
    assert!(has(&tool, "tool_name", "\"t\"") && tool.iter().any(|(k, _)| k == "duration_ms"), "{tool:?}");
}
