//! What a mission's model requests cost, and the budget that stops it (`max_cost_usd`).
//!
//! Prices are US dollars per million tokens, per model: input, output, and the cheaper
//! rate of input read from the provider's cache. A small built-in table covers the
//! vendors' current models at their list prices (late 2025); a [`PriceTable`] given to
//! the builder — `ptc run` fills it from the `price` of each LLM registry entry — adds
//! models and overrides these. A model is found by its name as `Llm::name` reports it
//! (`openai:gpt-4.1-mini`), then by the model id alone, then by the longest table entry
//! the id starts with (`claude-haiku-4-5-20251001` is `claude-haiku-4-5`).
//!
//! The budget is checked before every request with an estimate (the request's bytes / 4
//! as input tokens at the full input rate, plus the largest answer so far — at least
//! 512 tokens, or `max_output_tokens` when the request sets it — at the output rate), and
//! the actual cost of each answer is added when it arrives; the mission fails with
//! `cost_budget_exceeded` when the spend so far plus the estimate would pass the budget.
//!
//! A budget covers the whole mission tree below the agent that sets it: the requests of
//! its nested agents and of the LLM tools it or they call are charged to it too (a
//! [`CostScope`] per mission, chained to its parent's). Each request reserves its
//! estimate in every budget above it before it is sent, and the reservation is replaced
//! by the actual cost when the answer arrives (or released when the request fails), so
//! children running at once (`pmap`) cannot overrun a budget together. A nested agent's
//! own `max_cost_usd` bounds its own subtree as well.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::llm::{LlmRequest, ModelPrice, TokenUsage};
use crate::reason::Reason;
use crate::step::Fail;

/// The built-in list prices (USD per million tokens: input, output, cached input).
const BUILTIN: &[(&str, f64, f64, f64)] = &[
    ("gpt-5", 1.25, 10.0, 0.125),
    ("gpt-5-mini", 0.25, 2.0, 0.025),
    ("gpt-5-nano", 0.05, 0.40, 0.005),
    ("gpt-4.1", 2.0, 8.0, 0.50),
    ("gpt-4.1-mini", 0.40, 1.60, 0.10),
    ("gpt-4.1-nano", 0.10, 0.40, 0.025),
    ("gpt-4o", 2.50, 10.0, 1.25),
    ("gpt-4o-mini", 0.15, 0.60, 0.075),
    ("o4-mini", 1.10, 4.40, 0.275),
    ("claude-opus-4-5", 5.0, 25.0, 0.50),
    ("claude-opus-4-1", 15.0, 75.0, 1.50),
    ("claude-sonnet-4-5", 3.0, 15.0, 0.30),
    ("claude-sonnet-4", 3.0, 15.0, 0.30),
    ("claude-haiku-4-5", 1.0, 5.0, 0.10),
    ("claude-3-5-haiku", 0.80, 4.0, 0.08),
    ("gemini-2.5-pro", 1.25, 10.0, 0.31),
    ("gemini-2.5-flash", 0.30, 2.50, 0.075),
    ("gemini-2.5-flash-lite", 0.10, 0.40, 0.025),
];

/// Prices by model (see the module documentation for how a model is found).
#[derive(Debug, Clone, PartialEq)]
pub struct PriceTable {
    entries: BTreeMap<String, ModelPrice>,
}

impl Default for PriceTable {
    /// The built-in table.
    fn default() -> Self {
        PriceTable::builtin()
    }
}

impl PriceTable {
    /// The built-in list prices of current vendor models.
    pub fn builtin() -> Self {
        let entries = BUILTIN
            .iter()
            .map(|&(model, input, output, cached)| (model.to_string(), ModelPrice::new(input, output).cached(cached)))
            .collect();
        PriceTable { entries }
    }

    /// A table without entries.
    pub fn empty() -> Self {
        PriceTable { entries: BTreeMap::new() }
    }

    /// Adds or overrides the price of `model` (a model id such as `gpt-4.1-mini`, or a
    /// full name such as `openai:gpt-4.1-mini` or `scripted`).
    pub fn set(&mut self, model: impl Into<String>, price: ModelPrice) -> &mut Self {
        self.entries.insert(model.into(), price);
        self
    }

    /// The price of the model named `name` (as `Llm::name` reports it).
    pub fn lookup(&self, name: &str) -> Option<ModelPrice> {
        if let Some(p) = self.entries.get(name) {
            return Some(*p);
        }
        let id = name.split_once(':').map_or(name, |(_, id)| id);
        if let Some(p) = self.entries.get(id) {
            return Some(*p);
        }
        self.entries
            .iter()
            .filter(|(model, _)| id.starts_with(model.as_str()) && id[model.len()..].starts_with(['-', '@', '.']))
            .max_by_key(|(model, _)| model.len())
            .map(|(_, p)| *p)
    }
}

/// The estimated cost of sending `request` (see the module documentation).
pub(crate) fn estimate(price: &ModelPrice, request: &LlmRequest, largest_answer: u64) -> f64 {
    let bytes = request.system.len()
        + request.messages.iter().map(|m| serde_json::to_string(m).map_or(0, |s| s.len())).sum::<usize>()
        + request.tools.iter().map(|t| t.description.len() + t.parameters.to_string().len()).sum::<usize>();
    let output = request.options.max_output_tokens.map_or(largest_answer.max(512), u64::from);
    let usage = TokenUsage { input: bytes as u64 / 4, output, cache_read: 0, cache_write: 0 };
    price.cost(&usage)
}

/// One mission's place in the tree's cost accounting: its budget (if it has one), what
/// it and its descendants have spent or reserved, and its parent's scope.
#[derive(Clone)]
pub(crate) struct CostScope {
    inner: Arc<Scope>,
}

struct Scope {
    /// `max_cost_usd` of the mission that opened the scope.
    budget: Option<f64>,
    /// The mission's agent name, for messages.
    agent: Option<String>,
    /// Actual cost of finished requests plus reservations of requests in flight.
    spent: Mutex<f64>,
    parent: Option<Arc<Scope>>,
    /// Held while a reservation is checked and made in every scope of the chain.
    tree: Arc<Mutex<()>>,
    /// The root agent's prices (for models a nested mission or LLM tool has no price of).
    prices: Arc<PriceTable>,
}

/// An estimate reserved in every scope of a chain (released or settled later).
#[derive(Debug, Clone, Copy, Default)]
#[must_use]
pub(crate) struct Reservation(f64);

impl CostScope {
    /// The scope of a tree's root mission.
    pub(crate) fn root(budget: Option<f64>, agent: Option<String>, prices: Arc<PriceTable>) -> Self {
        let inner =
            Scope { budget, agent, spent: Mutex::new(0.0), parent: None, tree: Arc::new(Mutex::new(())), prices };
        CostScope { inner: Arc::new(inner) }
    }

    /// The scope of a nested mission inside this one.
    pub(crate) fn child(&self, budget: Option<f64>, agent: Option<String>) -> Self {
        let inner = Scope {
            budget,
            agent,
            spent: Mutex::new(0.0),
            parent: Some(self.inner.clone()),
            tree: self.inner.tree.clone(),
            prices: self.inner.prices.clone(),
        };
        CostScope { inner: Arc::new(inner) }
    }

    /// The price of `model`: `own` when known, else the tree root's table.
    pub(crate) fn price(&self, own: Option<ModelPrice>, model: &str) -> Option<ModelPrice> {
        own.or_else(|| self.inner.prices.lookup(model))
    }

    /// The scopes from this one up to the root.
    fn chain(&self) -> impl Iterator<Item = &Scope> {
        std::iter::successors(Some(&*self.inner), |s| s.parent.as_deref())
    }

    /// The nearest budget in the chain.
    pub(crate) fn nearest_budget(&self) -> Option<f64> {
        self.chain().find_map(|s| s.budget)
    }

    /// Spent (and reserved) in this mission's scope: its own requests and its
    /// descendants'.
    #[cfg(test)]
    pub(crate) fn spent(&self) -> f64 {
        self.inner.spent.lock().map(|s| *s).unwrap_or(0.0)
    }

    /// Charges a cost already incurred (a resumed mission's nested agents) to every
    /// scope of the chain.
    pub(crate) fn charge(&self, usd: f64) {
        let _tree = self.inner.tree.lock();
        for scope in self.chain() {
            if let Ok(mut spent) = scope.spent.lock() {
                *spent += usd;
            }
        }
    }

    /// Reserves `estimate` (the cost of model request `turn` of a model priced `price`)
    /// in every scope of the chain, or fails with `price_unknown` (a budget applies but
    /// the model has no price) or `cost_budget_exceeded` (the first budget, nearest
    /// first, it would pass).
    pub(crate) fn reserve(
        &self,
        price: Option<&ModelPrice>,
        model: &str,
        estimate: impl FnOnce(&ModelPrice) -> f64,
        turn: u32,
    ) -> Result<Reservation, Fail> {
        let Some(budget) = self.nearest_budget() else { return Ok(Reservation(0.0)) };
        let Some(price) = price else {
            return Err(Fail::new(
                Reason::PriceUnknown,
                format!(
                    "max_cost_usd is {budget}, but no price is known for the model {model:?}; give one (SubAgentBuilder::prices, or \"price\" in its LLM registry entry) or leave max_cost_usd unset"
                ),
            ));
        };
        let next = estimate(price);
        let _tree = self.inner.tree.lock();
        for (i, scope) in self.chain().enumerate() {
            let Some(budget) = scope.budget else { continue };
            let spent = scope.spent.lock().map(|s| *s).unwrap_or(0.0);
            if spent + next > budget {
                let whose = if i == 0 {
                    "the".to_string()
                } else {
                    let name = scope.agent.as_deref().map(|n| format!(" {n:?}")).unwrap_or_default();
                    format!(
                        "the mission tree's (its parent and nested agents together) — set by the agent{name} {i} level(s) up —"
                    )
                };
                let mut fail = Fail::new(
                    Reason::CostBudgetExceeded,
                    format!(
                        "The next model request (turn {turn}) would cost about ${next:.4}, and ${spent:.4} is spent of {whose} ${budget} budget (max_cost_usd)"
                    ),
                );
                fail.details = Some(serde_json::json!({
                    "spent_usd": spent, "estimate_usd": next, "max_cost_usd": budget, "levels_up": i
                }));
                return Err(fail);
            }
        }
        for scope in self.chain() {
            if let Ok(mut spent) = scope.spent.lock() {
                *spent += next;
            }
        }
        Ok(Reservation(next))
    }

    /// Replaces `reservation` with the actual cost `usd` (0 when the request failed).
    pub(crate) fn settle(&self, reservation: Reservation, usd: f64) {
        self.charge(usd - reservation.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_are_found_by_name_id_and_longest_prefix() {
        let table = PriceTable::builtin();
        assert_eq!(table.lookup("openai:gpt-4o-mini"), Some(ModelPrice::new(0.15, 0.60).cached(0.075)));
        assert_eq!(table.lookup("gpt-4o-mini-2024-07-18").map(|p| p.input_per_mtok), Some(0.15));
        assert_eq!(table.lookup("anthropic:claude-haiku-4-5-20251001").map(|p| p.output_per_mtok), Some(5.0));
        assert_eq!(table.lookup("openai:gpt-4o").map(|p| p.input_per_mtok), Some(2.50));
        assert_eq!(table.lookup("gpt-4oops"), None);
        assert_eq!(table.lookup("scripted"), None);
        let mut table = PriceTable::builtin();
        table.set("gpt-4o", ModelPrice::new(1.0, 1.0));
        assert_eq!(table.lookup("openai:gpt-4o").map(|p| p.input_per_mtok), Some(1.0), "the override wins");
    }

    #[test]
    fn cached_tokens_cost_the_cached_rate() {
        let price = ModelPrice::new(2.0, 8.0).cached(0.5);
        let usage = TokenUsage { input: 1_000_000, output: 100_000, cache_read: 400_000, cache_write: 0 };
        // 600k fresh at 2.0 + 400k cached at 0.5 + 100k out at 8.0
        assert!((price.cost(&usage) - (1.2 + 0.2 + 0.8)).abs() < 1e-9);
        assert!(ModelPrice::new(-1.0, 1.0).check().unwrap_err().contains("input_per_mtok is -1"));
    }

    #[test]
    fn a_reservation_counts_in_every_budget_above_until_it_is_settled() {
        let price = ModelPrice::new(1.0, 0.0);
        let root = CostScope::root(Some(1.0), Some("root".into()), Arc::new(PriceTable::empty()));
        let child = root.child(None, Some("child".into()));
        let grandchild = child.child(Some(0.5), None);
        let r = grandchild.reserve(Some(&price), "m", |_| 0.4, 1).unwrap();
        assert_eq!((root.spent(), child.spent(), grandchild.spent()), (0.4, 0.4, 0.4));
        // the grandchild's own budget binds first
        let fail = grandchild.reserve(Some(&price), "m", |_| 0.2, 2).unwrap_err();
        assert_eq!(fail.reason, "cost_budget_exceeded");
        assert!(fail.message.contains("is spent of the $0.5 budget"), "{}", fail.message);
        // a sibling's reservation meets the root's budget, named as the tree's
        let fail = child.reserve(Some(&price), "m", |_| 0.7, 3).unwrap_err();
        assert!(fail.message.contains("$0.4000 is spent of the mission tree's"), "{}", fail.message);
        assert!(fail.message.contains("agent \"root\" 1 level(s) up"), "{}", fail.message);
        grandchild.settle(r, 0.1);
        assert!((root.spent() - 0.1).abs() < 1e-12 && (child.spent() - 0.1).abs() < 1e-12);
        let r = child.reserve(Some(&price), "m", |_| 0.7, 3).unwrap();
        child.settle(r, 0.0);
        assert!((root.spent() - 0.1).abs() < 1e-12, "a failed request is released");
        // no budget anywhere: nothing is needed, not even a price
        let free = CostScope::root(None, None, Arc::new(PriceTable::empty()));
        assert!(free.child(None, None).reserve(None, "m", |_| 1.0, 1).is_ok());
        assert_eq!(grandchild.reserve(None, "m", |_| 1.0, 1).unwrap_err().reason, "price_unknown");
    }
}
