//! `ptc models [SPEC]`: what a model spec resolves to (vendor, model, base URL, key
//! variable), without calling anything; and the model side of `ptc run` (`--llm`,
//! `--llm-config`, `--record`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Result, anyhow};
use clap::Args;
use ptc_providers::{Env, Recorder, Registry, Resolved, Vendor, from_resolved, resolve_with};
use ptc_subagent::Llm;

use crate::Output;

/// `ptc models` flags.
#[derive(Args, Debug)]
pub struct ModelsArgs {
    /// VENDOR:MODEL (openai, anthropic, gemini, ollama, openrouter), replay:FILE, or a
    /// registry alias. Without it: the registry's aliases.
    spec: Option<String>,
    /// LLM registry file [default: $PTC_LLM_CONFIG, ./ptc-llms.json, $XDG_CONFIG_HOME/ptc/llms.json].
    #[arg(long, value_name = "FILE")]
    llm_config: Option<PathBuf>,
    /// text: one field a line; json: one object.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    output: Output,
}

/// Prints the resolution of a spec, or the registry's aliases. Calls no model.
pub fn run(args: ModelsArgs) -> Result<ExitCode> {
    let env = Env::process();
    let registry = load_registry(args.llm_config.as_deref(), &env)?;
    if let Some(spec) = &args.spec {
        let resolved = resolve_with(spec, registry.as_ref(), &env).map_err(|e| anyhow!("{}", e.message))?;
        match args.output {
            Output::Json => out_line!("{}", serde_json::to_string_pretty(&resolved)?),
            Output::Text => out!("{resolved}"),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let resolutions = match &registry {
        Some(r) => r
            .aliases()
            .map(|alias| resolve_with(alias, Some(r), &env).map_err(|e| anyhow!("{}", e.message)))
            .collect::<Result<Vec<_>>>()?,
        None => Vec::new(),
    };
    match args.output {
        Output::Json => {
            let source = registry.as_ref().and_then(Registry::source);
            let json = serde_json::json!({"registry": source, "aliases": resolutions});
            out_line!("{}", serde_json::to_string_pretty(&json)?);
        }
        Output::Text => print_aliases(registry.as_ref(), &resolutions),
    }
    Ok(ExitCode::SUCCESS)
}

fn print_aliases(registry: Option<&Registry>, resolutions: &[Resolved]) {
    match registry.and_then(Registry::source) {
        Some(path) => out_line!("LLM registry: {}", path.display()),
        None if registry.is_some() => out_line!("LLM registry:"),
        None => {
            out_line!(
                "no LLM registry found (--llm-config FILE, $PTC_LLM_CONFIG, ./ptc-llms.json, $XDG_CONFIG_HOME/ptc/llms.json)"
            );
        }
    }
    let width = resolutions.iter().filter_map(|r| r.alias.as_deref()).map(str::len).max().unwrap_or(0);
    for r in resolutions {
        let key = match &r.key_var {
            Some(var) => format!("${var} ({})", if r.key_set { "set" } else { "NOT set" }),
            None => "no key".to_string(),
        };
        let alias = r.alias.as_deref().unwrap_or_default();
        out_line!("  {alias:width$}  {}  {}  {key}", r.label(), ptc_providers::redact_url(&r.base_url));
    }
    let vendors: Vec<String> = Vendor::ALL
        .iter()
        .map(|v| match v {
            Vendor::Replay => "replay:FILE".into(),
            Vendor::OpenRouter => "openrouter:VENDOR/MODEL".into(),
            other => format!("{other}:MODEL"),
        })
        .collect();
    out_line!("specs: {}", vendors.join(", "));
}

/// The registry named by `--llm-config`, or found by the search order.
pub fn load_registry(explicit: Option<&Path>, env: &Env) -> Result<Option<Registry>> {
    Registry::discover(explicit, env).map_err(|e| anyhow!("{}", e.message))
}

/// The model for `ptc run --llm SPEC`: resolved against the registry, its key read from
/// the environment (a missing key is a usage error naming the variable), its answers
/// read up to `max_answer_bytes`.
pub fn provider_llm(spec: &str, llm_config: Option<&Path>, max_answer_bytes: usize) -> Result<Arc<dyn Llm>> {
    let env = Env::process();
    let registry = load_registry(llm_config, &env)?;
    let mut resolved = resolve_with(spec, registry.as_ref(), &env).map_err(|e| {
        // `ptc run` also knows scripted models; say so where the spec made no sense.
        let scripted = if e.message.starts_with("model_not_found") { "; or script:FILE" } else { "" };
        anyhow!("--llm {spec}: {}{scripted}", e.message)
    })?;
    resolved.max_answer_bytes = Some(max_answer_bytes);
    from_resolved(&resolved, &env).map_err(|e| anyhow!("--llm {spec}: {}", e.message))
}

/// `llm`, recording every exchange into `record` when given (`ptc run --record FILE`).
pub fn with_recording(llm: Arc<dyn Llm>, record: Option<&Path>) -> Result<Arc<dyn Llm>> {
    match record {
        Some(path) => Ok(Arc::new(Recorder::create(llm, path).map_err(|e| anyhow!("--record: {}", e.message))?)),
        None => Ok(llm),
    }
}

/// The resolution of `spec`, for `ptc run --dry-run`.
pub fn describe(spec: &str, llm_config: Option<&Path>) -> Result<Resolved> {
    let env = Env::process();
    let registry = load_registry(llm_config, &env)?;
    resolve_with(spec, registry.as_ref(), &env).map_err(|e| anyhow!("--llm {spec}: {}", e.message))
}
