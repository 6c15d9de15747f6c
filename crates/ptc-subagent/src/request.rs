//! What the model is sent: the system prompt, the first user message, the native tools
//! and the request options, for each mode (and with history compression).

use ptc_lisp_eval::Value;

use crate::compress;
use crate::config::SubAgent;
use crate::llm::{LlmOptions, LlmRequest, Message, ToolSchema};
use crate::mode::Mode;
use crate::prompt::{self, MissionView, ToolLine};
use crate::protocol;
use crate::tool::PreparedTool;

impl SubAgent {
    fn base_system_prompt(&self) -> String {
        let cfg = &self.config;
        let cards = |generated: String| match &cfg.system_prompt {
            Some(custom) => custom.apply(generated),
            None => generated,
        };
        match cfg.mode {
            Mode::Lisp => {
                let base = cards(prompt::system_prompt(cfg.max_turns, false));
                if cfg.compress_history.is_some() {
                    // the USER message keeps the seed's shape: the inventory moves here
                    self.with_view(|view| format!("{base}\n\n{}", prompt::inventory(view)))
                } else {
                    base
                }
            }
            Mode::LispTool => cards(prompt::system_prompt(cfg.max_turns, true)),
            Mode::Text => cards(prompt::text_system_prompt(None)),
            Mode::Combined => self.with_view(|view| {
                // the program-callable tools stay after a custom prompt
                let inventory = prompt::text_system_prompt(Some(&view.tools));
                let generic = prompt::text_system_prompt(None);
                match &cfg.system_prompt {
                    Some(custom) => {
                        let tail = inventory.strip_prefix(generic.as_str()).unwrap_or(&inventory).trim_start();
                        format!("{}\n\n{tail}", custom.apply(generic))
                    }
                    None => inventory,
                }
            }),
        }
    }

    /// The mission as the user gave it, placeholders filled.
    pub(crate) fn mission_text(&self) -> String {
        let cfg = &self.config;
        cfg.prompt.render(&Value::Map(cfg.context.clone()))
    }

    /// Calls `f` with the prompt's view of this agent (tools programs may call, data,
    /// expected output, mission).
    fn with_view<R>(&self, f: impl FnOnce(&MissionView<'_>) -> R) -> R {
        let cfg = &self.config;
        // tool signatures were checked at build time; parsing them again is cheap
        let program_tools: Vec<&PreparedTool> = self.tools.values().filter(|p| p.expose.to_programs()).collect();
        let parsed: Vec<Option<ptc_signature::Signature>> = program_tools
            .iter()
            .map(|p| p.tool.signature.as_deref().and_then(|s| ptc_signature::parse(s).ok()))
            .collect();
        let tools = program_tools
            .iter()
            .zip(parsed.iter())
            .map(|(p, sig)| ToolLine { name: &p.tool.name, signature: sig.as_ref(), description: &p.tool.description })
            .collect();
        let view = MissionView {
            tools,
            catalog: &cfg.catalog,
            context: &cfg.context,
            context_types: cfg.context_types.as_deref(),
            context_descriptions: &cfg.context_descriptions,
            signature: cfg.signature.as_ref(),
            field_descriptions: &cfg.field_descriptions,
            max_tool_calls: cfg.max_tool_calls,
            mission: self.mission_text(),
            prompt_limit: cfg.prompt_limit,
            prelude: &cfg.prelude,
        };
        f(&view)
    }

    /// Request options: in the text modes with a structured signature, the JSON Schema of
    /// the answer.
    pub(crate) fn llm_options(&self) -> LlmOptions {
        let cfg = &self.config;
        let response_schema = match (cfg.mode.is_text(), &cfg.signature) {
            (true, Some(sig)) => prompt::json_answer_schema(&sig.output),
            _ => None,
        };
        LlmOptions { response_schema, ..LlmOptions::default() }
    }
}

/// What [`SubAgent::system_prompt`] does.
pub(crate) fn system_prompt(agent: &SubAgent) -> String {
    let cfg = &agent.config;
    let base = agent.base_system_prompt();
    // program tools (an aggregator's upstreams) are presented after the rules, in
    // the modes that run programs
    match cfg.compose.program_tools.as_ref().filter(|_| cfg.mode != Mode::Text).and_then(|t| t.0.prompt()) {
        Some(catalog) => format!("{base}\n\n<upstream_tools>\n{catalog}\n</upstream_tools>"),
        None => base,
    }
}

/// What [`SubAgent::first_user_message`] does.
pub(crate) fn first_user_message(agent: &SubAgent) -> String {
    let cfg = &agent.config;
    match (cfg.mode, &cfg.compress_history) {
        (Mode::Lisp, Some(opts)) => {
            compress::user_message(&agent.mission_text(), &compress::Summary::default(), opts, cfg.max_turns)
        }
        (Mode::Lisp | Mode::LispTool, _) => agent.with_view(prompt::first_user_message),
        (Mode::Text | Mode::Combined, _) => {
            agent.with_view(|view| prompt::text_user_message(view, cfg.mode == Mode::Combined))
        }
    }
}

/// What [`SubAgent::native_tools`] does.
pub(crate) fn native_tools(agent: &SubAgent) -> Vec<ToolSchema> {
    let mode = agent.config.mode;
    let mut out = Vec::new();
    if mode.is_text() {
        for p in agent.tools.values().filter(|p| p.expose.to_model()) {
            let parameters = p
                .tool
                .signature
                .as_deref()
                .and_then(|s| ptc_signature::parse(s).ok())
                .map(|sig| ptc_signature::schema::input_schema(&sig))
                .unwrap_or_else(|| serde_json::json!({"type": "object"}));
            out.push(ToolSchema { name: p.tool.name.clone(), description: p.tool.description.clone(), parameters });
        }
    }
    match mode {
        Mode::LispTool => out.push(protocol::lisp_eval_schema(protocol::DESCRIPTION_WITH_APP_TOOLS)),
        Mode::Combined => out.push(protocol::lisp_eval_schema(protocol::DESCRIPTION_TEXT_MODE)),
        Mode::Lisp | Mode::Text => {}
    }
    out
}

/// What [`SubAgent::first_request`] does.
pub(crate) fn first_request(agent: &SubAgent) -> LlmRequest {
    LlmRequest {
        system: agent.system_prompt(),
        messages: vec![Message::user(agent.first_user_message())],
        turn: 1,
        tools: agent.native_tools(),
        options: agent.llm_options(),
    }
}
