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
//! `PTC_FUZZ_SHOW=1` prints each program before it runs (to see what a saved input is).
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
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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

/// A program, as text.
#[derive(Debug)]
struct Program(String);

const SPECIAL: &[&str] = &["if", "when", "let", "fn", "do", "and", "or", "->>", "->", "loop", "for", "doseq", "cond"];

/// Sizes, weighted towards the ones that matter: empty, small, and past every limit.
const SIZES: &[u32] = &[0, 1, 2, 3, 10, 100, 1_000, 5_000, 20_000, 100_000, 1_000_000, 3_000];

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

fn size(u: &mut Unstructured) -> arbitrary::Result<String> {
    Ok(u.choose(SIZES)?.to_string())
}

/// One of the builder templates with its holes filled: `%N` by a size, `v` and `s` by
/// generated expressions (bound with `let`, so each is evaluated once and shared).
fn template(
    u: &mut Unstructured,
    names: &[&'static str],
    depth: u32,
    table: &[&str],
    out: &mut String,
) -> arbitrary::Result<()> {
    let t = u.choose(table)?;
    let n = size(u)?;
    out.push_str("(let [v ");
    if depth > 5 || bool::arbitrary(u)? {
        out.push_str(&u.choose(DEEP)?.replace("%N", &size(u)?));
    } else {
        expr(u, names, depth + 1, out)?;
    }
    out.push_str(" s ");
    if bool::arbitrary(u)? {
        out.push_str(&format!("(.repeat \"x\" {})", size(u)?));
    } else {
        expr(u, names, depth + 1, out)?;
    }
    out.push_str("] ");
    out.push_str(&t.replace("%N", &n));
    out.push(')');
    Ok(())
}

fn expr(u: &mut Unstructured, names: &[&'static str], depth: u32, out: &mut String) -> arbitrary::Result<()> {
    let pick = if depth > 6 { u.int_in_range(0..=5)? } else { u.int_in_range(0..=21)? };
    match pick {
        0 => out.push_str(&i64::arbitrary(u)?.to_string()),
        1 => out.push_str(&format!("{:?}", f64::arbitrary(u)?).replace("inf", "1e308").replace("NaN", "0.5")),
        2 => out.push_str(&format!("{:?}", String::arbitrary(u)?.chars().take(12).collect::<String>())),
        3 => out.push_str(&format!(":k{}", u.int_in_range(0..=5)?)),
        4 => {
            out.push_str(["nil", "true", "false", "x", "xs", "m", "data/rows", "%", "d0", "d1"][u.int_in_range(0..=9)?])
        }
        5 => out.push_str(&format!("(range {})", u.int_in_range(0..=40)?)),
        6 | 7 => {
            let open = ["[", "{", "#{"][u.int_in_range(0..=2)?];
            out.push_str(open);
            for _ in 0..u.int_in_range(0..=4)? {
                expr(u, names, depth + 1, out)?;
                out.push(' ');
            }
            out.push_str(if open == "[" { "]" } else { "}" });
        }
        8..=10 => {
            out.push('(');
            out.push_str(u.choose(names)?);
            for _ in 0..u.int_in_range(0..=3)? {
                out.push(' ');
                expr(u, names, depth + 1, out)?;
            }
            out.push(')');
        }
        11 => {
            out.push_str("(let [x ");
            expr(u, names, depth + 1, out)?;
            out.push_str(" xs [1 2 3] m {:a 1 \"b\" 2}] ");
            expr(u, names, depth + 1, out)?;
            out.push(')');
        }
        12 => {
            out.push_str("(map (fn [x] ");
            expr(u, names, depth + 1, out)?;
            out.push_str(") ");
            expr(u, names, depth + 1, out)?;
            out.push(')');
        }
        13 => out.push_str(&u.choose(DEEP)?.replace("%N", &size(u)?)),
        14 => {
            let n = size(u)?;
            out.push_str(&u.choose(WIDE)?.replace("%N", &n));
        }
        15 => template(u, names, depth, STRINGS, out)?,
        16 | 17 => template(u, names, depth, CAPTURE, out)?,
        18 => template(u, names, depth, WALK, out)?,
        19 => {
            // two equal values built apart: compared, they share no structure
            let n = size(u)?;
            let w = u.choose(WIDE)?.replace("%N", &n);
            out.push_str(&format!("(let [a {w} b {w}] (= [a a a] [b b b]))"));
        }
        _ => {
            out.push('(');
            out.push_str(u.choose(SPECIAL)?);
            for _ in 0..u.int_in_range(1..=3)? {
                out.push(' ');
                expr(u, names, depth + 1, out)?;
            }
            out.push(')');
        }
    }
    Ok(())
}

impl<'a> Arbitrary<'a> for Program {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        if u.peek_bytes(1) == Some(b";") {
            let text = String::from_utf8_lossy(u.bytes(u.len())?).into_owned();
            return Ok(Program(text));
        }
        let names: Vec<&'static str> = ptc_lisp_eval::registry::all().map(|b| b.name).collect();
        let mut out = String::new();
        for i in 0..u.int_in_range(1..=3)? {
            match u.int_in_range(0..=3)? {
                0 => out.push_str(&format!("(def d{i} ")),
                1 => out.push_str(&format!("(defn d{i} [x] ")),
                _ => out.push('('),
            }
            if !out.ends_with(' ') {
                out.push_str("do ");
            }
            expr(u, &names, 0, &mut out)?;
            out.push_str(")\n");
        }
        Ok(Program(out))
    }
}

fn limits() -> Limits {
    Limits {
        timeout: Duration::from_secs(1),
        max_heap_bytes: HEAP_LIMIT,
        max_loop_iterations: 10_000,
        max_result_bytes: 64 * 1024,
        max_print_bytes: 64 * 1024,
        ..Limits::default()
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

/// Runs `source`, then a second program over its definitions (the next turn of a
/// session), inspecting everything; drops it all before returning.
fn session(source: &str) {
    let limits = limits();
    let engine = Engine::new(limits.clone());
    let host = FnHost::new().with_tool("echo", Ok);
    let ctx = serde_json::json!({"rows": [{"id": 1, "amount": 2.5}, {"id": 2, "amount": null}]});
    let Some(ctx) = ctx.as_object() else { return };
    let started = Instant::now();
    let first = engine.eval(source, RunInput::new().with_json_context(ctx), &host, &Cancel::new());
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "{source:?} ran {took:?} with a 1 s limit");
    check(source, &first, &limits);
    let mut names: Vec<String> = first.memory.names().map(|k| k.to_string()).collect();
    names.sort();
    let next = format!("[{}]", names.join(" "));
    let input = RunInput::new().with_json_context(ctx).with_memory(first.memory.clone());
    let started = Instant::now();
    let second = engine.eval(&next, input, &host, &Cancel::new());
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "{next:?} after {source:?} ran {took:?} with a 1 s limit");
    check(&next, &second, &limits);
    drop(second);
    drop(first);
}

fuzz_target!(|p: Program| {
    let before = LIVE.load(Ordering::Relaxed);
    CEILING.store(before.saturating_add(PEAK_FACTOR * HEAP_LIMIT as usize), Ordering::Relaxed);
    ARMED.store(true, Ordering::Relaxed);
    let source = p.0;
    if std::env::var_os("PTC_FUZZ_SHOW").is_some() {
        eprintln!("==> program:\n{source}");
    }
    let worker = std::thread::Builder::new().name("eval-fuzz".into()).stack_size(STACK).spawn(move || session(&source));
    let joined = worker.map(std::thread::JoinHandle::join);
    ARMED.store(false, Ordering::Relaxed);
    match joined {
        Ok(Ok(())) => {}
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(e) => panic!("cannot start the eval thread: {e}"),
    }
});
