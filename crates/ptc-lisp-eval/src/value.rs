//! The value model: immutable, cheap to clone, `Send + Sync`, persistent collections.
//!
//! Two notions of sameness live here:
//! - [`Ord`]/[`Eq`]/[`Hash`] are *structural and strict* (`1` and `1.0` differ). They order
//!   map keys and set members, so map and set views come out sorted by key (DIV-38) and
//!   runs are deterministic.
//! - [`Value::equiv`] is PTC-Lisp's `=`: numbers compare by value across int/float
//!   (`(= 1 1.0)` is true, DIV-32), sequential collections element-wise, maps ignore order.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::function::Function;
use crate::lazy::LazySeq;
use crate::meter;
use crate::regex_value::RegexValue;

pub use crate::pvector::{IntoIter as PVectorIntoIter, Iter as PVectorIter, PVector};

/// A PTC-Lisp value.
#[derive(Clone, Default)]
pub enum Value {
    /// `nil`
    #[default]
    Nil,
    /// `true` / `false`
    Bool(bool),
    /// 64-bit integer.
    Int(i64),
    /// IEEE double.
    Float(f64),
    /// String (characters are 1-char strings).
    Str(Arc<str>),
    /// Keyword, stored without the colon.
    Keyword(Arc<str>),
    /// Vector.
    Vector(Arc<PVector>),
    /// List: `(list 1 2)`, `'(1 2)`, `()`. Items are stored front first; `conj` and
    /// `cons` add at the front (cheap: the persistent vector has an O(1) front), and a
    /// list equals, hashes and sorts like the vector of the same items, as in Clojure.
    List(Arc<PVector>),
    /// Map; views are sorted by key.
    Map(Arc<PMap>),
    /// Set; views are sorted.
    Set(Arc<PSet>),
    /// Compiled regular expression.
    Regex(Arc<RegexValue>),
    /// Function: builtin, closure, composed native function or host tool.
    Func(Arc<Function>),
    /// A lazy sequence (`(range)`, `(iterate f x)`, a `map` over one...): pulled item by
    /// item inside a program, realised before it leaves one.
    Lazy(Arc<LazySeq>),
    /// `(reduced x)`: ends a `reduce` or a transduction early with `x`.
    Reduced(Arc<Reduced>),
    /// Var reference `#'name`, the result of `def`.
    Var(Arc<str>),
    /// Quoted symbol `'name`.
    Symbol(Arc<str>),
}

impl Value {
    /// A string value.
    pub fn str(s: impl Into<Arc<str>>) -> Value {
        Value::Str(s.into())
    }
    /// A keyword value (name without colon).
    pub fn kw(s: impl Into<Arc<str>>) -> Value {
        Value::Keyword(s.into())
    }
    /// A vector value.
    pub fn vector(items: impl IntoIterator<Item = Value>) -> Value {
        Value::Vector(Arc::new(items.into_iter().collect()))
    }
    /// A vector from an existing persistent vector.
    pub fn from_pvec(v: PVector) -> Value {
        Value::Vector(Arc::new(v))
    }
    /// A list of `items`, first item first.
    pub fn list(items: impl IntoIterator<Item = Value>) -> Value {
        Value::List(Arc::new(items.into_iter().collect()))
    }
    /// The empty list `()`.
    pub fn empty_list() -> Value {
        Value::List(Arc::new(PVector::new()))
    }
    /// The items of a vector or a list, in order.
    #[inline]
    pub fn as_sequential(&self) -> Option<&Arc<PVector>> {
        match self {
            Value::Vector(v) | Value::List(v) => Some(v),
            _ => None,
        }
    }
    /// A map value from entries (later keys win).
    pub fn map(entries: impl IntoIterator<Item = (Value, Value)>) -> Value {
        Value::Map(Arc::new(PMap::from_entries(entries)))
    }
    /// A set value.
    pub fn set(items: impl IntoIterator<Item = Value>) -> Value {
        Value::Set(Arc::new(PSet::from_items(items)))
    }
    /// An empty map.
    pub fn empty_map() -> Value {
        Value::Map(Arc::new(PMap::new()))
    }

    /// Reads what a lookup in this value will read first — a map's header and the tag of
    /// each of its keys (a small map's entries; a large map's size), a vector's items —
    /// and nothing else, so that the loads, which do not depend on each other, are under
    /// way while other work runs and a later lookup finds the lines in cache. A merge sort
    /// calls it on the items it will compare next (the records of 100k orders are out
    /// of cache in its last passes). Has no effect on any answer.
    #[inline]
    pub(crate) fn warm(&self) {
        let seen = match self {
            Value::Map(m) => m.warm(),
            Value::Vector(v) | Value::List(v) => v.iter().take(4).fold(v.len(), |n, x| n ^ x.warm_tag()),
            _ => 0,
        };
        std::hint::black_box(seen);
    }

    /// The first step of [`Value::warm`]: reads a map's or vector's header only (one
    /// load, where `warm` makes two that depend on each other), for an item compared
    /// two steps from now, whose `warm` then finds the header in cache.
    #[inline]
    pub(crate) fn warm_header(&self) {
        let seen = match self {
            Value::Map(m) => m.len(),
            Value::Vector(v) | Value::List(v) => v.len(),
            _ => 0,
        };
        std::hint::black_box(seen);
    }

    /// A number read from the value's own bytes (its tag and first payload word's low
    /// byte, no pointer followed): what [`Value::warm`] folds so its loads are kept.
    #[inline]
    fn warm_tag(&self) -> usize {
        match self {
            Value::Nil => 1,
            Value::Bool(b) => 2 + usize::from(*b),
            Value::Int(i) => *i as usize,
            Value::Str(s) | Value::Keyword(s) => s.len(),
            _ => 7,
        }
    }

    /// Only `nil` and `false` are falsy.
    #[inline]
    pub fn truthy(&self) -> bool {
        !matches!(self, Value::Nil | Value::Bool(false))
    }

    /// `true` for nil.
    #[inline]
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    /// Name of the value's type as used in error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Nil => "nil",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Float(_) => "float",
            Value::Str(_) => "string",
            Value::Keyword(_) => "keyword",
            Value::Vector(_) => "vector",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Set(_) => "set",
            Value::Regex(_) => "regex",
            Value::Func(_) => "function",
            Value::Lazy(_) => "lazy sequence",
            Value::Reduced(_) => "reduced",
            Value::Var(_) => "var",
            Value::Symbol(_) => "symbol",
        }
    }

    /// The number as f64, if numeric.
    #[inline]
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// The string slice, if a string.
    #[inline]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// PTC-Lisp `=`: numeric equality across int/float, structural for collections.
    pub fn equiv(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Int(a), Value::Float(b)) | (Value::Float(b), Value::Int(a)) => {
                (*a as f64) == *b && b.fract() == 0.0 && (*b as i64) == *a
            }
            (Value::Vector(a) | Value::List(a), Value::Vector(b) | Value::List(b)) => {
                Arc::ptr_eq(a, b)
                    || (a.len() == b.len()
                        && meter::within(|| false, || a.iter().zip(b.iter()).all(|(x, y)| x.equiv(y))))
            }
            (Value::Map(a), Value::Map(b)) => {
                Arc::ptr_eq(a, b)
                    || (a.len() == b.len()
                        && meter::within(
                            || false,
                            || {
                                a.iter().all(|(k, v)| match b.get(k) {
                                    Some(w) => v.equiv(w),
                                    None => false,
                                })
                            },
                        ))
            }
            (Value::Set(a), Value::Set(b)) => {
                Arc::ptr_eq(a, b) || (a.len() == b.len() && meter::within(|| false, || a.iter().all(|x| b.contains(x))))
            }
            (Value::Func(a), Value::Func(b)) => Arc::ptr_eq(a, b),
            (Value::Lazy(a), Value::Lazy(b)) => Arc::ptr_eq(a, b),
            (Value::Reduced(a), Value::Reduced(b)) => Arc::ptr_eq(a, b) || a.value().equiv(b.value()),
            _ => self == other,
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Value::Nil => 0,
            Value::Bool(_) => 1,
            Value::Int(_) | Value::Float(_) => 2,
            Value::Keyword(_) => 3,
            Value::Str(_) => 4,
            Value::Symbol(_) => 5,
            Value::Vector(_) | Value::List(_) => 6,
            Value::Map(_) => 7,
            Value::Set(_) => 8,
            Value::Regex(_) => 9,
            Value::Var(_) => 10,
            Value::Func(_) => 11,
            Value::Lazy(_) => 12,
            Value::Reduced(_) => 13,
        }
    }
}

impl PartialEq for Value {
    /// Strict structural equality (consistent with `Ord`): values of different variants
    /// are never equal, so `1` and `1.0` differ here (PTC `=` is [`Value::equiv`]).
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Nil, Value::Nil) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Str(a), Value::Str(b)) | (Value::Keyword(a), Value::Keyword(b)) => a == b,
            // a list and a vector of the same items are equal (and hash and sort alike)
            (Value::Vector(a) | Value::List(a), Value::Vector(b) | Value::List(b)) => {
                Arc::ptr_eq(a, b) || (a.len() == b.len() && self.cmp(other) == Ordering::Equal)
            }
            _ if std::mem::discriminant(self) != std::mem::discriminant(other) => false,
            _ => self.cmp(other) == Ordering::Equal,
        }
    }
}
impl Eq for Value {}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Value {
    /// A total, deterministic order: type rank first, then value. Numbers compare by value,
    /// an int sorts before an equal float. Used for map keys, sets and sorted views.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        // the common map keys first: string and keyword keys compare as bytes
        match (self, other) {
            (Value::Str(a), Value::Str(b)) | (Value::Keyword(a), Value::Keyword(b)) => {
                return cmp_bytes(a.as_bytes(), b.as_bytes());
            }
            (Value::Int(a), Value::Int(b)) => return a.cmp(b),
            _ => {}
        }
        match (self, other) {
            (Value::Nil, Value::Nil) => Ordering::Equal,
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Float(a), Value::Float(b)) => a.total_cmp(b),
            (Value::Int(a), Value::Float(b)) => (*a as f64).total_cmp(b).then(Ordering::Less),
            (Value::Float(a), Value::Int(b)) => a.total_cmp(&(*b as f64)).then(Ordering::Greater),
            (Value::Str(a), Value::Str(b)) => a.cmp(b),
            (Value::Keyword(a), Value::Keyword(b)) => a.cmp(b),
            (Value::Symbol(a), Value::Symbol(b)) => a.cmp(b),
            (Value::Var(a), Value::Var(b)) => a.cmp(b),
            (Value::Vector(a) | Value::List(a), Value::Vector(b) | Value::List(b)) => {
                if Arc::ptr_eq(a, b) {
                    return Ordering::Equal;
                }
                meter::within(|| Ordering::Equal, || a.iter().cmp(b.iter()))
            }
            (Value::Map(a), Value::Map(b)) => {
                if Arc::ptr_eq(a, b) {
                    return Ordering::Equal;
                }
                a.len().cmp(&b.len()).then_with(|| meter::within(|| Ordering::Equal, || a.iter().cmp(b.iter())))
            }
            (Value::Set(a), Value::Set(b)) => {
                if Arc::ptr_eq(a, b) {
                    return Ordering::Equal;
                }
                a.len().cmp(&b.len()).then_with(|| meter::within(|| Ordering::Equal, || a.iter().cmp(b.iter())))
            }
            (Value::Regex(a), Value::Regex(b)) => a.source().cmp(b.source()),
            (Value::Func(a), Value::Func(b)) => {
                (Arc::as_ptr(a) as *const u8 as usize).cmp(&(Arc::as_ptr(b) as *const u8 as usize))
            }
            (Value::Lazy(a), Value::Lazy(b)) => {
                (Arc::as_ptr(a) as *const u8 as usize).cmp(&(Arc::as_ptr(b) as *const u8 as usize))
            }
            (Value::Reduced(a), Value::Reduced(b)) => a.value().cmp(b.value()),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

/// Byte-wise lexicographic order, as `<[u8]>::cmp`, without a `memcmp` call when the
/// first 8 bytes decide (map keys are mostly short): they are compared as one big-endian
/// number.
#[inline]
pub(crate) fn cmp_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    if n <= 8 {
        // the same number of bytes from both: the zero padding sits at the same places
        let (pa, pb) = (prefix8(a.get(..n).unwrap_or(a)), prefix8(b.get(..n).unwrap_or(b)));
        return pa.cmp(&pb).then(a.len().cmp(&b.len()));
    }
    match prefix8(a).cmp(&prefix8(b)) {
        Ordering::Equal => a.get(8..).cmp(&b.get(8..)),
        o => o,
    }
}

/// The first 8 bytes of `s` as a big-endian number, zero-padded when `s` is shorter: for
/// two strings, a smaller prefix means a smaller string; equal prefixes decide nothing
/// unless the shorter string has at most 8 bytes (then it is a prefix of the other).
#[inline]
pub(crate) fn prefix8(s: &[u8]) -> u64 {
    if let Some(c) = s.first_chunk::<8>() {
        return u64::from_be_bytes(*c);
    }
    let n = s.len();
    if n >= 4 {
        // two overlapping 4-byte reads; the overlap holds the same bytes in both
        let hi = s.first_chunk::<4>().map_or(0, |c| u32::from_be_bytes(*c)) as u64;
        let lo = s.last_chunk::<4>().map_or(0, |c| u32::from_be_bytes(*c)) as u64;
        (hi << 32) | (lo << (8 * (8 - n)))
    } else if n > 0 {
        let byte = |i: usize| s.get(i).copied().unwrap_or(0) as u64;
        (byte(0) << 56) | (byte(n / 2) << (56 - 8 * (n / 2))) | (byte(n - 1) << (56 - 8 * (n - 1)))
    } else {
        0
    }
}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.rank().hash(state);
        match self {
            Value::Nil => {}
            Value::Bool(b) => b.hash(state),
            Value::Int(i) => i.hash(state),
            Value::Float(f) => f.to_bits().hash(state),
            Value::Str(s) | Value::Keyword(s) | Value::Symbol(s) | Value::Var(s) => s.hash(state),
            Value::Vector(v) | Value::List(v) => {
                v.len().hash(state);
                meter::within(|| (), || v.iter().for_each(|x| x.hash(state)));
            }
            Value::Map(m) => {
                m.len().hash(state);
                meter::within(
                    || (),
                    || {
                        for (k, v) in m.iter() {
                            k.hash(state);
                            v.hash(state);
                        }
                    },
                );
            }
            Value::Set(s) => {
                s.len().hash(state);
                meter::within(|| (), || s.iter().for_each(|x| x.hash(state)));
            }
            Value::Regex(r) => r.source().hash(state),
            Value::Func(f) => (Arc::as_ptr(f) as *const u8 as usize).hash(state),
            Value::Lazy(l) => (Arc::as_ptr(l) as *const u8 as usize).hash(state),
            Value::Reduced(r) => r.value().hash(state),
        }
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::printer::to_clojure(self))
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::printer::to_clojure(self))
    }
}

const SMALL_MAP: usize = 16;

/// A persistent map: a sorted small vector up to 16 entries, a B-tree above.
#[derive(Clone, Default)]
pub struct PMap {
    repr: MapRepr,
}

/// Entries of a small map, sorted by key, in an allocation sized to them (JSON records
/// are built with exact capacity).
type SmallEntries = Vec<(Value, Value)>;

#[derive(Clone)]
enum MapRepr {
    Small(SmallEntries),
    Large(imbl::OrdMap<MapKey, Value>),
}

/// A key of a large map with the first 8 bytes of a string or keyword key beside it
/// (`prefix8`), so a B-tree search decides most comparisons without reading the string.
/// Ordered exactly as the keys themselves ([`Value::cmp`]).
#[derive(Clone)]
pub(crate) struct MapKey {
    pre: u64,
    key: Value,
}

impl MapKey {
    fn new(key: Value) -> Self {
        MapKey { pre: key_prefix(&key), key }
    }
}

#[inline]
fn key_prefix(key: &Value) -> u64 {
    match key {
        Value::Str(s) | Value::Keyword(s) => prefix8(s.as_bytes()),
        _ => 0,
    }
}

/// `a == b` for a small map's scan: string and keyword keys of one length compare as
/// the same pointer or, up to 8 bytes, as one number each ([`prefix8`] is exact for
/// strings of one length), without a `memcmp` call for each key passed over.
#[inline]
fn key_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) | (Value::Keyword(x), Value::Keyword(y)) => name_eq(x.as_bytes(), y.as_bytes()),
        _ => a == b,
    }
}

/// Two names' bytes are equal: same length, then the same pointer or (up to 8 bytes)
/// the same [`prefix8`], else `memcmp`.
#[inline]
fn name_eq(x: &[u8], y: &[u8]) -> bool {
    x.len() == y.len() && (std::ptr::eq(x, y) || if x.len() <= 8 { prefix8(x) == prefix8(y) } else { x == y })
}

/// [`Value::cmp`] of two keys with their prefixes.
#[inline]
fn key_cmp(pa: u64, a: &Value, pb: u64, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) | (Value::Keyword(x), Value::Keyword(y)) => match pa.cmp(&pb) {
            Ordering::Equal => {
                let (lx, ly) = (x.len(), y.len());
                if lx.min(ly) <= 8 { lx.cmp(&ly) } else { x.as_bytes().get(8..).cmp(&y.as_bytes().get(8..)) }
            }
            o => o,
        },
        _ => a.cmp(b),
    }
}

impl PartialEq for MapKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for MapKey {}
impl PartialOrd for MapKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for MapKey {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        key_cmp(self.pre, &self.key, other.pre, &other.key)
    }
}

/// A borrowed key to look up in a large map.
struct Probe<'a> {
    pre: u64,
    key: &'a Value,
}

impl<'a> Probe<'a> {
    fn new(key: &'a Value) -> Self {
        Probe { pre: key_prefix(key), key }
    }
}

impl equivalent::Equivalent<MapKey> for Probe<'_> {
    fn equivalent(&self, k: &MapKey) -> bool {
        key_cmp(self.pre, self.key, k.pre, &k.key) == Ordering::Equal
    }
}

impl equivalent::Comparable<MapKey> for Probe<'_> {
    #[inline]
    fn compare(&self, k: &MapKey) -> Ordering {
        key_cmp(self.pre, self.key, k.pre, &k.key)
    }
}

impl Drop for PMap {
    /// Entries are dropped by `release`, so a map nested any depth deep drops on any thread.
    #[inline]
    fn drop(&mut self) {
        crate::release::release(std::mem::take(&mut self.repr));
    }
}

impl Default for MapRepr {
    fn default() -> Self {
        MapRepr::Small(SmallEntries::new())
    }
}

impl PMap {
    /// An empty map.
    pub fn new() -> Self {
        PMap::default()
    }

    /// Builds a map; later duplicates win.
    pub fn from_entries(entries: impl IntoIterator<Item = (Value, Value)>) -> Self {
        let mut m = PMap::new();
        for (k, v) in entries {
            m.insert(k, v);
        }
        m
    }

    /// Builds a map from entries already sorted by key with no duplicates (JSON objects
    /// after sorting); small maps get exactly the room they need.
    pub(crate) fn from_sorted_unique(mut entries: Vec<(Value, Value)>) -> Self {
        if entries.len() <= SMALL_MAP {
            // no copy when the caller sized it exactly (the JSON parser does)
            entries.shrink_to_fit();
            PMap { repr: MapRepr::Small(entries) }
        } else {
            PMap { repr: MapRepr::Large(entries.into_iter().map(|(k, v)| (MapKey::new(k), v)).collect()) }
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        match &self.repr {
            MapRepr::Small(v) => v.len(),
            MapRepr::Large(m) => m.len(),
        }
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Exact-key lookup.
    pub fn get(&self, key: &Value) -> Option<&Value> {
        match &self.repr {
            MapRepr::Small(v) => {
                if v.len() <= 8 {
                    v.iter().find(|(k, _)| key_eq(k, key)).map(|(_, v)| v)
                } else {
                    v.binary_search_by(|(k, _)| k.cmp(key)).ok().map(|i| &v[i].1)
                }
            }
            MapRepr::Large(m) => m.get(&Probe::new(key)),
        }
    }

    /// The value stored under `key` (found as [`PMap::get`] finds it), to change in place
    /// (copy-on-write is the caller's `Arc::make_mut`).
    pub fn get_mut(&mut self, key: &Value) -> Option<&mut Value> {
        match &mut self.repr {
            MapRepr::Small(v) => {
                if v.len() <= 8 {
                    v.iter_mut().find(|(k, _)| key_eq(k, key)).map(|(_, v)| v)
                } else {
                    let i = v.binary_search_by(|(k, _)| k.cmp(key)).ok()?;
                    v.get_mut(i).map(|(_, v)| v)
                }
            }
            MapRepr::Large(m) => m.get_mut(&Probe::new(key)),
        }
    }

    /// The value under `key`, else, for a keyword or string key, under the string or
    /// keyword of the same name (the flexible lookup's first two tries): a small map is
    /// scanned once for both.
    pub(crate) fn get_either_name(&self, key: &Value) -> Option<&Value> {
        let (Value::Keyword(name) | Value::Str(name)) = key else { return self.get(key) };
        let keyword = matches!(key, Value::Keyword(_));
        match &self.repr {
            MapRepr::Small(v) => {
                let want = name.as_bytes();
                let mut other = None;
                for (k, val) in v {
                    let (Value::Keyword(s) | Value::Str(s)) = k else { continue };
                    if name_eq(s.as_bytes(), want) {
                        if matches!(k, Value::Keyword(_)) == keyword {
                            return Some(val);
                        }
                        other = other.or(Some(val));
                    }
                }
                other
            }
            MapRepr::Large(_) => self.get(key).or_else(|| self.get_named(name, !keyword)),
        }
    }

    /// Looks up a string key without allocating a `Value` (keyword or string keys).
    pub fn get_named(&self, name: &str, keyword: bool) -> Option<&Value> {
        match &self.repr {
            MapRepr::Small(v) => v
                .iter()
                .find(|(k, _)| match k {
                    Value::Keyword(s) if keyword => &**s == name,
                    Value::Str(s) if !keyword => &**s == name,
                    _ => false,
                })
                .map(|(_, v)| v),
            MapRepr::Large(m) => {
                let key = if keyword { Value::kw(name) } else { Value::str(name) };
                m.get(&Probe::new(&key))
            }
        }
    }

    /// See [`Value::warm`]: the keys' lengths of a small map (every entry's line), the
    /// size of a large one.
    #[inline]
    fn warm(&self) -> usize {
        match &self.repr {
            MapRepr::Small(v) => v.iter().fold(v.len(), |n, (k, _)| n ^ k.warm_tag()),
            MapRepr::Large(m) => m.len(),
        }
    }

    /// True when the key is present.
    pub fn contains_key(&self, key: &Value) -> bool {
        self.get(key).is_some()
    }

    /// Inserts or replaces in place (copy-on-write is the caller's `Arc::make_mut`).
    pub fn insert(&mut self, key: Value, value: Value) {
        match &mut self.repr {
            MapRepr::Small(v) => match v.binary_search_by(|(k, _)| k.cmp(&key)) {
                Ok(i) => v[i].1 = value,
                Err(i) => {
                    if v.len() < SMALL_MAP {
                        v.insert(i, (key, value));
                    } else {
                        let mut m: imbl::OrdMap<MapKey, Value> =
                            v.drain(..).map(|(k, v)| (MapKey::new(k), v)).collect();
                        m.insert(MapKey::new(key), value);
                        self.repr = MapRepr::Large(m);
                    }
                }
            },
            MapRepr::Large(m) => {
                m.insert(MapKey::new(key), value);
            }
        }
    }

    /// Removes a key in place.
    pub fn remove(&mut self, key: &Value) {
        match &mut self.repr {
            MapRepr::Small(v) => {
                if let Ok(i) = v.binary_search_by(|(k, _)| k.cmp(key)) {
                    v.remove(i);
                }
            }
            MapRepr::Large(m) => {
                m.remove(&Probe::new(key));
            }
        }
    }

    /// Entries in key order.
    pub fn iter(&self) -> MapIter<'_> {
        match &self.repr {
            MapRepr::Small(v) => MapIter(MapIterRepr::Small(v.iter())),
            MapRepr::Large(m) => MapIter(MapIterRepr::Large(m.iter())),
        }
    }

    /// Keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &Value> {
        self.iter().map(|(k, _)| k)
    }

    /// Values in key order.
    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.iter().map(|(_, v)| v)
    }
}

/// Iterator over map entries in key order.
pub struct MapIter<'a>(MapIterRepr<'a>);

/// The iterator of each map representation (kept private: the B-tree is `imbl`'s).
enum MapIterRepr<'a> {
    Small(std::slice::Iter<'a, (Value, Value)>),
    Large(imbl::ordmap::Iter<'a, MapKey, Value, imbl::shared_ptr::DefaultSharedPtr>),
}

impl<'a> Iterator for MapIter<'a> {
    type Item = (&'a Value, &'a Value);
    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            MapIterRepr::Small(it) => it.next().map(|(k, v)| (k, v)),
            MapIterRepr::Large(it) => it.next().map(|(k, v)| (&k.key, v)),
        }
    }
}

/// The value inside `(reduced x)`: what ends a `reduce` or a transduction early.
pub struct Reduced(Value);

impl Reduced {
    /// Wraps `x`.
    pub fn new(x: Value) -> Reduced {
        Reduced(x)
    }

    /// The value it carries.
    pub fn value(&self) -> &Value {
        &self.0
    }
}

impl Drop for Reduced {
    /// The value is dropped by `release`, so `(reduced (reduced ...))` any depth deep drops
    /// on any thread.
    fn drop(&mut self) {
        crate::release::release(std::mem::take(&mut self.0));
    }
}

/// Adds items to a set one at a time. A B-tree insert of an item the set has already
/// costs about what inserting a new one does, so items also go through a hash set,
/// where a repeat costs one lookup (`(set (map :customer orders))`: four times faster).
/// Hashing a new item too makes it cost twice as much, so hashing starts only after
/// [`SetBuilder::UNHASHED`] items (a small set never allocates a hash set), and once more
/// than [`SetBuilder::HASHED`] distinct items were hashed with fewer than one in eight
/// repeating, the hash set is dropped and the items go straight to the tree. The hash set
/// only saves work: the tree's `insert` keeps the member it has either way.
pub(crate) struct SetBuilder {
    set: PSet,
    seen: Option<std::collections::HashSet<Value, foldhash::fast::FixedState>>,
    pushed: usize,
    repeats: usize,
}

impl SetBuilder {
    /// Items inserted before hashing starts.
    const UNHASHED: usize = 32;
    /// Distinct items hashed before deciding whether hashing pays.
    const HASHED: usize = 8192;

    pub(crate) fn new(set: PSet) -> Self {
        SetBuilder { set, seen: None, pushed: 0, repeats: 0 }
    }

    #[inline]
    pub(crate) fn push(&mut self, x: Value) {
        self.pushed += 1;
        if self.pushed == Self::UNHASHED {
            self.seen = Some(Default::default());
        }
        match &mut self.seen {
            None => self.set.insert(x),
            Some(seen) => {
                if seen.contains(&x) {
                    self.repeats += 1;
                } else {
                    seen.insert(x.clone());
                    self.set.insert(x);
                    if seen.len() > Self::HASHED && self.repeats * 8 < self.pushed {
                        self.seen = None;
                    }
                }
            }
        }
    }

    pub(crate) fn finish(self) -> PSet {
        self.set
    }
}

/// A persistent set, sorted.
#[derive(Clone, Default)]
pub struct PSet {
    items: imbl::OrdSet<Value>,
}

impl Drop for PSet {
    /// Members are dropped by `release`, so a set nested any depth deep drops on any thread.
    #[inline]
    fn drop(&mut self) {
        crate::release::release(std::mem::take(&mut self.items));
    }
}

impl PSet {
    /// Empty set.
    pub fn new() -> Self {
        PSet::default()
    }
    /// Builds a set from items. Of equal items the first is kept, as `conj` keeps a
    /// member it already has (a vector and a list of the same items are equal).
    pub fn from_items(items: impl IntoIterator<Item = Value>) -> Self {
        let mut s = PSet::new();
        s.extend(items);
        s
    }

    /// Adds the items the set does not have yet (of equal items, the member or the first
    /// item stays); see [`SetBuilder`].
    pub(crate) fn extend(&mut self, items: impl IntoIterator<Item = Value>) {
        let mut b = SetBuilder::new(std::mem::take(self));
        for x in items {
            b.push(x);
        }
        *self = b.finish();
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.items.len()
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    /// Membership.
    pub fn contains(&self, v: &Value) -> bool {
        self.items.contains(v)
    }
    /// Adds in place; a member equal to `v` stays (only a collection can be equal to a
    /// value it does not print like: a vector and a list of the same items).
    pub fn insert(&mut self, v: Value) {
        if let Some(old) = self.items.insert(v)
            && matches!(old, Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_))
        {
            // put the member back over its equal newcomer
            self.items.insert(old);
        }
    }
    /// Removes in place.
    pub fn remove(&mut self, v: &Value) {
        self.items.remove(v);
    }
    /// Members in order.
    pub fn iter(&self) -> impl Iterator<Item = &Value> {
        self.items.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Strings that share long prefixes and differ near chunk boundaries.
    fn near_strings() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        (proptest::collection::vec(0u8..4, 0..40), proptest::collection::vec(0u8..4, 0..6), 0usize..40).prop_map(
            |(base, tail, cut)| {
                let mut b = base.clone();
                b.truncate(cut.min(base.len()));
                b.extend(tail);
                (base, b)
            },
        )
    }

    /// Map keys of mixed kinds: strings and keywords (short, long, sharing prefixes, with
    /// zero bytes), numbers, nil.
    fn key() -> impl Strategy<Value = Value> {
        prop_oneof![
            "[ab\\x00]{0,12}".prop_map(|s| Value::str(s.as_str())),
            "k[0-9]{0,10}".prop_map(|s| Value::str(s.as_str())),
            "[ab\\x00]{0,12}".prop_map(|s| Value::kw(s.as_str())),
            (-5i64..5).prop_map(Value::Int),
            (-5i64..5).prop_map(|i| Value::Float(i as f64)),
            Just(Value::Nil),
        ]
    }

    #[test]
    fn prefix8_pads_with_zeros() {
        for n in 0..=10usize {
            let s: Vec<u8> = (1..=n as u8).collect();
            let mut padded = [0u8; 8];
            for (d, b) in padded.iter_mut().zip(&s) {
                *d = *b;
            }
            assert_eq!(prefix8(&s), u64::from_be_bytes(padded), "length {n}");
        }
    }

    /// Set members: keys, and vectors or lists of small numbers (equal when their items
    /// are, printed apart).
    fn member() -> impl Strategy<Value = Value> {
        prop_oneof![
            key(),
            proptest::collection::vec(0i64..3, 0..3).prop_map(|xs| Value::vector(xs.into_iter().map(Value::Int))),
            proptest::collection::vec(0i64..3, 0..3).prop_map(|xs| Value::list(xs.into_iter().map(Value::Int))),
        ]
    }

    /// Past the hashed items (the hash set dropped) and within them, a set keeps the
    /// first of equal items and every distinct one.
    #[test]
    fn set_builders_keep_the_first_of_equal_items_past_the_hashed_ones() {
        let pair = |list: bool| {
            let items = [Value::Int(1), Value::Int(2)];
            if list { Value::list(items) } else { Value::vector(items) }
        };
        for distinct in [10usize, SetBuilder::HASHED + 100] {
            let mut items: Vec<Value> = (0..distinct as i64).map(Value::Int).collect();
            items.extend([pair(false), pair(true)]);
            items.extend((0..distinct as i64).rev().map(Value::Int));
            items.push(pair(true));
            let s = PSet::from_items(items);
            assert_eq!(s.len(), distinct + 1);
            let shown: Vec<String> = s.iter().filter(|x| !matches!(x, Value::Int(_))).map(|x| x.to_string()).collect();
            assert_eq!(shown, ["[1 2]"]);
            let mut s = s;
            s.extend([pair(true), Value::Int(-1)]);
            assert_eq!(s.len(), distinct + 2);
            assert!(s.iter().any(|x| x.to_string() == "[1 2]"));
        }
    }

    proptest! {
        /// Built from items (sorted or not), a set is the one inserting the items one by one
        /// gives, keeping the first of equal items: same members, printed alike.
        #[test]
        fn bulk_sets_keep_the_first_of_equal_items(
            base in proptest::collection::vec(member(), 0..20),
            items in proptest::collection::vec(member(), 0..60),
            sorted in any::<bool>(),
        ) {
            let mut items = items;
            if sorted {
                items.sort();
            }
            // std's `insert` keeps the member it has when an equal one comes (its
            // `collect` would keep the last)
            let mut want = std::collections::BTreeSet::new();
            for x in base.iter().chain(items.iter()) {
                want.insert(x.clone());
            }
            let mut got = PSet::from_items(base.iter().cloned());
            got.extend(items.iter().cloned());
            let show = |xs: Vec<&Value>| xs.iter().map(|x| crate::printer::to_clojure(x)).collect::<Vec<_>>();
            prop_assert_eq!(show(got.iter().collect()), show(want.iter().collect()));
        }

        #[test]
        fn cmp_bytes_agrees_with_slice_cmp((a, b) in near_strings()) {
            prop_assert_eq!(cmp_bytes(&a, &b), a.cmp(&b));
            prop_assert_eq!(cmp_bytes(&b, &a), b.cmp(&a));
            prop_assert_eq!(cmp_bytes(&a, &a), Ordering::Equal);
        }

        #[test]
        fn cmp_bytes_agrees_on_any_bytes(a in proptest::collection::vec(any::<u8>(), 0..48),
                                         b in proptest::collection::vec(any::<u8>(), 0..48)) {
            prop_assert_eq!(cmp_bytes(&a, &b), a.cmp(&b));
        }

        #[test]
        fn small_map_key_eq_agrees_with_eq(a in key(), b in key()) {
            prop_assert_eq!(key_eq(&a, &b), a == b);
            prop_assert_eq!(key_eq(&b, &a), b == a);
            prop_assert!(key_eq(&a, &a.clone()));
        }

        #[test]
        fn small_map_key_eq_on_any_bytes_of_one_length(a in proptest::collection::vec(any::<u8>(), 0..20),
                                                       flip in any::<prop::sample::Index>()) {
            // two strings of one length that differ in one byte (or are equal when empty)
            let mut b = a.clone();
            if !b.is_empty() {
                let i = flip.index(b.len());
                b[i] = b[i].wrapping_add(1);
            }
            let (x, y) = (String::from_utf8_lossy(&a).into_owned(), String::from_utf8_lossy(&b).into_owned());
            prop_assert_eq!(key_eq(&Value::kw(x.as_str()), &Value::kw(y.as_str())), x == y);
        }

        #[test]
        fn map_keys_order_as_values(a in key(), b in key()) {
            let (ka, kb) = (MapKey::new(a.clone()), MapKey::new(b.clone()));
            prop_assert_eq!(ka.cmp(&kb), a.cmp(&b));
            let probe = Probe::new(&a);
            prop_assert_eq!(equivalent::Comparable::compare(&probe, &kb), a.cmp(&b));
        }

        #[test]
        fn large_maps_agree_with_btreemap(ops in proptest::collection::vec((0u8..3, key(), any::<i64>()), 0..120)) {
            let mut m = PMap::new();
            let mut model = std::collections::BTreeMap::new();
            for (op, k, v) in ops {
                if op == 2 {
                    m.remove(&k);
                    model.remove(&k);
                } else {
                    m.insert(k.clone(), Value::Int(v));
                    model.insert(k.clone(), Value::Int(v));
                }
                prop_assert_eq!(m.get(&k), model.get(&k));
                prop_assert_eq!(m.len(), model.len());
            }
            let got: Vec<(Value, Value)> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            let want: Vec<(Value, Value)> = model.into_iter().collect();
            prop_assert_eq!(got, want);
        }

        #[test]
        fn string_values_order_as_str(a in "[a-c\\x00\u{e9}]{0,20}", b in "[a-c\\x00\u{e9}]{0,20}") {
            prop_assert_eq!(Value::str(a.as_str()).cmp(&Value::str(b.as_str())), a.cmp(&b));
            prop_assert_eq!(Value::kw(a.as_str()).cmp(&Value::kw(b.as_str())), a.cmp(&b));
        }
    }
}
