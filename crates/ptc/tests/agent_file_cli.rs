//! `ptc run --agent FILE`: mission trees from a file, with the real binary and scripted
//! models.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::cli::{command, err, out, root, scratch, write};
use serde_json::{Value, json};
use std::process::Output;

fn ptc(args: &[&str]) -> Output {
    command().args(args).current_dir(root()).output().unwrap()
}

const ANSWER: &str = r#"{"attention":false,"customer":"c16","note":"Customer 16 (gold tier) orders often and pays on time; total paid 1534"}"#;

#[test]
fn the_planner_fixture_runs_its_tree_from_one_script_and_shows_it() {
    let o = ptc(&["run", "--agent", "fixtures/missions/planner/agent.json", "--context", "fixtures/data/orders.json"]);
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    let text = out(&o);
    // the child's turns are boxed and indented, before the parent's turn that called it
    let boxed = text.find("╭─ researcher · depth 1 · up to 3 turn(s)").unwrap();
    assert!(text[boxed..].contains("│ (def p (tool/customer_profile {:id data/id}))"), "{text}");
    assert!(text.contains("╰─ researcher => {\"summary\":\"Customer 16 (gold tier) orders often and pays on time\"}"));
    assert!(boxed < text.find("── turn 1 ──\n;; find the leader").unwrap());
    // the LLM tool's one turn is boxed too: its raw answer and the checked value
    let judged = text.find("╭─ classify · depth 1 · up to 1 turn(s)").unwrap();
    assert!(text[judged..].contains("│ {\"attention\": false, \"reason\": \"a gold customer who pays on time\"}"));
    // the tree after the answer
    let tree = &text[text.find("── agents ──").unwrap()..];
    assert!(tree.contains("\nplanner · 2 turn(s) · => "), "{tree}");
    assert!(tree.contains("\n  turn 1 → tool/researcher (researcher) · 1 turn(s) · => "), "{tree}");
    assert!(tree.contains("\n  turn 2 → tool/classify (classify) · 1 turn(s) · => {\"attention\":false"), "{tree}");
    assert!(tree.contains("\nwhole tree: 4 turn(s), 4 LLM request(s), 4430 input + 280 output tokens"), "{tree}");
}

#[test]
fn json_and_toml_files_give_the_same_step_tree() {
    let mut steps = Vec::new();
    for file in ["agent.json", "agent.toml"] {
        let path = format!("fixtures/missions/planner/{file}");
        let o = ptc(&["run", "--agent", &path, "--context", "fixtures/data/orders.json", "--output", "json"]);
        assert!(o.status.success(), "{file}: {}", err(&o));
        let step: Value = serde_json::from_str(out(&o).trim()).unwrap();
        assert_eq!(step["return"], serde_json::from_str::<Value>(ANSWER).unwrap());
        assert_eq!(step["children"][0]["tool"], "researcher");
        assert_eq!(step["children"][0]["step"]["turns"][0]["tool_calls"][0]["name"], "customer_profile");
        assert_eq!(step["children"][1]["step"]["return"]["reason"], "a gold customer who pays on time");
        // each agent has its own memory
        assert!(step["memory"].get("research").is_some() && step["memory"].get("p").is_none());
        assert!(step["children"][0]["step"]["memory"].get("p").is_some());
        steps.push(step["children"].clone());
    }
    // durations differ between runs; compare the shape
    assert_eq!(steps[0].as_array().unwrap().len(), steps[1].as_array().unwrap().len());
}

#[test]
fn the_trace_holds_the_childs_events_wrapped_as_nested() {
    let dir = scratch();
    let trace = dir.join("trace.jsonl");
    let o = ptc(&[
        "run",
        "--agent",
        "fixtures/missions/planner/agent.json",
        "--context",
        "fixtures/data/orders.json",
        "--output",
        "json",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let lines: Vec<Value> =
        std::fs::read_to_string(&trace).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let nested: Vec<&Value> = lines.iter().filter(|l| l["event"] == "nested").collect();
    assert!(nested.iter().all(|l| (l["agent"] == "researcher" || l["agent"] == "classify") && l["depth"] == 1));
    // the LLM tool's request is in the trace exactly as sent
    let judged = nested.iter().find(|l| l["agent"] == "classify" && l["inner"]["event"] == "llm_request").unwrap();
    assert!(
        judged["inner"]["messages"][0]["content"].as_str().unwrap().starts_with("Does this account need attention")
    );
    let request = nested.iter().find(|l| l["inner"]["event"] == "llm_request").unwrap();
    assert!(request["inner"]["messages"][0]["content"].as_str().unwrap().contains("Research customer c16"));
}

#[test]
fn self_recursion_and_the_depth_limit_work_from_a_file() {
    let dir = scratch();
    let programs = [
        "(return (+ (tool/again {:xs (take 2 data/xs)}) (tool/again {:xs (drop 2 data/xs)})))",
        "(return (tool/again {:xs data/xs}))",
        "(return (reduce + data/xs))",
        "(return (reduce + data/xs))",
    ];
    let lines: Vec<String> =
        programs.iter().map(|p| json!({"content": format!("```clojure\n{p}\n```")}).to_string()).collect();
    let script = write(&dir, "script.jsonl", &lines.join("\n"));
    let file = write(
        &dir,
        "sum.json",
        &json!({"prompt": "Sum {{xs}}", "signature": "(xs [:int]) -> :int", "max_depth": 1,
                "context": {"xs": [1, 2, 3, 4]}, "tools": {"again": "self"}})
        .to_string(),
    );
    let o = ptc(&["run", "--agent", &file, "--llm", &format!("script:{script}"), "--output", "json"]);
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    let step: Value = serde_json::from_str(out(&o).trim()).unwrap();
    assert_eq!(step["return"], json!(10));
    // the first child tried to go one level deeper than max_depth allows
    let first = &step["children"][0]["step"];
    assert_eq!(first["children"][0]["step"]["fail"]["reason"], "max_depth_exceeded");
}

#[test]
fn errors_name_the_file_the_agent_and_the_field() {
    let dir = scratch();
    let cases = [
        (
            json!({"prompt": "x", "tools": {"r": {"agent": {"prompt": "R {{topic}}", "signature": "(topic :string) -> :string"}}}}),
            "agent `root.tools.r`: description: agent tool \"r\" needs a description",
        ),
        (
            json!({"prompt": "x", "tools": {"r": {"agent": {"promt": "R"}}}}),
            "agent `root.tools.r`: agent: unknown field `promt`",
        ),
        (
            json!({"prompt": "x", "tools": {"c": {"llm_tool": {"prompt": "Is {{txt}} ok?", "signature": "(text :string) -> :bool"}}}}),
            "agent `root.tools.c`: prompt: LLM tool \"c\": placeholder {{txt}} is not a signature input",
        ),
        (
            json!({"prompt": "x", "tools": {"c": {"llm_tool": {"prompt": "Is {{text}} ok?", "signature": "(text :string) -> :bool", "llm": "nosuchalias"}}}}),
            "agent `root.tools.c`: llm: ",
        ),
        (
            json!({"prompt": "x", "tools": {"t": {"comand": ["true"]}}}),
            "agent `root.tools.t`: tool: unknown field `comand`",
        ),
        (
            json!({"prompt": "x", "memory_strategy": "lenient"}),
            "agent `root`: memory_strategy: \"lenient\": write \"strict\" or \"rollback\"",
        ),
        (json!({"signature": "{a :int}"}), "agent `root`: prompt: missing"),
    ];
    for (i, (def, expected)) in cases.iter().enumerate() {
        let file = write(&dir, &format!("a{i}.json"), &def.to_string());
        let o = ptc(&["run", "--agent", &file, "--llm", "script:/dev/null"]);
        assert_eq!(o.status.code(), Some(2), "{def}: {}", err(&o));
        let e = err(&o);
        assert!(e.contains(&format!("agent file {file}: {expected}")), "{def}:\n{e}");
    }
    let o = ptc(&["run", "--agent", &write(&dir, "nollm.json", "{\"prompt\": \"x\"}")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("llm: no model; give \"llm\" in the file or --llm SPEC"), "{}", err(&o));
    let o = ptc(&["run", "--agent", &write(&dir, "bad.toml", "prompt = ")]);
    assert!(err(&o).contains("not valid TOML"), "{}", err(&o));
}

#[test]
fn a_failing_child_is_a_tool_error_and_the_turn_budget_spans_the_tree() {
    let dir = scratch();
    let programs = [
        "(tool/helper {:q \"a\"})",
        "(fail {:reason :no_data :message \"nothing\"})",
        "(tool/helper {:q \"b\"})",
        "(println \"thinking\")",
    ];
    let lines: Vec<String> =
        programs.iter().map(|p| json!({"content": format!("```clojure\n{p}\n```")}).to_string()).collect();
    let script = write(&dir, "script.jsonl", &lines.join("\n"));
    let file = write(
        &dir,
        "tree.json",
        &json!({"prompt": "Ask the helper", "turn_budget": 4,
                "tools": {"helper": {"agent": {"prompt": "Answer {{q}}", "signature": "(q :string) -> :string",
                                                "description": "Answers a question"}}}})
        .to_string(),
    );
    let o = ptc(&["run", "--agent", &file, "--llm", &format!("script:{script}"), "--output", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let step: Value = serde_json::from_str(out(&o).trim()).unwrap();
    assert!(step["turns"][0]["error"].as_str().unwrap().contains("agent tool helper failed (no_data): nothing"));
    assert_eq!(step["children"][1]["step"]["fail"]["reason"], "turn_budget_exhausted");
    assert_eq!(step["fail"]["reason"], "turn_budget_exhausted");
}

#[test]
fn prompt_files_are_read_next_to_the_agent_file_and_flags_fill_in() {
    let dir = scratch();
    write(&dir, "mission.txt", "Count the items in data/xs");
    let file = write(&dir, "count.toml", "prompt_file = \"mission.txt\"\nsignature = \":int\"\n");
    let lines = [json!({"content": "```clojure\n(return (count data/xs))\n```"}).to_string()];
    let script = write(&dir, "script.jsonl", &lines.join("\n"));
    let o = ptc(&[
        "run",
        "--agent",
        &file,
        "--llm",
        &format!("script:{script}"),
        "--context-json",
        "{\"xs\": [1, 2, 3]}",
        "--output",
        "json",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let step: Value = serde_json::from_str(out(&o).trim()).unwrap();
    assert_eq!(step["return"], json!(3));
    let o = ptc(&["run", "--agent", &file, "--llm", &format!("script:{script}"), "--prompt", "x"]);
    assert_eq!(o.status.code(), Some(2));
}
