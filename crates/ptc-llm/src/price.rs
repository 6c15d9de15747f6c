//! What a model's tokens cost.

use serde::{Deserialize, Serialize};

use crate::TokenUsage;

/// US dollars per million tokens for one model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ModelPrice {
    /// Prompt tokens (not read from the cache).
    pub input_per_mtok: f64,
    /// Completion tokens.
    pub output_per_mtok: f64,
    /// Prompt tokens read from the provider's cache (default: the input rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_per_mtok: Option<f64>,
}

impl ModelPrice {
    /// A price: input and output per million tokens.
    pub fn new(input_per_mtok: f64, output_per_mtok: f64) -> Self {
        ModelPrice { input_per_mtok, output_per_mtok, cached_input_per_mtok: None }
    }

    /// With a cached-input rate.
    pub fn cached(mut self, cached_input_per_mtok: f64) -> Self {
        self.cached_input_per_mtok = Some(cached_input_per_mtok);
        self
    }

    /// What `usage` costs (`usage.input` includes the cached tokens).
    pub fn cost(&self, usage: &TokenUsage) -> f64 {
        let cached = usage.cache_read.min(usage.input);
        let fresh = usage.input - cached;
        let cached_rate = self.cached_input_per_mtok.unwrap_or(self.input_per_mtok);
        (fresh as f64 * self.input_per_mtok + cached as f64 * cached_rate + usage.output as f64 * self.output_per_mtok)
            / 1_000_000.0
    }

    /// Checks the rates are finite and not negative; `Err` names the field.
    pub fn check(&self) -> Result<(), String> {
        let rates = [
            ("input_per_mtok", Some(self.input_per_mtok)),
            ("output_per_mtok", Some(self.output_per_mtok)),
            ("cached_input_per_mtok", self.cached_input_per_mtok),
        ];
        for (name, rate) in rates {
            if let Some(r) = rate
                && !(r.is_finite() && r >= 0.0)
            {
                return Err(format!("{name} is {r}; write a price in US dollars per million tokens, 0 or more"));
            }
        }
        Ok(())
    }
}
