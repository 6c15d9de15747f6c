//! Why the agent loop ends a mission: the one vocabulary of `Fail.reason` for the
//! failures the loop itself decides.
//!
//! A mission's `Fail.reason` is one of three things: a [`Reason`] below; the evaluator's
//! [`ErrorKind`](ptc_lisp_eval::ErrorKind) of a program's error when a one-turn mission
//! ends in it (`type_error`, `unbound_var`, ...); or the program's own `(fail {:reason
//! :out_of_stock})`. A concept has one word across both vocabularies: where the loop
//! and the evaluator mean the same thing (`timeout`, `memory_exceeded`,
//! `validation_error`, `parse_error`), the loop uses the evaluator's word.
//!
//! The words are stable (the seed's "Error Reasons Reference" names most of them); the
//! table in `docs/reasons/agent-loop.md` is generated from [`Reason::ALL`] by
//! `cargo xtask docs`.

use std::fmt;

/// Declares [`Reason`] from one table (variant, word, description), so the enum,
/// [`Reason::ALL`], [`Reason::as_str`] and [`Reason::description`] cannot drift apart.
macro_rules! reasons {
    ($($variant:ident => $word:literal, $description:literal;)*) => {
        /// A failure reason the agent loop reports in `Fail.reason` (see the module
        /// documentation for the other values `Fail.reason` takes).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Reason {
            $(
                #[doc = $description]
                $variant,
            )*
        }

        impl Reason {
            /// Every reason, in the order of the documentation table.
            pub const ALL: &'static [Reason] = &[$(Reason::$variant),*];

            /// The stable snake_case word (`Fail.reason`).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Reason::$variant => $word,)*
                }
            }

            /// One line: when the loop reports it.
            pub const fn description(self) -> &'static str {
                match self {
                    $(Reason::$variant => $description,)*
                }
            }
        }
    };
}

reasons! {
    MaxTurnsExceeded => "max_turns_exceeded", "The work turns (and retry turns, when set) ran out without a valid (return ...).";
    TurnBudgetExhausted => "turn_budget_exhausted", "The turn budget the whole mission tree shares (turn_budget) ran out; nested agents count.";
    MaxDepthExceeded => "max_depth_exceeded", "A nested agent or LLM tool would run deeper than max_depth.";
    MissionTimeout => "mission_timeout", "The whole mission ran past mission_timeout.";
    Timeout => "timeout", "A model asked by an LLM tool did not answer before the calling program's deadline.";
    LlmError => "llm_error", "The model request failed after every retry (or with an error not worth retrying).";
    ModelNotFound => "model_not_found", "An llm_alias names no model in the LLM registry.";
    MemoryExceeded => "memory_exceeded", "The definitions kept between turns outgrew memory_limit (strategy strict; rollback feeds it back instead).";
    MustReturnMissing => "must_return_missing", "Completion mode explicit: the final turn neither called (return v) nor (fail v).";
    NoCodeFound => "no_code_found", "The model's answer held no program (a one-turn mission, or compile).";
    MultipleCodeBlocks => "multiple_code_blocks", "The model's answer held several programs and multiple_code_blocks is refuse (a one-turn mission).";
    ParseError => "parse_error", "The model's program could not be read (a one-turn mission).";
    ConsecutiveFailures => "consecutive_failures", "max_consecutive_failures turns in a row ended in an error.";
    CostBudgetExceeded => "cost_budget_exceeded", "The next model request would take the mission tree past max_cost_usd.";
    PriceUnknown => "price_unknown", "max_cost_usd is set but the model has no known price.";
    ValidationError => "validation_error", "A value does not match its signature: a child's arguments, a chained context, an LLM tool's answer.";
    TemplateError => "template_error", "A mission prompt names a {{placeholder}} the context does not fill.";
    ChainedFailure => "chained_failure", "A chain stage was asked to run after a failed stage.";
    CheckpointError => "checkpoint_error", "A checkpoint could not be written, read or resumed from.";
    Cancelled => "cancelled", "The caller cancelled the mission, or dropped its future.";
    Failed => "failed", "The program called (fail v) without a :reason.";
}

impl Reason {
    /// The reason named `word` (`"max_turns_exceeded"`), if the loop has one.
    pub fn parse(word: &str) -> Option<Reason> {
        Reason::ALL.iter().copied().find(|r| r.as_str() == word)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<Reason> for String {
    fn from(reason: Reason) -> String {
        reason.as_str().to_string()
    }
}

#[cfg(test)]
mod tests {
    //! Every [`Reason`] is reached by a real run with a scripted model. `reach` matches
    //! the enum exhaustively (inside this crate `#[non_exhaustive]` does not apply), so a
    //! reason added without a case here does not compile; `Reason::ALL` drives the loop.

    use std::sync::Arc;
    use std::time::Duration;

    use ptc_lisp_eval::Cancel;
    use serde_json::json;

    use super::*;
    use crate::{
        BoxFuture, Checkpoint, CheckpointError, CheckpointStore, CompletionMode, Llm, LlmError, LlmErrorKind, LlmRef,
        LlmRequest, LlmResponse, LlmRetry, LlmTool, MemoryStrategy, ModelPrice, PriceTable, ScriptedLlm, Step,
        SubAgent, SubAgentBuilder, Tool,
    };

    /// A fenced program.
    fn clj(code: &str) -> String {
        format!("```clojure\n{code}\n```")
    }

    #[test]
    fn every_reason_is_listed_once_with_its_own_word() {
        let mut words: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
        let n = words.len();
        words.sort_unstable();
        words.dedup();
        assert_eq!(words.len(), n, "two reasons share a word");
        for r in Reason::ALL {
            assert_eq!(Reason::parse(r.as_str()), Some(*r));
            assert!(r.as_str().bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{r}");
            assert!(!r.description().is_empty());
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap().block_on(f)
    }

    fn run(builder: SubAgentBuilder, answers: &[&str]) -> Step {
        let agent = builder.build().unwrap();
        block_on(agent.run(&ScriptedLlm::texts(answers.iter().map(|a| a.to_string()))))
    }

    /// A child agent offered as `tool/ask`.
    fn child() -> SubAgentBuilder {
        SubAgent::builder("Answer {{q}}").signature("(q :string) -> :string").description("Answers one question")
    }

    /// The reasons of `step` and of every step nested in it, outermost first.
    fn reasons(step: &Step) -> Vec<String> {
        let mut all: Vec<String> = step.fail.iter().map(|f| f.reason.clone()).collect();
        for c in &step.children {
            all.extend(reasons(&c.step));
        }
        all
    }

    /// A model that is always rate-limited and asks to wait 10 s.
    struct RateLimited;

    impl Llm for RateLimited {
        fn complete<'a>(&'a self, _request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
            Box::pin(async {
                let mut e = LlmError::new(LlmErrorKind::RateLimit, "slow down");
                e.retry_after = Some(Duration::from_secs(10));
                Err(e)
            })
        }
    }

    /// A checkpoint store whose disk is full.
    #[derive(Debug)]
    struct FullDisk;

    impl CheckpointStore for FullDisk {
        fn save(&self, _checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
            Err(CheckpointError("no space left on the checkpoint disk".into()))
        }
        fn load_latest(&self) -> Result<Checkpoint, CheckpointError> {
            Err(CheckpointError("nothing saved".into()))
        }
        fn describe(&self) -> String {
            "a full disk".into()
        }
    }

    /// One real run ending in `reason` (in the mission's step or a nested one).
    fn reach(reason: Reason) -> Step {
        match reason {
            Reason::MaxTurnsExceeded => {
                run(SubAgent::builder("x").max_turns(2), &[&clj("(println 1)"), &clj("(println 2)")])
            }
            Reason::TurnBudgetExhausted => run(
                SubAgent::builder("x").tool(child().as_tool("ask").unwrap()).turn_budget(1),
                &[&clj("(tool/ask {:q \"a\"})")],
            ),
            Reason::MaxDepthExceeded => run(
                SubAgent::builder("x").tool(child().as_tool("ask").unwrap()).max_depth(0),
                &[&clj("(tool/ask {:q \"a\"})"), &clj("(return 1)")],
            ),
            Reason::MissionTimeout => {
                // a tool that never answers: the mission deadline ends its wait
                let waits = Tool::new_async("waits", |_args, _cx| async {
                    std::future::pending::<()>().await;
                    Ok(json!(1))
                });
                run(
                    SubAgent::builder("x").tool(waits).mission_timeout(Duration::from_millis(100)),
                    &[&clj("(tool/waits {})"), &clj("(return 1)")],
                )
            }
            Reason::Timeout => {
                // an LLM tool whose model asks for a wait longer than the program has left
                let judge = LlmTool::new("Is {{a}} big?", "(a :int) -> :bool")
                    .llm(LlmRef::Explicit(Arc::new(RateLimited)))
                    .into_tool("judge")
                    .unwrap();
                run(
                    SubAgent::builder("x").tool(judge).timeout(Duration::from_millis(2_000)),
                    &[&clj("(tool/judge {:a 1})"), &clj("(return 1)")],
                )
            }
            Reason::LlmError => {
                run(SubAgent::builder("x").llm_retry(LlmRetry { max_attempts: 1, ..LlmRetry::default() }), &[])
            }
            Reason::ModelNotFound => run(
                SubAgent::builder("x").tool(child().llm_alias("haiku").as_tool("ask").unwrap()),
                &[&clj("(tool/ask {:q \"a\"})"), &clj("(return 1)")],
            ),
            Reason::MemoryExceeded => run(
                SubAgent::builder("x").max_turns(1).memory_limit(100, MemoryStrategy::Strict),
                &[&clj("(def big (apply str (repeat 200 \"x\")))")],
            ),
            Reason::MustReturnMissing => run(
                SubAgent::builder("x").max_turns(2).completion_mode(CompletionMode::Explicit),
                &[&clj("(+ 1 1)"), &clj("(+ 2 2)")],
            ),
            Reason::NoCodeFound => run(SubAgent::builder("x").max_turns(1), &["I would rather not write a program."]),
            Reason::MultipleCodeBlocks => {
                run(SubAgent::builder("x").max_turns(1), &[&format!("{}\n{}", clj("(def a 1)"), clj("(return a)"))])
            }
            Reason::ParseError => run(SubAgent::builder("x").max_turns(1), &[&clj("(+ 1")]),
            Reason::ConsecutiveFailures => run(
                SubAgent::builder("x").max_turns(5).max_consecutive_failures(2),
                &[&clj("(undefined-fn 1)"), &clj("(undefined-fn 2)"), &clj("(return 1)")],
            ),
            Reason::CostBudgetExceeded => {
                let mut prices = PriceTable::empty();
                prices.set("scripted", ModelPrice::new(1_000_000.0, 0.0));
                run(SubAgent::builder("x").prices(prices).max_cost_usd(0.01), &[&clj("(return 1)")])
            }
            Reason::PriceUnknown => {
                run(SubAgent::builder("x").prices(PriceTable::empty()).max_cost_usd(0.01), &[&clj("(return 1)")])
            }
            Reason::ValidationError => {
                // a chain stage whose previous stage returned something other than a map
                let first = SubAgent::builder("x").build().unwrap();
                block_on(first.then(SubAgent::builder("y")).run(&ScriptedLlm::texts([clj("(return 5)")])))
            }
            Reason::TemplateError => {
                let first = SubAgent::builder("x").signature("{a :int}").build().unwrap();
                block_on(first.then(SubAgent::builder("use {{b}}")).run(&ScriptedLlm::texts([clj("(return {:a 1})")])))
            }
            Reason::ChainedFailure => {
                let first = SubAgent::builder("x").build().unwrap();
                block_on(
                    first.then(SubAgent::builder("y")).run(&ScriptedLlm::texts([clj("(fail {:reason :no_stock})")])),
                )
            }
            Reason::CheckpointError => run(
                SubAgent::builder("x").max_turns(3).checkpoint_store(Arc::new(FullDisk)),
                &[&clj("(def a 1)"), &clj("(return a)")],
            ),
            Reason::Cancelled => {
                let agent = SubAgent::builder("x").build().unwrap();
                let cancel = Cancel::new();
                cancel.cancel();
                block_on(agent.run_with_cancel(&ScriptedLlm::texts([clj("(return 1)")]), &cancel))
            }
            Reason::Failed => run(SubAgent::builder("x"), &[&clj("(fail \"no luck\")")]),
        }
    }

    #[test]
    fn every_reason_is_reachable() {
        let mut missed = Vec::new();
        for &reason in Reason::ALL {
            let step = reach(reason);
            let found = reasons(&step);
            if !found.iter().any(|r| r == reason.as_str()) {
                missed.push(format!("{reason}: the run ended in {found:?}"));
            }
        }
        assert!(missed.is_empty(), "reasons not reached:\n{}", missed.join("\n"));
    }
}
