//! The loop: ask the model, run its program, feed back what happened, until the program
//! returns a value that matches the signature, fails, or a limit ends the mission.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use ptc_lisp_eval::printer::{PrintOptions, to_clojure_with};
use ptc_lisp_eval::value::PMap;
use ptc_lisp_eval::{Cancel, Engine, EvalError, Memory, Outcome, RunResult, Value, to_clojure};
use serde_json::Value as Json;
use tracing::Instrument;

use crate::compaction::{self, CompactionStats};
use crate::compress::{self, Summary, TurnRecord};
use crate::config::{CompletionMode, MemoryStrategy, SubAgent};
use crate::exec::{self, ExecRequest, Executed, ToolCache};
use crate::extract::{self, Extracted};
use crate::feedback::{self, Budget};
use crate::llm::{Llm, LlmOptions, LlmRequest, LlmResponse, Message, TokenUsage, ToolSchema};
use crate::mode::Mode;
use crate::observe::{Event, Observer, emit};
use crate::prelude::Prelude;
use crate::reason::Reason;
use crate::step::{Fail, Status, Step, StepUsage, ToolCallTrace, Turn, TurnKind};

/// What every `SubAgent::run*` method does: the mission against `llm`, reporting to
/// `observer`, stopped by `cancel`.
pub(crate) async fn run(
    agent: &SubAgent,
    llm: &dyn Llm,
    observer: Option<Arc<dyn Observer>>,
    cancel: Option<&Cancel>,
) -> Step {
    let cfg = &agent.config;
    let span = tracing::info_span!(
        "run",
        agent = cfg.name.as_deref().unwrap_or(""),
        max_turns = cfg.max_turns,
        status = tracing::field::Empty,
        turns = tracing::field::Empty,
        duration_ms = tracing::field::Empty,
    );
    // the caller's cancel handle, bounded by the mission's own deadline
    let attach = |mission: &mut Mission<'_>| {
        if let Some(c) = cancel {
            mission.cancel = match mission.deadline {
                Some(d) => c.with_deadline(d),
                None => c.child(),
            };
        }
    };
    let step = if agent.config.checkpoint_store.is_some() || agent.config.resume.is_some() {
        match crate::recording::Session::start(agent, llm) {
            Ok(mut session) => {
                let mut mission = Mission::new(&session.agent, &session.llm, observer);
                attach(&mut mission);
                mission.recording = session.recording.take();
                if let Some(c) = &agent.config.resume {
                    mission.resume(c);
                }
                mission.run().instrument(span.clone()).await
            }
            Err(e) => Step::failed(Fail::new(Reason::CheckpointError, e.0)),
        }
    } else {
        let mut mission = Mission::new(agent, llm, observer);
        attach(&mut mission);
        mission.run().instrument(span.clone()).await
    };
    span.record("status", if step.is_ok() { "ok" } else { "error" });
    span.record("turns", step.usage.turns);
    span.record("duration_ms", step.usage.duration_ms);
    span.in_scope(|| match &step.fail {
        None => tracing::info!(turns = step.usage.turns, "mission returned"),
        Some(f) => tracing::info!(turns = step.usage.turns, reason = %f.reason, "mission failed: {}", f.message),
    });
    step
}

/// Runs `agent` as a child in a mission tree (see `compose.rs`): it shares the tree's
/// turn budget and cannot outlive its parent's deadline.
pub(crate) async fn run_child(
    agent: &SubAgent,
    llm: &dyn Llm,
    observer: Option<Arc<dyn Observer>>,
    nest: crate::nesting::Nesting,
) -> Step {
    let mut mission = Mission::new(agent, llm, observer);
    mission.deadline = nest.deadline(mission.deadline);
    mission.cancel = nest.cancel(mission.deadline);
    // a model the child's own prices miss may be priced by the tree's root
    mission.price = nest.cost().price(mission.price, &llm.name());
    if mission.price.is_some() && mission.usage.cost_usd.is_none() {
        mission.usage.cost_usd = Some(0.0);
    }
    mission.nest = nest;
    mission.run().await
}

/// Turns the loop still has.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Turns {
    pub(crate) work_left: u32,
    pub(crate) retry_left: u32,
    pub(crate) in_retry: bool,
}

/// How the last turn ended (for the end-of-turns decision).
pub(crate) enum LastTurn {
    None,
    Value(Value),
    Error { reason: String, message: String },
    Other,
}

pub(crate) struct Mission<'a> {
    pub(crate) agent: &'a SubAgent,
    llm: &'a dyn Llm,
    pub(crate) observer: Option<Arc<dyn Observer>>,
    started: Instant,
    deadline: Option<Instant>,
    pub(crate) cancel: Cancel,
    engine: Engine,
    pub(crate) system: String,
    /// The whole conversation after the system prompt, oldest first.
    pub(crate) messages: Vec<Message>,
    pub(crate) memory: Memory,
    pub(crate) history: Vec<Value>,
    pub(crate) turns: Vec<Turn>,
    pub(crate) usage: StepUsage,
    pub(crate) cache: ToolCache,
    pub(crate) budget: Turns,
    pub(crate) last: LastTurn,
    /// History compression: the summary of the successful turns so far...
    summary: Summary,
    /// ... `Turns left` as of the summary's last successful turn ...
    summary_turns_left: u32,
    /// ... the failed turns, as full assistant/user pairs ...
    failed_pairs: Vec<Message>,
    /// ... and what the turn that just ended left behind, when it succeeded.
    last_success: Option<Success>,
    /// Native app-tool calls so far (text modes; `lisp_eval` does not count).
    pub(crate) native_calls: u32,
    /// Tools offered natively.
    pub(crate) offered: Vec<ToolSchema>,
    options: LlmOptions,
    pub(crate) nest: crate::nesting::Nesting,
    /// Validation warnings (`warn_only`: the return value's, and tool calls'), for
    /// `Step.warnings`.
    warnings: crate::nesting::Warnings,
    /// The model's price, when known (cost accounting and `max_cost_usd`).
    price: Option<crate::llm::ModelPrice>,
    /// The largest answer so far in tokens (the output estimate of the next request).
    largest_answer: u64,
    /// Turns in a row that failed, and what the last one said (`max_consecutive_failures`).
    failure_streak: u32,
    last_failure: String,
    /// Set when the turn's return value was rejected by validation.
    pub(crate) rejected: bool,
    /// Checkpointing: the answers and tool results so far and where to write.
    recording: Option<crate::recording::Recording>,
}

/// A successful turn, for the history summary.
struct Success {
    tool_calls: Vec<ptc_lisp_eval::ToolCallRecord>,
    prints: Vec<String>,
    defined: Vec<String>,
}

/// A turn's result: keep going (with feedback), keep going (the turn already answered
/// every tool call), or stop with a step outcome.
pub(crate) enum Next {
    Continue(String),
    Proceed,
    Done(Result<Json, Fail>),
}

impl<'a> Mission<'a> {
    pub(crate) fn new(agent: &'a SubAgent, llm: &'a dyn Llm, observer: Option<Arc<dyn Observer>>) -> Self {
        let cfg = &agent.config;
        let started = Instant::now();
        let deadline = cfg.mission_timeout.map(|t| started + t);
        let price = cfg.prices.lookup(&llm.name());
        let cancel = match deadline {
            Some(d) => Cancel::new().with_deadline(d),
            None => Cancel::new(),
        };
        Mission {
            agent,
            llm,
            observer,
            started,
            deadline,
            cancel,
            engine: crate::config::engine_for(cfg),
            system: agent.system_prompt(),
            messages: vec![Message::user(agent.first_user_message())],
            // the prelude's definitions are there before the first program
            memory: cfg.prelude.memory().clone(),
            history: Vec::new(),
            turns: Vec::new(),
            usage: StepUsage {
                compaction: cfg.compaction.map(|_| CompactionStats {
                    enabled: true,
                    strategy: "trim".into(),
                    ..CompactionStats::default()
                }),
                cost_usd: price.map(|_| 0.0),
                ..StepUsage::default()
            },
            cache: Arc::new(Mutex::new(HashMap::new())),
            budget: Turns { work_left: cfg.max_turns, retry_left: cfg.retry_turns, in_retry: false },
            last: LastTurn::None,
            summary: Summary::default(),
            summary_turns_left: cfg.max_turns,
            failed_pairs: Vec::new(),
            last_success: None,
            native_calls: 0,
            offered: agent.native_tools(),
            options: agent.llm_options(),
            nest: crate::nesting::Nesting::root(
                &agent.config.compose,
                agent.config.max_turns.saturating_add(agent.config.retry_turns),
                agent.config.max_cost_usd,
                agent.config.name.clone(),
                agent.config.prices.clone(),
            ),
            warnings: Arc::new(Mutex::new(Vec::new())),
            price,
            largest_answer: 0,
            failure_streak: 0,
            last_failure: String::new(),
            rejected: false,
            recording: None,
        }
    }

    /// Starts a mission over an existing conversation (`chat`): `messages` replace the
    /// first user message.
    pub(crate) fn with_messages(mut self, messages: Vec<Message>) -> Self {
        self.messages = messages;
        self
    }

    /// The messages of the next request: the conversation, or with history compression
    /// the single USER message and the failed turns, or with compaction the trimmed
    /// conversation.
    pub(crate) fn request_messages(&mut self, turn: u32) -> Vec<Message> {
        let cfg = self.agent.config.clone();
        if let Some(opts) = &cfg.compress_history {
            let first =
                compress::user_message(&self.agent.mission_text(), &self.summary, opts, self.summary_turns_left);
            let mut out = vec![Message::user(first)];
            out.extend(self.failed_pairs.iter().cloned());
            return out;
        }
        if let Some(c) = &cfg.compaction {
            let (out, stats) = compaction::apply(c, &self.messages, turn);
            if let Some(stats) = stats.filter(|s| s.triggered) {
                tracing::info!(
                    turn,
                    reason = stats.reason.as_deref().unwrap_or(""),
                    messages_before = stats.messages_before,
                    messages_after = stats.messages_after,
                    "compaction triggered"
                );
                self.usage.compaction = Some(stats);
            }
            return out;
        }
        self.messages.clone()
    }

    /// A new request for turn `number`, the kept conversation bounded first.
    pub(crate) fn request(&mut self, number: u32) -> LlmRequest {
        self.bound_history();
        LlmRequest {
            system: self.system.clone(),
            messages: self.request_messages(number),
            turn: number,
            tools: self.offered.clone(),
            options: self.options.clone(),
        }
    }

    /// Feedback for the next turn; with history compression, a successful turn goes
    /// into the summary and a failed one stays as an assistant/user pair.
    fn push_feedback(&mut self, feedback: String) {
        if self.agent.config.compress_history.is_some() {
            match self.last_success.take() {
                Some(ok) => {
                    self.summary.add(&TurnRecord {
                        tool_calls: &ok.tool_calls,
                        prints: &ok.prints,
                        defined: &ok.defined,
                        memory: &self.memory,
                    });
                    self.summary_turns_left = self.turns_left();
                    // the turn's record shows what the model reads next: the new USER message
                    if let (Some(opts), Some(last)) = (&self.agent.config.compress_history, self.turns.last_mut())
                        && last.feedback.is_some()
                    {
                        last.feedback = Some(compress::user_message(
                            &self.agent.mission_text(),
                            &self.summary,
                            opts,
                            self.summary_turns_left,
                        ));
                    }
                }
                None => {
                    if let Some(assistant) = self.messages.last().cloned() {
                        self.failed_pairs.push(assistant);
                    }
                    self.failed_pairs.push(Message::user(feedback.clone()));
                }
            }
        }
        self.messages.push(Message::user(feedback));
    }

    /// Keeps the conversation after the mission, the failed turns of history compression
    /// and the turns' recorded answers within `max_history_bytes` (see `history_cap`).
    fn bound_history(&mut self) {
        let cap = self.agent.config.max_history_bytes;
        crate::history_cap::bound_messages(&mut self.messages, 1, cap);
        crate::history_cap::bound_messages(&mut self.failed_pairs, 0, cap);
    }

    /// `max_turns` minus the turns used so far.
    fn turns_left(&self) -> u32 {
        self.agent.config.max_turns.saturating_sub(self.turns.len() as u32)
    }

    /// Counts a turn against the work budget, or the retry budget once it is spent.
    pub(crate) fn consume_turn(&mut self) {
        if self.budget.work_left > 0 {
            self.budget.work_left -= 1;
        } else {
            self.budget.retry_left = self.budget.retry_left.saturating_sub(1);
        }
    }

    /// Records a finished turn (feedback only when another turn reads it) and reports it.
    pub(crate) fn end_turn(&mut self, mut turn: Turn, next: &Next, started: Instant, span: &tracing::Span) {
        if let Next::Continue(feedback) = next
            && self.has_turns_left()
        {
            turn.feedback = Some(feedback.clone());
        }
        turn.duration_ms = started.elapsed().as_millis() as u64;
        span.record("duration_ms", turn.duration_ms);
        tracing::info!(
            turn = turn.number,
            program = turn.program.as_deref().unwrap_or(""),
            result = turn.result.as_deref().unwrap_or(""),
            prints = turn.prints.len(),
            "turn finished"
        );
        let failed = turn.error.is_some()
            || (self.agent.config.mode == Mode::Lisp && turn.program.is_none())
            || std::mem::take(&mut self.rejected);
        if failed {
            self.failure_streak += 1;
            self.last_failure = match (&turn.error, &turn.feedback, &turn.program) {
                (Some(e), _, _) => e.clone(),
                (None, Some(f), None) => f.lines().next().unwrap_or_default().to_string(),
                _ => "the return value did not match the signature".into(),
            };
        } else {
            self.failure_streak = 0;
        }
        let record = turn.clone();
        emit(self.observer.as_deref(), move || Event::TurnEnd { turn: record });
        self.turns.push(turn);
        crate::history_cap::bound_turns(&mut self.turns, self.agent.config.max_history_bytes);
    }

    pub(crate) async fn run(&mut self) -> Step {
        let cfg = self.agent.config.clone();
        emit(self.observer.as_deref(), || Event::RunStart { agent: cfg.name.clone(), max_turns: cfg.max_turns });
        let outcome = loop {
            if !self.has_turns_left() {
                break self.out_of_turns();
            }
            if self.cancel.is_cancelled() && !self.cancel.is_expired() {
                break Err(cancelled());
            }
            if self.deadline.is_some_and(|d| Instant::now() >= d) {
                break Err(self.mission_timeout());
            }
            if let Some(max) = cfg.max_consecutive_failures
                && self.failure_streak >= max
            {
                let mut fail = Fail::new(
                    Reason::ConsecutiveFailures,
                    format!(
                        "{} turn(s) in a row failed (max_consecutive_failures {max}); the mission is stuck in an error loop. The last: {}",
                        self.failure_streak, self.last_failure
                    ),
                );
                fail.details =
                    Some(serde_json::json!({"streak": self.failure_streak, "last_error": self.last_failure}));
                break Err(fail);
            }
            if let Err(fail) = self.nest.take_turn() {
                break Err(fail);
            }
            let number = self.turns.len() as u32 + 1;
            let kind = if self.budget.work_left == 0 {
                TurnKind::Retry
            } else if self.budget.work_left == 1 {
                TurnKind::MustReturn
            } else {
                TurnKind::Normal
            };
            let span = tracing::info_span!(
                "turn",
                turn = number,
                kind = ?kind,
                input_tokens = tracing::field::Empty,
                output_tokens = tracing::field::Empty,
                duration_ms = tracing::field::Empty,
            );
            let next = if cfg.mode == Mode::Lisp {
                self.turn(number, kind, span.clone()).instrument(span).await
            } else {
                self.tool_turn(number, kind, span.clone()).instrument(span).await
            };
            match next {
                Next::Continue(feedback) => self.push_feedback(feedback),
                Next::Proceed => {}
                Next::Done(result) => break result,
            }
            if let Err(e) = self.save_checkpoint() {
                break Err(Fail::new(Reason::CheckpointError, e.0));
            }
        };
        self.finish(outcome)
    }

    /// Work turns left, or retry turns once a return value failed validation.
    pub(crate) fn has_turns_left(&self) -> bool {
        self.budget.work_left > 0 || (self.budget.in_retry && self.budget.retry_left > 0)
    }

    /// One turn. Records it, and answers whether the mission goes on.
    async fn turn(&mut self, number: u32, kind: TurnKind, span: tracing::Span) -> Next {
        let turn_started = Instant::now();
        let request = self.request(number);
        let mut tokens = TokenUsage::default();
        let response = self.ask(&request, &mut tokens).await;
        span.record("input_tokens", tokens.input);
        span.record("output_tokens", tokens.output);
        let mut turn = Turn::start(number, kind, &tokens);
        let response = match response {
            Ok(r) => r,
            Err(fail) => {
                // a turn without an answer is not a turn: nothing is recorded
                return Next::Done(Err(fail));
            }
        };
        self.consume_turn();
        turn.raw_response = response.content.clone();
        self.messages.push(Message::assistant(extract::strip_thinking(&response.content)));
        let next = match extract::extract_code(&response.content) {
            Extracted::Multiple(_) if cfg_blocks(self) == crate::extract::MultipleCodeBlocks::Sequential => {
                match extract::join_blocks(&response.content) {
                    Ok(source) => {
                        turn.program = Some(source.clone());
                        let executed = self.execute(number, source, span.clone()).await;
                        self.judge(kind, executed, &mut turn)
                    }
                    Err(feedback) => {
                        self.last = LastTurn::Error { reason: Reason::ParseError.into(), message: feedback.clone() };
                        self.after_non_return(kind, feedback)
                    }
                }
            }
            Extracted::Multiple(n) => {
                self.last = LastTurn::Error {
                    reason: Reason::MultipleCodeBlocks.into(),
                    message: format!("the answer held {n} code blocks instead of one"),
                };
                self.after_non_return(kind, extract::multiple_code_blocks_message(n))
            }
            Extracted::NoCode => {
                self.last = LastTurn::Error {
                    reason: Reason::NoCodeFound.into(),
                    message: "the answer held no PTC-Lisp program".into(),
                };
                self.after_non_return(kind, extract::NO_CODE_FOUND_MESSAGE.to_string())
            }
            Extracted::Code(source) => {
                turn.program = Some(source.clone());
                let executed = self.execute(number, source, span.clone()).await;
                self.judge(kind, executed, &mut turn)
            }
        };
        self.end_turn(turn, &next, turn_started, &span);
        next
    }

    /// Feedback (or the end) after a turn that did not return.
    pub(crate) fn after_non_return(&mut self, kind: TurnKind, message: String) -> Next {
        let explicit = self.agent.config.completion_mode == CompletionMode::Explicit;
        if explicit && matches!(kind, TurnKind::MustReturn | TurnKind::Retry) {
            return Next::Done(Err(Fail::new(
                Reason::MustReturnMissing,
                "Final turn must call (return value) or (fail reason)",
            )));
        }
        Next::Continue(format!("{message}{}", self.turn_info()))
    }

    pub(crate) fn turn_info(&self) -> String {
        let cfg = &self.agent.config;
        if cfg.compress_history.is_some() {
            let left = cfg.max_turns.saturating_sub(self.turns.len() as u32 + 1);
            return format!("\n\nTurns left: {left}");
        }
        feedback::turn_info(&Budget {
            turn: self.turns.len() as u32 + 1,
            max_turns: cfg.max_turns,
            retry_turns: cfg.retry_turns,
            work_left: self.budget.work_left,
            retry_left: if self.budget.work_left == 0 && !self.budget.in_retry { 0 } else { self.budget.retry_left },
            minimal: cfg.format.minimal_turn_info,
        })
    }

    /// Sends `request`, retrying as the policy says, within the mission deadline.
    pub(crate) async fn ask(&mut self, request: &LlmRequest, tokens: &mut TokenUsage) -> Result<LlmResponse, Fail> {
        let policy = self.agent.config.llm_retry.clone();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let reservation = self.check_budget(request)?;
            self.usage.llm_requests += 1;
            emit(self.observer.as_deref(), || Event::LlmRequest {
                turn: request.turn,
                attempt,
                system: request.system.clone(),
                messages: request.messages.clone(),
                tools: request.tools.clone(),
            });
            let span = tracing::info_span!(
                "llm",
                turn = request.turn,
                attempt,
                model = %self.llm.name(),
                input_tokens = tracing::field::Empty,
                output_tokens = tracing::field::Empty,
                duration_ms = tracing::field::Empty,
            );
            let started = Instant::now();
            let call = crate::llm::complete_contained(self.llm, request).instrument(span.clone());
            // a cancelled mission abandons its request (the client's future is dropped)
            let call = async {
                tokio::select! {
                    r = call => Some(r),
                    () = until_cancelled(&self.cancel) => None,
                }
            };
            let result = match self.deadline {
                Some(d) => tokio::time::timeout_at(d.into(), call).await.ok(),
                None => Some(call.await),
            };
            if !matches!(result, Some(Some(Ok(_)))) {
                // no answer: the request's reservation in the budgets is given back
                self.nest.cost().settle(reservation, 0.0);
            }
            let Some(result) = result else { return Err(self.mission_timeout()) };
            let Some(result) = result else { return Err(cancelled()) };
            let duration_ms = started.elapsed().as_millis() as u64;
            span.record("duration_ms", duration_ms);
            match result {
                Ok(response) => {
                    span.record("input_tokens", response.usage.input);
                    span.record("output_tokens", response.usage.output);
                    tokens.add(&response.usage);
                    self.add_usage(&response.usage);
                    self.add_cost(request.turn, &response.usage, reservation);
                    if let Some(rec) = &mut self.recording {
                        rec.answers.push(response.clone());
                    }
                    emit(self.observer.as_deref(), || Event::LlmResponse {
                        turn: request.turn,
                        attempt,
                        content: response.content.clone(),
                        tool_calls: response.tool_calls.clone(),
                        usage: response.usage,
                        duration_ms,
                    });
                    return Ok(response);
                }
                Err(error) => {
                    let retry = policy.should_retry(&error, attempt);
                    let delay = retry.then(|| policy.delay(&error, attempt));
                    span.in_scope(
                        || tracing::warn!(kind = %error.kind, retry = retry, "LLM request failed: {}", error.message),
                    );
                    emit(self.observer.as_deref(), || Event::LlmError {
                        turn: request.turn,
                        attempt,
                        kind: error.kind.to_string(),
                        message: error.message.clone(),
                        retry_in_ms: delay.map(|d| d.as_millis() as u64),
                    });
                    let Some(delay) = delay else {
                        let mut fail = Fail::new(
                            Reason::LlmError,
                            format!("LLM request failed after {attempt} attempt(s): {error}"),
                        );
                        fail.details = Some(serde_json::json!({"kind": error.kind.as_str(), "status": error.status}));
                        return Err(fail);
                    };
                    // The wait is capped by the policy's max_delay (in `delay`) and by the
                    // deadline: a retry that could not start before it is not waited for.
                    if self.llm.retry_waits() && self.deadline.is_some_and(|d| Instant::now() + delay >= d) {
                        return Err(self.mission_timeout());
                    }
                    // A replayed model has no server to spare: its recorded waits are not slept.
                    if self.llm.retry_waits() {
                        tokio::time::sleep(delay).await;
                    }
                }
            }
        }
    }

    /// Continues a mission from `checkpoint`: the clock goes on from its elapsed time,
    /// its nested steps are kept and their turns taken from the tree's budget (the
    /// replayed turns rebuild everything else).
    fn resume(&mut self, checkpoint: &crate::checkpoint::Checkpoint) {
        let now = Instant::now();
        self.started = now.checked_sub(std::time::Duration::from_millis(checkpoint.elapsed_ms)).unwrap_or(now);
        self.deadline = self.agent.config.mission_timeout.map(|t| self.started + t);
        self.cancel = match self.deadline {
            Some(d) => Cancel::new().with_deadline(d),
            None => Cancel::new(),
        };
        for child in &checkpoint.children {
            self.nest.record(child.clone());
        }
        for _ in 0..crate::recording::tree_turns(&checkpoint.children) {
            let _ = self.nest.take_turn();
        }
        self.nest.cost().charge(crate::recording::tree_cost(&checkpoint.children));
        tracing::info!(turns_done = checkpoint.turns_done, "mission resumed from a checkpoint");
    }

    /// Writes the state after a live turn (checkpointing missions only).
    fn save_checkpoint(&self) -> Result<(), crate::checkpoint::CheckpointError> {
        let Some(rec) = &self.recording else { return Ok(()) };
        let done = self.turns.len() as u32;
        if rec.store.is_none() || done <= rec.replay_turns {
            return Ok(());
        }
        let mut usage = self.usage.clone();
        usage.turns = done;
        usage.duration_ms = self.started.elapsed().as_millis() as u64;
        let checkpoint = crate::checkpoint::Checkpoint {
            format: crate::checkpoint::CHECKPOINT_FORMAT.into(),
            version: crate::checkpoint::CHECKPOINT_VERSION,
            fingerprint: rec.fingerprint.clone(),
            agent: self.agent.config.name.clone(),
            turns_done: done,
            model_calls: rec.calls_before + rec.calls.load(std::sync::atomic::Ordering::SeqCst),
            elapsed_ms: usage.duration_ms,
            usage,
            memory: memory_json(&self.memory, &self.agent.config.prelude),
            messages: self.messages.clone(),
            turns: self.turns.clone(),
            children: self.nest.children_so_far(),
            answers: rec.answers.clone(),
            tool_calls: rec.tools.lock().map(|t| t.clone()).unwrap_or_default(),
        };
        rec.write(&checkpoint)
    }

    /// `max_cost_usd`, this mission's and its ancestors' (the tree's): reserves the
    /// estimate of `request` in each, or fails when no price is known or when the spend
    /// so far plus the estimate would pass one of them (see `cost.rs`).
    fn check_budget(&self, request: &LlmRequest) -> Result<crate::cost::Reservation, Fail> {
        let largest = self.largest_answer;
        let estimate = |price: &crate::llm::ModelPrice| crate::cost::estimate(price, request, largest);
        self.nest.cost().reserve(self.price.as_ref(), &self.llm.name(), estimate, request.turn)
    }

    /// Adds an answer's cost to the usage and the budgets (in place of its reservation),
    /// and reports it.
    fn add_cost(&mut self, turn: u32, u: &TokenUsage, reservation: crate::cost::Reservation) {
        self.largest_answer = self.largest_answer.max(u.output);
        let request_usd = self.price.as_ref().map_or(0.0, |p| p.cost(u));
        self.nest.cost().settle(reservation, request_usd);
        let Some(_) = &self.price else { return };
        let total_usd = self.usage.cost_usd.unwrap_or(0.0) + request_usd;
        self.usage.cost_usd = Some(total_usd);
        emit(self.observer.as_deref(), || Event::Cost { turn, request_usd, total_usd });
    }

    fn add_usage(&mut self, u: &TokenUsage) {
        self.usage.input_tokens += u.input;
        self.usage.output_tokens += u.output;
        self.usage.cache_read_tokens += u.cache_read;
        self.usage.cache_write_tokens += u.cache_write;
        self.usage.total_tokens = self.usage.input_tokens + self.usage.output_tokens;
    }

    /// The mission tree as tool functions see it (agent tools, LLM tools), whichever layer
    /// calls them, and the receiving end of the caller channel: nested agents' requests to
    /// this mission's model, answered by `serve_while` while the call runs.
    pub(crate) fn tool_nest(
        &self,
        cancel: &Cancel,
    ) -> (crate::nesting::ToolNest, tokio::sync::mpsc::UnboundedReceiver<crate::nesting::Ask>) {
        let (caller, asks) = crate::nesting::caller_channel(self.llm);
        let nest = crate::nesting::ToolNest {
            nesting: self.nest.clone(),
            caller,
            cancel: cancel.clone(),
            observer: self.observer.clone(),
            runtime: tokio::runtime::Handle::try_current().ok(),
            warnings: self.warnings.clone(),
        };
        (nest, asks)
    }

    /// The model, for answering nested agents' requests (`serve_while`).
    pub(crate) fn llm(&self) -> &'a dyn Llm {
        self.llm
    }

    pub(crate) async fn execute(&self, turn: u32, source: String, span: tracing::Span) -> Executed {
        let cancel = self.cancel.child();
        // nested agents and LLM tools reach the mission tree (and this model) through it
        let (nest, asks) = self.tool_nest(&cancel);
        let req = ExecRequest {
            source,
            context: self.agent.config.context.clone(),
            memory: self.memory.clone(),
            turn_history: self.history.clone(),
            turn,
            tools: self.agent.tools.clone(),
            cache: self.cache.clone(),
            observer: self.observer.clone(),
            cancel,
            span,
            nest: Some(nest),
            extra: self.agent.config.compose.program_tools.as_ref().map(|t| t.0.host()),
        };
        let engine = self.engine.clone();
        let fallback = self.memory.clone();
        // the program runs on the engine's pool; this task awaits it without a thread
        let work = self.engine.spawn(move || exec::execute(&engine, req));
        match crate::nesting::serve_while(self.llm, asks, work).await {
            Ok(executed) => Executed {
                outcome: crate::exec::explain_catalog_call(executed.outcome, &self.agent.config.catalog),
                defined: executed.defined,
            },
            Err(e) => Executed { outcome: Outcome::failure(e, fallback), defined: Vec::new() },
        }
    }

    /// Decides what a program's outcome means for the mission.
    fn judge(&mut self, kind: TurnKind, executed: Executed, turn: &mut Turn) -> Next {
        let cfg = self.agent.config.clone();
        let Executed { outcome, defined } = executed;
        turn.prints = outcome.prints.clone();
        turn.tool_calls = outcome.tool_calls.iter().map(trace_call).collect();
        self.account_upstream(&outcome, turn);
        match &outcome.result {
            RunResult::Returned(v) => {
                turn.result = Some(outcome.printed.clone());
                match self.accept(v) {
                    Ok(json) => {
                        self.memory = outcome.memory;
                        Next::Done(Ok(json))
                    }
                    Err(feedback) => {
                        self.last = LastTurn::Other;
                        self.rejected = true;
                        if self.budget.work_left == 0 && cfg.retry_turns > 0 {
                            self.budget.in_retry = true;
                        }
                        self.memory = outcome.memory;
                        Next::Continue(format!("{feedback}{}", self.turn_info()))
                    }
                }
            }
            RunResult::Failed(v) => {
                turn.result = Some(outcome.printed.clone());
                self.memory = outcome.memory;
                Next::Done(Err(user_fail(v)))
            }
            RunResult::Error(e) => {
                let text = error_text(e);
                turn.error = Some(text.clone());
                self.last = LastTurn::Error { reason: e.kind.as_str().to_string(), message: e.message.clone() };
                let fb = feedback::error_feedback(&text, &outcome.prints, &cfg.format);
                self.after_non_return(kind, fb)
            }
            RunResult::Value(v) => {
                turn.result = Some(outcome.printed.clone());
                match self.check_memory(&outcome.memory) {
                    Ok(()) => {}
                    Err(Next::Continue(msg)) => return self.after_non_return(kind, msg),
                    Err(other) => return other,
                }
                let multi = cfg.max_turns > 1 || cfg.retry_turns > 0;
                let fb = feedback::execution_feedback(
                    Some(v),
                    &outcome.prints,
                    &self.memory,
                    &outcome.memory,
                    multi,
                    &cfg.format,
                );
                self.last_success =
                    Some(Success { tool_calls: outcome.tool_calls.clone(), prints: outcome.prints.clone(), defined });
                self.memory = outcome.memory;
                self.history.push(feedback::truncate_for_history(v, cfg.format.history_max_bytes));
                if self.history.len() > 3 {
                    self.history.remove(0);
                }
                self.last = LastTurn::Value(v.clone());
                self.after_non_return(kind, fb)
            }
        }
    }

    /// The memory limit after a successful program: `Err(Done)` when the mission ends
    /// (strict), `Err(Continue(message))` when the changes are rolled back.
    pub(crate) fn check_memory(&mut self, memory: &Memory) -> Result<(), Next> {
        let cfg = self.agent.config.clone();
        let size = memory_size(memory, &cfg.prelude);
        if size <= cfg.memory_limit {
            return Ok(());
        }
        let text = format!("Memory limit exceeded ({size} bytes > {} bytes).", cfg.memory_limit);
        match cfg.memory_strategy {
            MemoryStrategy::Strict => Err(Next::Done(Err(Fail::new(
                Reason::MemoryExceeded,
                format!("{text} The definitions outgrew memory_limit."),
            )))),
            MemoryStrategy::Rollback => {
                self.last = LastTurn::Other;
                Err(Next::Continue(format!(
                    "{text} Your last turn's memory changes have been rolled back. Try a different strategy: keep only the fields you need, or store counts and summaries instead of whole results."
                )))
            }
        }
    }

    /// Normalises, rounds and validates a returned value: its JSON, or the feedback.
    pub(crate) fn accept(&self, v: &Value) -> Result<Json, String> {
        let cfg = &self.agent.config;
        let mut value = normalize_keys(v);
        if let Some(p) = cfg.float_precision {
            value = round_floats(&value, p);
        }
        if let Some(sig) = &cfg.signature {
            let report = ptc_signature::validate(&value, &sig.output, cfg.signature_validation);
            if !report.is_ok() {
                let expected = ptc_signature::render_type(&sig.output, ptc_signature::KeyStyle::Lisp);
                return Err(feedback::validation_feedback(&expected, v, &report.render_errors()));
            }
            if !report.warnings.is_empty() {
                let text = format!(
                    "the return value does not match the signature (accepted: signature_validation is warn_only):\n{}",
                    report.warnings.iter().map(|w| format!("- {w}")).collect::<Vec<_>>().join("\n")
                );
                tracing::warn!("{text}");
                if let Ok(mut w) = self.warnings.lock() {
                    w.push(text);
                }
            }
        }
        ptc_lisp_eval::json::to_json(&value).map_err(|e| {
            format!("Return value cannot be handed over: {e}. Return data only (maps, vectors, strings, numbers, booleans, nil).")
        })
    }

    /// The end of the turns: the implicit answer, or a failure.
    fn out_of_turns(&mut self) -> Result<Json, Fail> {
        let cfg = self.agent.config.clone();
        let last = std::mem::replace(&mut self.last, LastTurn::None);
        let single = cfg.max_turns == 1 && cfg.retry_turns == 0;
        if cfg.completion_mode == CompletionMode::Implicit
            && let LastTurn::Value(v) = &last
            && (single || !v.is_nil())
            && let Ok(json) = self.accept(v)
        {
            return Ok(json);
        }
        if single && let LastTurn::Error { reason, message } = last {
            return Err(Fail::new(reason, message));
        }
        if cfg.retry_turns > 0 {
            Err(Fail::new(
                Reason::MaxTurnsExceeded,
                format!(
                    "Exceeded the turn budget of {} work turn(s) and {} retry turn(s) without a valid (return ...)",
                    cfg.max_turns, cfg.retry_turns
                ),
            ))
        } else {
            Err(Fail::new(Reason::MaxTurnsExceeded, format!("Exceeded max_turns limit of {}", cfg.max_turns)))
        }
    }

    pub(crate) fn mission_timeout(&self) -> Fail {
        let ms = self.agent.config.mission_timeout.map(|t| t.as_millis()).unwrap_or_default();
        Fail::new(Reason::MissionTimeout, format!("The mission exceeded its time limit of {ms} ms (mission_timeout)"))
    }

    /// Keeps the program's upstream calls (agents with program tools) in its turn.
    pub(crate) fn account_upstream(&self, outcome: &Outcome, turn: &mut Turn) {
        if let Some(extra) = &self.agent.config.compose.program_tools {
            turn.upstream_calls.extend(extra.0.calls(outcome));
        }
    }

    fn finish(&mut self, outcome: Result<Json, Fail>) -> Step {
        let cfg = &self.agent.config;
        self.usage.turns = self.turns.len() as u32;
        self.usage.duration_ms = self.started.elapsed().as_millis() as u64;
        let (status, return_value, fail) = match outcome {
            Ok(v) => (Status::Ok, Some(v), None),
            Err(f) => (Status::Error, None, Some(f)),
        };
        let step = Step {
            status,
            return_value,
            fail,
            memory: memory_json(&self.memory, &self.agent.config.prelude),
            usage: self.usage.clone(),
            own_usage: None,
            turns: std::mem::take(&mut self.turns),
            name: cfg.name.clone(),
            children: self.nest.take_children(),
            signature: cfg.signature_text.clone(),
            warnings: self.warnings.lock().map(|mut w| std::mem::take(&mut *w)).unwrap_or_default(),
            upstream_calls: Vec::new(),
            ptc_metrics: None,
        };
        let step = self.summarize_upstream(step).total_usage();
        emit(self.observer.as_deref(), || Event::RunEnd {
            status: step.status,
            return_value: step.return_value.clone(),
            fail: step.fail.clone(),
            usage: step.usage.clone(),
        });
        step
    }
}

fn cfg_blocks(m: &Mission<'_>) -> crate::extract::MultipleCodeBlocks {
    m.agent.config.multiple_code_blocks
}

impl Mission<'_> {
    /// With program tools: the step's `upstream_calls` (each with its turn) and
    /// `ptc_metrics`, also sent to the observer.
    fn summarize_upstream(&self, mut step: Step) -> Step {
        let Some(extra) = &self.agent.config.compose.program_tools else { return step };
        for turn in &step.turns {
            for call in &turn.upstream_calls {
                let mut call = call.clone();
                if let Json::Object(m) = &mut call {
                    m.insert("turn".into(), Json::from(turn.number));
                }
                step.upstream_calls.push(call);
            }
        }
        let answer_bytes = step.return_value.as_ref().map_or(0, |v| v.to_string().len() as u64);
        let prints_bytes: u64 = step.turns.iter().flat_map(|t| &t.prints).map(|p| p.len() as u64).sum();
        let metrics = extra.0.metrics(&step.upstream_calls, answer_bytes, prints_bytes);
        emit(self.observer.as_deref(), || Event::UpstreamSummary {
            upstream_calls: step.upstream_calls.clone(),
            ptc_metrics: metrics.clone(),
        });
        step.ptc_metrics = Some(metrics);
        step
    }
}

pub(crate) fn trace_call(r: &ptc_lisp_eval::ToolCallRecord) -> ToolCallTrace {
    ToolCallTrace {
        name: r.name.clone(),
        args: ptc_lisp_eval::json::to_json(&r.args).unwrap_or(Json::Null),
        result: r
            .result
            .as_ref()
            .map(|v| ptc_lisp_eval::json::to_json(v).unwrap_or_else(|_| Json::String(to_clojure(v)))),
        error: r.error.as_ref().map(|e| e.message.clone()),
        duration_ms: r.duration.as_millis() as u64,
        exposure_layer: r.meta.get("exposure_layer").and_then(Json::as_str).unwrap_or("ptc_lisp").to_string(),
        cached: r.meta.get("cached").and_then(Json::as_bool).unwrap_or(false),
    }
}

/// `kind: message`, with the location when known.
pub(crate) fn error_text(e: &EvalError) -> String {
    match e.span {
        Some(s) => format!("{}: {} (line {}, column {})", e.kind.as_str(), e.message, s.line, s.column),
        None => format!("{}: {}", e.kind.as_str(), e.message),
    }
}

/// `(fail v)` as a [`Fail`]: `{:reason :x :message "..." :op "..." :details {...}}`.
pub(crate) fn user_fail(v: &Value) -> Fail {
    let Value::Map(m) = v else {
        return Fail::new(
            Reason::Failed,
            match v {
                Value::Str(s) => s.to_string(),
                other => to_clojure(other),
            },
        );
    };
    let text = |key: &str| {
        ptc_signature::field_value(m, key).map(|(_, v)| match v {
            Value::Str(s) | Value::Keyword(s) => s.to_string(),
            other => to_clojure(other),
        })
    };
    Fail {
        reason: text("reason").unwrap_or_else(|| Reason::Failed.into()),
        message: text("message").unwrap_or_else(|| to_clojure(v)),
        op: text("op"),
        details: ptc_signature::field_value(m, "details")
            .and_then(|(_, d)| ptc_lisp_eval::json::to_json(&normalize_keys(d)).ok()),
    }
}

/// Map keys become strings with `-` turned into `_`, recursively; values are untouched.
pub(crate) fn normalize_keys(v: &Value) -> Value {
    match v {
        Value::Map(m) => {
            let mut out = PMap::new();
            for (k, val) in m.iter() {
                let key = match k {
                    Value::Keyword(s) | Value::Str(s) | Value::Symbol(s) => Value::str(s.replace('-', "_")),
                    other => Value::str(to_clojure(other)),
                };
                out.insert(key, normalize_keys(val));
            }
            Value::Map(Arc::new(out))
        }
        Value::Vector(items) | Value::List(items) => Value::vector(items.iter().map(normalize_keys)),
        Value::Set(items) => Value::set(items.iter().map(normalize_keys)),
        other => other.clone(),
    }
}

fn round_floats(v: &Value, digits: u32) -> Value {
    match v {
        Value::Float(f) if f.is_finite() => {
            let scale = 10f64.powi(digits as i32);
            let r = (f * scale).round() / scale;
            Value::Float(if r.is_finite() { r } else { *f })
        }
        Value::Map(m) => {
            let mut out = PMap::new();
            for (k, val) in m.iter() {
                out.insert(k.clone(), round_floats(val, digits));
            }
            Value::Map(Arc::new(out))
        }
        Value::Vector(items) | Value::List(items) => Value::vector(items.iter().map(|x| round_floats(x, digits))),
        other => other.clone(),
    }
}

/// Printed bytes of all definitions (names included).
/// The size of the definitions programs made (the prelude's are the embedder's).
fn memory_size(memory: &Memory, prelude: &Prelude) -> u64 {
    prelude
        .own(memory)
        .map(|(name, v)| (name.len() + to_clojure_with(v, &PrintOptions::default()).0.len()) as u64)
        .sum()
}

/// The definitions programs made, as JSON (`Step.memory`, checkpoints).
fn memory_json(memory: &Memory, prelude: &Prelude) -> BTreeMap<String, Json> {
    prelude
        .own(memory)
        .map(|(k, v)| {
            let j = ptc_lisp_eval::json::to_json(v).unwrap_or_else(|_| Json::String(to_clojure(v)));
            (k.to_string(), j)
        })
        .collect()
}

/// Dropping a mission (its `run` future dropped before the end) cancels everything it
/// started: the running program, its tool calls, nested agents. After a finished mission
/// this reaches nothing.
impl Drop for Mission<'_> {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// The failure of a cancelled mission.
pub(crate) fn cancelled() -> Fail {
    Fail::new(Reason::Cancelled, "The mission was cancelled by its caller before it finished")
}

/// Resolves once `cancel` (or an ancestor) is cancelled.
pub(crate) async fn until_cancelled(cancel: &Cancel) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let tx = Mutex::new(Some(tx));
    let _watch = cancel.on_cancel(move || {
        if let Some(tx) = tx.lock().ok().and_then(|mut t| t.take()) {
            let _ = tx.send(());
        }
    });
    let _ = rx.await;
}
