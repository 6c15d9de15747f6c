//! Deterministic benchmark data: every data set comes from one LCG seeded with a constant,
//! so the same run of `cargo xtask bench` on any machine measures the same bytes. No random
//! crate: the generator is six lines and its output must never change under us.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Knuth's MMIX linear congruential generator; the high bits are the usable ones.
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Self {
        Lcg(seed)
    }

    /// A pseudo-random number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }

    /// One element of `items`, chosen pseudo-randomly.
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// The data sets the workloads read, each one JSON object (a `--context` file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataSet {
    /// `{"orders": [{id, status, amount, customer, category, priority}]}` of n orders.
    Orders(usize),
    /// `{"text": "..."}`: about n bytes of words separated by spaces and newlines.
    Text(usize),
    /// `{"lines": ["<time> <level> <method> <path> status=<code> latency=<n>ms", ...]}`.
    Logs(usize),
    /// `{"orders": [...n orders...], "customers": [{id, name, tier}] of m customers}`.
    Join(usize, usize),
    /// `{"n": n}`: the size parameter of a program that builds its own data.
    Size(usize),
    /// `{"events": [...]}`: nested event records filling about n bytes.
    Events(usize),
}

const STATUSES: [&str; 5] = ["paid", "pending", "refunded", "paid", "failed"];
const CATEGORIES: [&str; 12] =
    ["books", "games", "garden", "grocery", "health", "home", "kids", "music", "office", "pets", "sports", "tools"];

impl DataSet {
    fn file_name(self) -> String {
        // bump the version when a generator changes, so stale files are not reused
        const V: u32 = 1;
        match self {
            DataSet::Orders(n) => format!("orders-{n}-v{V}.json"),
            DataSet::Text(n) => format!("text-{n}-v{V}.json"),
            DataSet::Logs(n) => format!("logs-{n}-v{V}.json"),
            DataSet::Join(n, m) => format!("join-{n}-{m}-v{V}.json"),
            DataSet::Size(n) => format!("size-{n}-v{V}.json"),
            DataSet::Events(n) => format!("events-{n}-v{V}.json"),
        }
    }

    /// The context file of this data set under `dir`, written on first use.
    pub fn ensure(self, dir: &Path) -> Result<PathBuf> {
        let path = dir.join(self.file_name());
        if !path.exists() {
            let text = self.generate();
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
            std::fs::rename(&tmp, &path)?;
        }
        Ok(path)
    }

    fn generate(self) -> String {
        match self {
            DataSet::Orders(n) => format!("{{\"orders\":{}}}", orders(&mut Lcg::new(42), n, 5000)),
            DataSet::Text(n) => text(n),
            DataSet::Logs(n) => logs(n),
            DataSet::Join(n, m) => {
                let mut rng = Lcg::new(7);
                format!("{{\"orders\":{},\"customers\":{}}}", orders(&mut rng, n, m), customers(&mut rng, m))
            }
            DataSet::Size(n) => format!("{{\"n\":{n}}}"),
            DataSet::Events(n) => events(n),
        }
    }
}

fn orders(rng: &mut Lcg, n: usize, customers: usize) -> String {
    let mut s = String::with_capacity(n * 110 + 2);
    s.push('[');
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(
            s,
            "{{\"id\":{i},\"status\":\"{}\",\"amount\":{},\"customer\":\"c{}\",\"category\":\"{}\",\"priority\":{}}}",
            rng.pick(&STATUSES),
            rng.below(10_000),
            rng.below(customers),
            rng.pick(&CATEGORIES),
            1 + rng.below(5),
        );
    }
    s.push(']');
    s
}

fn customers(rng: &mut Lcg, m: usize) -> String {
    let tiers = ["bronze", "silver", "gold", "platinum"];
    let mut s = String::with_capacity(m * 60 + 2);
    s.push('[');
    for i in 0..m {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "{{\"id\":\"c{i}\",\"name\":\"Customer {i}\",\"tier\":\"{}\"}}", rng.pick(&tiers));
    }
    s.push(']');
    s
}

/// A vocabulary of 2,000 made-up words; one in five occurrences is capitalised, so
/// lower-casing matters.
fn text(bytes: usize) -> String {
    let mut rng = Lcg::new(11);
    let syllables = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "do", "an", "el"];
    let vocab: Vec<String> =
        (0..2000).map(|_| (0..1 + rng.below(3)).map(|_| rng.pick(&syllables)).collect::<String>()).collect();
    let mut s = String::with_capacity(bytes + 64);
    s.push_str("{\"text\":\"");
    let mut words = 0usize;
    while s.len() < bytes {
        if words > 0 {
            s.push_str(if words.is_multiple_of(12) { "\\n" } else { " " });
        }
        let w = &vocab[rng.below(vocab.len())];
        if rng.below(5) == 0 {
            let mut cs = w.chars();
            if let Some(c) = cs.next() {
                s.push(c.to_ascii_uppercase());
                s.push_str(cs.as_str());
            }
        } else {
            s.push_str(w);
        }
        words += 1;
    }
    s.push_str("\"}");
    s
}

fn logs(n: usize) -> String {
    let mut rng = Lcg::new(13);
    let levels = ["INFO", "INFO", "INFO", "WARN", "ERROR"];
    let methods = ["GET", "GET", "POST", "PUT", "DELETE"];
    let paths = ["/api/orders", "/api/customers", "/api/items", "/health", "/login"];
    let codes = ["200", "200", "200", "201", "204", "301", "400", "404", "500", "503"];
    let mut s = String::with_capacity(n * 90 + 16);
    s.push_str("{\"lines\":[");
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        let (h, m, sec) = (i / 3600 % 24, i / 60 % 60, i % 60);
        let level = rng.pick(&levels);
        if rng.below(10) == 0 {
            // a line the pattern does not match
            let _ = write!(s, "\"2026-11-24T{h:02}:{m:02}:{sec:02}Z {level} worker heartbeat ok\"");
            continue;
        }
        let _ = write!(
            s,
            "\"2026-11-24T{h:02}:{m:02}:{sec:02}Z {level} {} {}/{} status={} latency={}ms\"",
            rng.pick(&methods),
            rng.pick(&paths),
            rng.below(100_000),
            rng.pick(&codes),
            rng.below(2000),
        );
    }
    s.push_str("]}");
    s
}

fn events(bytes: usize) -> String {
    let mut rng = Lcg::new(17);
    let kinds = ["click", "view", "view", "purchase", "error", "login"];
    let countries = ["DE", "FR", "US", "JP", "BR", "IN", "NG", "CA"];
    let tags = ["a", "beta", "mobile", "desktop", "eu", "new", "returning"];
    let mut s = String::with_capacity(bytes + 512);
    s.push_str("{\"events\":[");
    let mut i = 0usize;
    while s.len() < bytes {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(
            s,
            "{{\"id\":{i},\"ts\":{},\"kind\":\"{}\",\"latency_ms\":{},\"score\":{}.{:02},\
             \"user\":{{\"id\":\"u{}\",\"country\":\"{}\",\"premium\":{}}},\
             \"tags\":[\"{}\",\"{}\"],\"payload\":{{\"path\":\"/p/{}\",\"bytes\":{}}}}}",
            1_790_000_000 + i * 7,
            rng.pick(&kinds),
            rng.below(1000),
            rng.below(100),
            rng.below(100),
            rng.below(50_000),
            rng.pick(&countries),
            rng.below(4) == 0,
            rng.pick(&tags),
            rng.pick(&tags),
            rng.below(10_000),
            rng.below(1_000_000),
        );
        i += 1;
    }
    s.push_str("]}");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_data_is_valid_json_and_deterministic() {
        for set in
            [DataSet::Orders(50), DataSet::Text(2000), DataSet::Logs(50), DataSet::Join(30, 5), DataSet::Events(5000)]
        {
            let a = set.generate();
            assert_eq!(a, set.generate(), "{set:?} is not deterministic");
            let v: serde_json::Value = serde_json::from_str(&a).unwrap_or_else(|e| panic!("{set:?}: {e}"));
            assert!(v.is_object(), "{set:?}");
        }
    }
}
