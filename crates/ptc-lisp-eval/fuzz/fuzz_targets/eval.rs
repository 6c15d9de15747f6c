//! Programs through the whole engine under small limits (16 MiB heap, 1 s), then
//! through everything a server does with what they leave behind: the result and each
//! definition printed (capped, as feedback does), converted to JSON, hashed, compared,
//! kept as memory for a second program, and dropped — all on a thread with a 2 MiB stack,
//! the size of a tokio worker's, where an unbounded recursion is a crash.
//!
//! Two input forms:
//! - bytes starting with `;` are program text (the committed seeds reproduce findings in
//!   readable form, and libFuzzer mutates them as text);
//! - anything else drives a small grammar of PTC-Lisp: literals, collections, special
//!   forms and calls to real builtins, plus the shapes that broke servers before — data
//!   nested 100k deep or 1M wide, closures capturing it (`constantly`, `fn`, `memoize`,
//!   `comp`, `juxt`, `partial`, `reduced`, `fail`), strings built to megabytes (`str`,
//!   `apply str`, `str/join`, `.repeat`, `format`), shared structure compared and hashed,
//!   returned and `def`'d.
//!
//! Cost: the typical input must be cheap (a 10 M-execution run is the goal), so each
//! generated program first draws a *scale* ([`Scale`]): most use small sizes under a fuel
//! budget (a millisecond or less each), some nest data past [`MAX_VALUE_NESTING`], and
//! one in thirty-two gets the full table — 100k deep, 1M wide, megabyte strings —
//! and the limits of the servers, as every text input does. Names the grammar refers to
//! are mostly bound (an unbound one fails the whole program at analysis, before it runs);
//! a few are left unbound on purpose. One long-lived thread runs every input, and a
//! second program runs only when the first defined something.
//!
//! `PTC_FUZZ_SHOW=1` prints each program before it runs, and how it ended (to see what a
//! saved input is, or where the time of a corpus goes).
//!
//! Bugs: a panic or abort (a stack overflow included), an `internal error`, a run that
//! overstays its deadline, a success above the heap limit, and any moment where the
//! process holds more than [`PEAK_FACTOR`] times the heap limit: a counting allocator
//! refuses the allocation and aborts, which turns "builds 3 GB before charging" into a
//! finding instead of a machine out of memory.
#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use ptc_lisp_eval::printer::{PrintOptions, to_clojure_with};
use ptc_lisp_eval::{Cancel, Engine, FnHost, Limits, MAX_VALUE_NESTING, Outcome, RunInput, Value};

/// The heap limit every program runs under.
const HEAP_LIMIT: u64 = 16 * 1024 * 1024;
/// Live bytes the process may hold above its level before the run, as a multiple of
/// [`HEAP_LIMIT`]. The engine charges estimates, so some slack is honest; gigabytes are not.
const PEAK_FACTOR: usize = 16;
/// The stack of the thread that runs and inspects a program (a tokio worker's default).
const STACK: usize = 2 * 1024 * 1024;

/// Counts live bytes; while a run is armed, refuses any allocation that would take the
/// process more than `PEAK_FACTOR * HEAP_LIMIT` above where the run started.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static CEILING: AtomicUsize = AtomicUsize::new(usize::MAX);
static ARMED: AtomicBool = AtomicBool::new(false);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        if ARMED.load(Ordering::Relaxed) && live > CEILING.load(Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            over_ceiling(layout.size());
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            let grow = new_size - layout.size();
            let live = LIVE.fetch_add(grow, Ordering::Relaxed) + grow;
            if ARMED.load(Ordering::Relaxed) && live > CEILING.load(Ordering::Relaxed) {
                LIVE.fetch_sub(grow, Ordering::Relaxed);
                over_ceiling(new_size);
                return std::ptr::null_mut();
            }
            // SAFETY: forwarded unchanged to the system allocator.
            let p = unsafe { System.realloc(ptr, layout, new_size) };
            if p.is_null() {
                LIVE.fetch_sub(grow, Ordering::Relaxed);
            }
            p
        } else {
            // SAFETY: forwarded unchanged to the system allocator.
            let p = unsafe { System.realloc(ptr, layout, new_size) };
            if !p.is_null() {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
            p
        }
    }
}

/// Says why the allocation about to fail (and abort the process) was refused. Writes
/// a fixed message without allocating.
fn over_ceiling(size: usize) {
    ARMED.store(false, Ordering::Relaxed);
    let _ = std::io::stderr().write_all(b"\n==> eval fuzz: a program took the process more than 16x its 16 MiB heap limit above its starting level (refused an allocation of ");
    let mut digits = [0u8; 20];
    let mut n = size;
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let _ = std::io::stderr().write_all(&digits[i..]);
    let _ = std::io::stderr().write_all(b" bytes): something allocates before it charges the heap\n");
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// A program, as text, and the scale it runs at.
#[derive(Debug)]
struct Program(String, Scale);

/// Local names the grammar can bind; a [`Bound`] bit each.
const LOCALS: &[&str] = &["x", "xs", "m", "v", "s", "d0", "d1", "d2"];
const X: Bound = Bound(1);
const XS: Bound = Bound(2);
const M: Bound = Bound(4);
const V: Bound = Bound(8);

/// The names of [`LOCALS`] bound where an expression is generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bound(u8);

impl Bound {
    fn with(self, b: Bound) -> Bound {
        Bound(self.0 | b.0)
    }
}

/// What the grammar needs while it writes one program.
struct Gen<'n> {
    names: &'n [&'static str],
    scale: Scale,
}

const SPECIAL: &[&str] = &["if", "when", "let", "fn", "do", "and", "or", "->>", "->", "loop", "for", "doseq", "cond"];

/// Sizes, weighted towards the ones that matter: empty, small, and past every limit. A
/// program's [`Scale`] allows a prefix of this table.
const SIZES: &[u32] = &[0, 1, 2, 3, 10, 100, 1_000, 3_000, 5_000, 20_000, 100_000, 1_000_000];

/// How far a generated program reaches, drawn once per program. Each scale allows a prefix
/// of [`SIZES`] and has its own fuel and time budget; the heap limit is the same for all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scale {
    /// Sizes up to 100, 20k fuel, 100 ms: the common case, a millisecond or less.
    Small,
    /// Data nested up to 5,000 deep (past [`MAX_VALUE_NESTING`]), other sizes up to 1,000;
    /// 30k fuel, 200 ms.
    Medium,
    /// Every size (100k deep, 1M wide, megabyte strings), no fuel limit and a 1 s deadline:
    /// the limits a server runs under. Text inputs (the seeds) run at this scale.
    Full,
}

impl Scale {
    fn draw(u: &mut Unstructured) -> arbitrary::Result<Scale> {
        Ok(match u.int_in_range(0u8..=31)? {
            0..=23 => Scale::Small,
            24..=30 => Scale::Medium,
            _ => Scale::Full,
        })
    }

    /// Sizes of wide data and strings (multiplied by each other in string builders).
    fn sizes(self) -> &'static [u32] {
        match self {
            Scale::Small => &SIZES[..6],
            Scale::Medium => &SIZES[..7],
            Scale::Full => SIZES,
        }
    }

    /// Sizes of deep data: at medium scale past [`MAX_VALUE_NESTING`].
    fn depths(self) -> &'static [u32] {
        match self {
            Scale::Small => &SIZES[..6],
            Scale::Medium => &SIZES[..9],
            Scale::Full => SIZES,
        }
    }

    fn limits(self) -> Limits {
        let (timeout, fuel) = match self {
            Scale::Small => (Duration::from_millis(100), Some(20_000)),
            Scale::Medium => (Duration::from_millis(200), Some(30_000)),
            Scale::Full => (Duration::from_secs(1), None),
        };
        Limits {
            timeout,
            max_fuel: fuel,
            max_heap_bytes: HEAP_LIMIT,
            max_loop_iterations: 10_000,
            max_result_bytes: 64 * 1024,
            max_print_bytes: 64 * 1024,
            ..Limits::default()
        }
    }
}

/// Builders of deep data from an accumulator `a` (the `%N` is the size).
const DEEP: &[&str] = &[
    "(reduce (fn [a _] [a]) [] (range %N))",
    "(reduce (fn [a k] {k a}) {} (range %N))",
    "(reduce (fn [a _] (list a)) nil (range %N))",
    "(reduce (fn [a _] #{a}) #{} (range %N))",
    "(reduce (fn [a _] {:next a}) nil (range %N))",
    "(nth (iterate vector 1) %N)",
    "(loop [a [] i 0] (if (< i %N) (recur [a] (inc i)) a))",
    "(reduce (fn [a _] (conj [1 2] a)) [] (range %N))",
];

/// Builders of wide data.
const WIDE: &[&str] = &[
    "(vec (range %N))",
    "(repeat %N :x)",
    "(into {} (map (fn [i] [i (str i)]) (range %N)))",
    "(set (range %N))",
    "(zipmap (range %N) (range %N))",
    "(mapv str (range %N))",
    "(vec (repeat %N (vec (range 100))))",
];

/// Builders of big strings from a string `s`.
const STRINGS: &[&str] = &[
    "(apply str (repeat %N s))",
    "(str s s s s s s s s)",
    "(str/join \",\" (repeat %N s))",
    "(String/join \"\" (repeat %N s))",
    "(.repeat s %N)",
    "(format \"%s%s%s%s\" s s s s)",
    "(str/replace s \"x\" s)",
    "(apply str (map (fn [_] s) (range %N)))",
    "(reduce str (repeat %N s))",
    "(pr-str (repeat %N s))",
];

/// Wrappers that capture a value `v` in a function or another opaque value.
const CAPTURE: &[&str] = &[
    "(constantly v)",
    "(fn [] v)",
    "(fn [& _] v)",
    "#(identity v)",
    "(memoize (constantly v))",
    "(comp (constantly v))",
    "(comp first (constantly [v]))",
    "(juxt (constantly v) identity)",
    "(partial vector v)",
    "(reduced v)",
    "(fail v)",
    "(return v)",
    "[v v v v]",
    "{:a v :b [v v]}",
    "(list v (constantly v))",
    "(map (constantly v) (range 3))",
    "(fnil (constantly v) 0)",
    "(complement (constantly v))",
    "(some-fn (constantly v))",
];

/// What servers and programs do with a value `v` that walks it.
const WALK: &[&str] = &[
    "(= v v)",
    "(= [v v v] [v v v])",
    "(group-by identity [v v])",
    "#{v}",
    "{v 1}",
    "(frequencies [v v])",
    "(count (str v))",
    "(pr-str v)",
    "(compare [1 v] [1 v])",
    "(str v)",
    "(println v)",
    "(count (flatten [v]))",
    "(sort [v v])",
    "(distinct [v v])",
    "(json/write-str v)",
];

impl Gen<'_> {
    fn size(&self, u: &mut Unstructured) -> arbitrary::Result<String> {
        Ok(u.choose(self.scale.sizes())?.to_string())
    }

    fn depth(&self, u: &mut Unstructured) -> arbitrary::Result<String> {
        Ok(u.choose(self.scale.depths())?.to_string())
    }

    /// A name: mostly one bound here (or a constant), one time in sixteen any of
    /// [`LOCALS`] and `%`, bound or not (an analysis error, which ends the program before it
    /// runs).
    fn name(&self, u: &mut Unstructured, bound: Bound, out: &mut String) -> arbitrary::Result<()> {
        if u.int_in_range(0u8..=15)? == 0 {
            let any = u.int_in_range(0..=LOCALS.len())?;
            out.push_str(LOCALS.get(any).copied().unwrap_or("%"));
            return Ok(());
        }
        let mut pick: Vec<&str> = vec!["nil", "true", "false", "data/rows"];
        pick.extend(LOCALS.iter().enumerate().filter(|(i, _)| bound.0 & (1 << i) != 0).map(|(_, n)| *n));
        out.push_str(u.choose(&pick)?);
        Ok(())
    }

    /// One of the builder templates with its holes filled: `%N` by a size, `v` and `s` by
    /// generated expressions (bound with `let`, so each is evaluated once and shared).
    fn template(
        &self,
        u: &mut Unstructured,
        bound: Bound,
        depth: u32,
        table: &[&str],
        out: &mut String,
    ) -> arbitrary::Result<()> {
        let t = u.choose(table)?;
        let n = self.size(u)?;
        out.push_str("(let [v ");
        if depth > 5 || bool::arbitrary(u)? {
            out.push_str(&u.choose(DEEP)?.replace("%N", &self.depth(u)?));
        } else {
            self.expr(u, bound, depth + 1, out)?;
        }
        out.push_str(" s ");
        if bool::arbitrary(u)? {
            out.push_str(&format!("(.repeat \"x\" {})", self.size(u)?));
        } else {
            self.expr(u, bound.with(V), depth + 1, out)?;
        }
        out.push_str("] ");
        out.push_str(&t.replace("%N", &n));
        out.push(')');
        Ok(())
    }

    fn expr(&self, u: &mut Unstructured, bound: Bound, depth: u32, out: &mut String) -> arbitrary::Result<()> {
        let pick = if depth > 6 { u.int_in_range(0..=5)? } else { u.int_in_range(0..=21)? };
        match pick {
            0 => out.push_str(&i64::arbitrary(u)?.to_string()),
            1 => out.push_str(&format!("{:?}", f64::arbitrary(u)?).replace("inf", "1e308").replace("NaN", "0.5")),
            2 => out.push_str(&format!("{:?}", String::arbitrary(u)?.chars().take(12).collect::<String>())),
            3 => out.push_str(&format!(":k{}", u.int_in_range(0..=5)?)),
            4 => self.name(u, bound, out)?,
            5 => out.push_str(&format!("(range {})", u.int_in_range(0..=40)?)),
            6 | 7 => {
                let open = ["[", "{", "#{"][u.int_in_range(0..=2)?];
                out.push_str(open);
                for _ in 0..u.int_in_range(0..=4)? {
                    self.expr(u, bound, depth + 1, out)?;
                    out.push(' ');
                }
                out.push_str(if open == "[" { "]" } else { "}" });
            }
            8..=10 => {
                out.push('(');
                out.push_str(u.choose(self.names)?);
                for _ in 0..u.int_in_range(0..=3)? {
                    out.push(' ');
                    self.expr(u, bound, depth + 1, out)?;
                }
                out.push(')');
            }
            11 => {
                out.push_str("(let [x ");
                self.expr(u, bound, depth + 1, out)?;
                out.push_str(" xs [1 2 3] m {:a 1 \"b\" 2}] ");
                self.expr(u, bound.with(X).with(XS).with(M), depth + 1, out)?;
                out.push(')');
            }
            12 => {
                out.push_str("(map (fn [x] ");
                self.expr(u, bound.with(X), depth + 1, out)?;
                out.push_str(") ");
                self.expr(u, bound, depth + 1, out)?;
                out.push(')');
            }
            13 => out.push_str(&u.choose(DEEP)?.replace("%N", &self.size(u)?)),
            14 => {
                let n = self.size(u)?;
                out.push_str(&u.choose(WIDE)?.replace("%N", &n));
            }
            15 => self.template(u, bound, depth, STRINGS, out)?,
            16 | 17 => self.template(u, bound, depth, CAPTURE, out)?,
            18 => self.template(u, bound, depth, WALK, out)?,
            19 => {
                // two equal values built apart: compared, they share no structure
                let n = self.size(u)?;
                let w = u.choose(WIDE)?.replace("%N", &n);
                out.push_str(&format!("(let [a {w} b {w}] (= [a a a] [b b b]))"));
            }
            _ => {
                out.push('(');
                out.push_str(u.choose(SPECIAL)?);
                for _ in 0..u.int_in_range(1..=3)? {
                    out.push(' ');
                    self.expr(u, bound, depth + 1, out)?;
                }
                out.push(')');
            }
        }
        Ok(())
    }
}

/// The names of every builtin, collected once.
fn builtin_names() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| ptc_lisp_eval::registry::all().map(|b| b.name).collect())
}

impl<'a> Arbitrary<'a> for Program {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        if u.peek_bytes(1) == Some(b";") {
            let text = String::from_utf8_lossy(u.bytes(u.len())?).into_owned();
            return Ok(Program(text, Scale::Full));
        }
        let g = Gen { names: builtin_names(), scale: Scale::draw(u)? };
        let mut out = String::new();
        // d0, d1, ... as the earlier forms define them
        let mut defined = Bound(0);
        for i in 0..u.int_in_range(1..=3)? {
            let mut bound = defined;
            let defines = match u.int_in_range(0..=3)? {
                0 => {
                    out.push_str(&format!("(def d{i} "));
                    true
                }
                1 => {
                    out.push_str(&format!("(defn d{i} [x] "));
                    bound = bound.with(X);
                    true
                }
                _ => {
                    out.push_str("(do ");
                    false
                }
            };
            g.expr(u, bound, 0, &mut out)?;
            out.push_str(")\n");
            if defines {
                defined = defined.with(Bound(1 << (5 + i)));
            }
        }
        Ok(Program(out, g.scale))
    }
}

/// What a server does with a value after a run: preview, JSON, hash, compare.
fn inspect(v: &Value) {
    let preview = PrintOptions { limit: Some(50), printable_limit: Some(200), max_bytes: 4096 };
    let (text, _) = to_clojure_with(v, &preview);
    // past its cap the printer still closes every open bracket (one byte per level)
    let bound = 4096 + 64 + MAX_VALUE_NESTING + 1;
    assert!(
        text.len() <= bound,
        "a preview capped at 4096 bytes printed {}: {:?} ... {:?}",
        text.len(),
        text.chars().take(200).collect::<String>(),
        text.chars().rev().take(200).collect::<String>().chars().rev().collect::<String>()
    );
    // JSON has no sharing: like the servers, convert only what prints within a bound
    let whole = PrintOptions { limit: None, printable_limit: None, max_bytes: 1 << 20 };
    if !to_clojure_with(v, &whole).1 {
        let _ = ptc_lisp_eval::json::to_json(v);
    }
    let mut h = DefaultHasher::new();
    v.hash(&mut h);
    let _ = h.finish();
    let copy = v.clone();
    let _ = v.equiv(&copy);
    let _ = v.type_name();
}

fn check(source: &str, out: &Outcome, limits: &Limits) {
    if let Some(e) = out.error() {
        assert!(!e.message.starts_with("internal error"), "{source:?}: {}", e.message);
    }
    if out.is_ok() {
        assert!(
            out.usage.heap_bytes <= limits.max_heap_bytes,
            "{source:?} succeeded using {} heap bytes over its limit of {}",
            out.usage.heap_bytes,
            limits.max_heap_bytes
        );
    }
    if let Some(v) = out.value() {
        inspect(v);
    }
    for v in out.memory.iter().map(|(_, v)| v) {
        inspect(v);
    }
}

/// The context every program runs with, built once.
fn context() -> &'static serde_json::Map<String, serde_json::Value> {
    static CTX: OnceLock<serde_json::Map<String, serde_json::Value>> = OnceLock::new();
    CTX.get_or_init(|| {
        let rows = serde_json::json!([{"id": 1, "amount": 2.5}, {"id": 2, "amount": null}]);
        let mut ctx = serde_json::Map::new();
        ctx.insert("rows".into(), rows);
        ctx
    })
}

/// The longest any run may take, whatever its own deadline (a machine shared with builds
/// starves a run now and then; a deadline that is not enforced shows as far more).
const OVERSTAY: Duration = Duration::from_secs(5);

/// Runs `source`, then, when it defined something, a second program over its definitions
/// (the next turn of a session), inspecting everything; drops it all before returning.
fn session(source: &str, scale: Scale) {
    let limits = scale.limits();
    let engine = Engine::new(limits.clone());
    let host = FnHost::new().with_tool("echo", Ok);
    let ctx = context();
    let started = Instant::now();
    let first = engine.eval(source, RunInput::new().with_json_context(ctx), &host, &Cancel::new());
    let took = started.elapsed();
    assert!(took < OVERSTAY, "{source:?} ran {took:?} with a limit of {:?}", limits.timeout);
    if std::env::var_os("PTC_FUZZ_SHOW").is_some() {
        let end = first.error().map_or("ok".to_string(), |e| e.message.lines().next().unwrap_or("").to_string());
        eprintln!("==> {scale:?} scale, {took:?}, fuel {}, heap {}: {end}", first.usage.fuel, first.usage.heap_bytes);
    }
    check(source, &first, &limits);
    if !first.memory.is_empty() {
        let mut names: Vec<String> = first.memory.names().map(|k| k.to_string()).collect();
        names.sort();
        let next = format!("[{}]", names.join(" "));
        let input = RunInput::new().with_json_context(ctx).with_memory(first.memory.clone());
        let started = Instant::now();
        let second = engine.eval(&next, input, &host, &Cancel::new());
        let took = started.elapsed();
        assert!(took < OVERSTAY, "{next:?} after {source:?} ran {took:?} with a limit of {:?}", limits.timeout);
        check(&next, &second, &limits);
        drop(second);
    }
    drop(first);
}

type Reply = std::thread::Result<()>;

/// The thread that runs every input (a tokio worker's stack), started on first use: a
/// thread per input cost as much as a small program.
fn worker() -> &'static Mutex<(Sender<Program>, Receiver<Reply>)> {
    static WORKER: OnceLock<Mutex<(Sender<Program>, Receiver<Reply>)>> = OnceLock::new();
    WORKER.get_or_init(|| {
        let (to_worker, jobs) = channel::<Program>();
        let (replies, from_worker) = channel::<Reply>();
        let spawned = std::thread::Builder::new().name("eval-fuzz".into()).stack_size(STACK).spawn(move || {
            for p in jobs {
                let reply = catch_unwind(AssertUnwindSafe(|| session(&p.0, p.1)));
                if replies.send(reply).is_err() {
                    return;
                }
            }
        });
        if let Err(e) = spawned {
            panic!("cannot start the eval thread: {e}");
        }
        Mutex::new((to_worker, from_worker))
    })
}

fuzz_target!(|p: Program| {
    if std::env::var_os("PTC_FUZZ_SHOW").is_some() {
        eprintln!("==> program:\n{}", p.0);
    }
    let worker = worker().lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let before = LIVE.load(Ordering::Relaxed);
    CEILING.store(before.saturating_add(PEAK_FACTOR * HEAP_LIMIT as usize), Ordering::Relaxed);
    ARMED.store(true, Ordering::Relaxed);
    let reply = worker.0.send(p).ok().and_then(|()| worker.1.recv().ok());
    ARMED.store(false, Ordering::Relaxed);
    match reply {
        Some(Ok(())) => {}
        Some(Err(panic)) => std::panic::resume_unwind(panic),
        None => panic!("the eval thread is gone"),
    }
});
