//! Specs, the LLM registry and its search order.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::Path;

use ptc_llm::LlmErrorKind;
use ptc_providers::{Env, Registry, Vendor, resolve_with};
use support::temp_dir;

const REGISTRY: &str = r#"{
  "haiku": {"vendor": "anthropic", "model": "claude-haiku-4-5", "max_tokens": 1024, "temperature": 0.2},
  "local": {"vendor": "ollama", "model": "qwen3:8b", "timeout_secs": 600},
  "vllm":  {"vendor": "openai", "model": "Qwen/Qwen3-8B", "base_url": "http://10.0.0.5:8000/v1", "api_key_env": "VLLM_KEY"}
}"#;

fn registry() -> Registry {
    Registry::from_json(REGISTRY, Some("ptc-llms.json".into())).unwrap()
}

#[test]
fn vendor_specs_resolve_to_base_urls_and_key_variables() {
    let env = Env::from_pairs([("OPENAI_API_KEY", "sk-x-0123456789")]);
    let r = resolve_with("openai:gpt-4.1-mini", None, &env).unwrap();
    assert_eq!(
        (r.vendor, r.model.as_str(), r.base_url.as_str()),
        (Vendor::OpenAi, "gpt-4.1-mini", "https://api.openai.com/v1")
    );
    assert_eq!((r.key_var.as_deref(), r.key_set), (Some("OPENAI_API_KEY"), true));

    let r = resolve_with("anthropic:claude-sonnet-4-5", None, &env).unwrap();
    assert_eq!(
        (r.base_url.as_str(), r.key_var.as_deref(), r.key_set),
        ("https://api.anthropic.com", Some("ANTHROPIC_API_KEY"), false)
    );

    let r = resolve_with("gemini:gemini-2.5-flash", None, &env).unwrap();
    assert_eq!(
        (r.base_url.as_str(), r.key_var.as_deref()),
        ("https://generativelanguage.googleapis.com", Some("GEMINI_API_KEY"))
    );

    let r = resolve_with("ollama:llama3.2", None, &env).unwrap();
    assert_eq!((r.base_url.as_str(), r.key_var.as_deref()), ("http://127.0.0.1:11434/v1", None));

    let r = resolve_with("openrouter:anthropic/claude-haiku-4.5", None, &env).unwrap();
    assert_eq!((r.model.as_str(), r.base_url.as_str()), ("anthropic/claude-haiku-4.5", "https://openrouter.ai/api/v1"));
    assert_eq!(r.key_var.as_deref(), Some("OPENROUTER_API_KEY"));

    let r = resolve_with("replay:fixtures/run.jsonl", None, &env).unwrap();
    assert_eq!((r.vendor, r.model.as_str(), r.key_var.as_deref()), (Vendor::Replay, "fixtures/run.jsonl", None));

    let custom = Env::from_pairs([
        ("OPENAI_BASE_URL", "http://localhost:8000/v1"),
        ("ANTHROPIC_BASE_URL", "https://proxy.example"),
        ("OLLAMA_HOST", "http://gpu-box:11434/"),
    ]);
    assert_eq!(resolve_with("openai:m", None, &custom).unwrap().base_url, "http://localhost:8000/v1");
    assert_eq!(resolve_with("anthropic:m", None, &custom).unwrap().base_url, "https://proxy.example");
    assert_eq!(resolve_with("ollama:m", None, &custom).unwrap().base_url, "http://gpu-box:11434/v1");
}

#[test]
fn aliases_come_from_the_registry_with_their_defaults() {
    let env = Env::from_pairs([("VLLM_KEY", "k-0123456789")]);
    let r = resolve_with("haiku", Some(&registry()), &env).unwrap();
    assert_eq!((r.vendor, r.model.as_str()), (Vendor::Anthropic, "claude-haiku-4-5"));
    assert_eq!((r.max_tokens, r.temperature), (Some(1024), Some(0.2)));
    assert_eq!(r.alias.as_deref(), Some("haiku"));
    assert_eq!(r.registry.as_deref(), Some(Path::new("ptc-llms.json")));
    assert_eq!(r.label(), "anthropic:claude-haiku-4-5");

    let r = resolve_with("local", Some(&registry()), &env).unwrap();
    assert_eq!(r.timeout, Some(std::time::Duration::from_secs(600)));

    let r = resolve_with("vllm", Some(&registry()), &env).unwrap();
    assert_eq!(
        (r.base_url.as_str(), r.key_var.as_deref(), r.key_set),
        ("http://10.0.0.5:8000/v1", Some("VLLM_KEY"), true)
    );

    let json = serde_json::to_value(resolve_with("local", Some(&registry()), &env).unwrap()).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"spec": "local", "alias": "local", "registry": "ptc-llms.json", "vendor": "ollama",
            "model": "qwen3:8b", "base_url": "http://127.0.0.1:11434/v1", "key_var": null, "key_set": false,
            "max_tokens": null, "temperature": null, "timeout_secs": 600.0})
    );

    let shown = resolve_with("haiku", Some(&registry()), &env).unwrap().to_string();
    assert!(shown.contains("vendor:      anthropic (Anthropic Messages)"), "{shown}");
    assert!(shown.contains("key:         $ANTHROPIC_API_KEY (NOT set)"), "{shown}");
}

#[test]
fn unknown_aliases_are_model_not_found() {
    let env = Env::from_pairs::<String, String>([]);
    let e = resolve_with("sonnet", Some(&registry()), &env).unwrap_err();
    assert_eq!(e.kind, LlmErrorKind::ConfigError);
    assert!(e.message.starts_with("model_not_found"), "{}", e.message);
    assert!(e.message.contains("haiku, local, vllm"), "lists the known aliases: {}", e.message);
    let e = resolve_with("gpt-4o", None, &env).unwrap_err();
    assert!(e.message.starts_with("model_not_found") && e.message.contains("no LLM registry"), "{}", e.message);
    let e = resolve_with("mistral:large", None, &env).unwrap_err();
    assert!(e.message.starts_with("model_not_found"), "an unknown vendor prefix: {}", e.message);
    let e = resolve_with("openai:", None, &env).unwrap_err();
    assert!(e.message.contains("openai:MODEL"), "{}", e.message);
}

#[test]
fn bad_registries_are_config_errors_naming_the_file() {
    let e = Registry::from_json(r#"{"x": {"vendor": "openai"}}"#, Some("llms.json".into())).unwrap_err();
    assert_eq!(e.kind, LlmErrorKind::ConfigError);
    assert!(e.message.starts_with("llms.json:") && e.message.contains("model"), "{}", e.message);
    let e = Registry::from_json(r#"{"x": {"vendor": "openai", "model": "m", "temprature": 1}}"#, None).unwrap_err();
    assert!(e.message.contains("temprature"), "typos are caught: {}", e.message);
    let e = Registry::from_json(r#"{"a:b": {"vendor": "openai", "model": "m"}}"#, None).unwrap_err();
    assert!(e.message.contains("no ':'"), "{}", e.message);
    let odd = Registry::from_json(r#"{"x": {"vendor": "acme", "model": "m"}}"#, None).unwrap();
    let e = resolve_with("x", Some(&odd), &Env::from_pairs::<String, String>([])).unwrap_err();
    assert!(e.message.contains("unknown vendor \"acme\""), "{}", e.message);
}

#[test]
fn the_registry_search_order_is_explicit_then_variable_then_local_then_xdg() {
    let dir = temp_dir("search-order");
    let write = |name: &str, alias: &str| {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!(r#"{{"{alias}": {{"vendor": "ollama", "model": "m"}}}}"#)).unwrap();
        path
    };
    let explicit = write("explicit.json", "from-explicit");
    let variable = write("variable.json", "from-variable");
    let cwd = dir.join("cwd");
    write("cwd/ptc-llms.json", "from-local");
    write("xdg/ptc/llms.json", "from-xdg");
    write("home/.config/ptc/llms.json", "from-home");
    let xdg = dir.join("xdg").display().to_string();
    let home = dir.join("home").display().to_string();
    let var = variable.display().to_string();

    let first_alias = |registry: Option<Registry>| registry.unwrap().aliases().next().unwrap().to_string();
    let all =
        Env::from_pairs([("PTC_LLM_CONFIG", var.as_str()), ("XDG_CONFIG_HOME", xdg.as_str()), ("HOME", home.as_str())]);
    assert_eq!(first_alias(Registry::discover_in(Some(&explicit), &all, &cwd).unwrap()), "from-explicit");
    assert_eq!(first_alias(Registry::discover_in(None, &all, &cwd).unwrap()), "from-variable");
    let no_var = Env::from_pairs([("XDG_CONFIG_HOME", xdg.as_str()), ("HOME", home.as_str())]);
    assert_eq!(first_alias(Registry::discover_in(None, &no_var, &cwd).unwrap()), "from-local");
    let elsewhere = dir.join("empty");
    assert_eq!(first_alias(Registry::discover_in(None, &no_var, &elsewhere).unwrap()), "from-xdg");
    let home_only = Env::from_pairs([("HOME", home.as_str())]);
    assert_eq!(first_alias(Registry::discover_in(None, &home_only, &elsewhere).unwrap()), "from-home");
    assert_eq!(Registry::discover_in(None, &Env::from_pairs::<String, String>([]), &elsewhere).unwrap(), None);

    // Named files must exist.
    let missing = Env::from_pairs([("PTC_LLM_CONFIG", "/nonexistent/llms.json")]);
    let e = Registry::discover_in(None, &missing, &elsewhere).unwrap_err();
    assert!(e.message.contains("/nonexistent/llms.json") && e.message.contains("PTC_LLM_CONFIG"), "{}", e.message);
    assert!(Registry::discover_in(Some(Path::new("/nonexistent/x.json")), &all, &cwd).is_err());
}

#[cfg(not(all(feature = "openai", feature = "anthropic", feature = "gemini")))]
#[test]
fn a_vendor_left_out_of_the_build_is_a_config_error_naming_its_feature() {
    let env = Env::from_pairs([
        ("OPENAI_API_KEY", "k-0123456789"),
        ("ANTHROPIC_API_KEY", "k-0123456789"),
        ("GEMINI_API_KEY", "k-0123456789"),
    ]);
    for (spec, feature, built) in [
        ("openai:m", "openai", cfg!(feature = "openai")),
        ("anthropic:m", "anthropic", cfg!(feature = "anthropic")),
        ("gemini:m", "gemini", cfg!(feature = "gemini")),
    ] {
        let resolved = resolve_with(spec, None, &env).unwrap();
        assert_eq!(resolved.available(), built);
        if !built {
            let e = ptc_providers::from_resolved(&resolved, &env).err().unwrap();
            assert_eq!(e.kind, LlmErrorKind::ConfigError);
            assert!(e.message.contains(&format!("`{feature}` feature")), "{}", e.message);
            assert!(resolved.to_string().contains("this build lacks"), "{resolved}");
        }
    }
}
