//! A hand-written JSON text parser that builds values directly.
//!
//! It accepts exactly what `serde_json::from_str` accepts (same recursion limit, same
//! number rules, same error messages with the same line/column) and charges the
//! [`ParseBudget`] the same amounts at the same points as the serde visitor it replaced,
//! so memory and time limits fire exactly as before.
//!
//! Speed comes from building values in one pass over the bytes: strings without escapes
//! are sliced straight from the input, integers are parsed by hand, and object keys are
//! recognised without hashing by a per-depth *shape cache*: an array of records repeats
//! the same keys in the same order, so each key is compared with the key at the same
//! position of the previous object at that depth (a hit clones its `Arc<str>`), and an
//! object whose keys all hit reuses the previous object's sorted order, so it is built
//! without sorting. Short string values are shared through a small cache per key
//! position before falling back to the hash interner.

use std::sync::Arc;

use super::{Interner, ParseBudget, ParseError};
use crate::limits::cost;
use crate::value::{PMap, PVector, Value};

/// serde_json's recursion limit: the 128th nested array/object is an error.
const MAX_DEPTH: usize = 128;

/// Strings up to this many bytes are interned (shared), as before.
const INTERN_MAX: usize = 24;

/// Remembered short string values per key position.
const VALUE_WAYS: usize = 4;

/// serde_json's error kinds (same texts).
#[derive(Debug, Clone, Copy)]
enum Code {
    EofWhileParsingList,
    EofWhileParsingObject,
    EofWhileParsingString,
    EofWhileParsingValue,
    ExpectedColon,
    ExpectedListCommaOrEnd,
    ExpectedObjectCommaOrEnd,
    ExpectedSomeIdent,
    ExpectedSomeValue,
    InvalidEscape,
    InvalidNumber,
    NumberOutOfRange,
    InvalidUnicodeCodePoint,
    KeyMustBeAString,
    LoneLeadingSurrogateInHexEscape,
    TrailingComma,
    TrailingCharacters,
    UnexpectedEndOfHexEscape,
    RecursionLimitExceeded,
    ControlCharacterWhileParsingString,
}

impl Code {
    fn text(self) -> &'static str {
        match self {
            Code::EofWhileParsingList => "EOF while parsing a list",
            Code::EofWhileParsingObject => "EOF while parsing an object",
            Code::EofWhileParsingString => "EOF while parsing a string",
            Code::EofWhileParsingValue => "EOF while parsing a value",
            Code::ExpectedColon => "expected `:`",
            Code::ExpectedListCommaOrEnd => "expected `,` or `]`",
            Code::ExpectedObjectCommaOrEnd => "expected `,` or `}`",
            Code::ExpectedSomeIdent => "expected ident",
            Code::ExpectedSomeValue => "expected value",
            Code::InvalidEscape => "invalid escape",
            Code::InvalidNumber => "invalid number",
            Code::NumberOutOfRange => "number out of range",
            Code::InvalidUnicodeCodePoint => "invalid unicode code point",
            Code::KeyMustBeAString => "key must be a string",
            Code::LoneLeadingSurrogateInHexEscape => "lone leading surrogate in hex escape",
            Code::TrailingComma => "trailing comma",
            Code::TrailingCharacters => "trailing characters",
            Code::UnexpectedEndOfHexEscape => "unexpected end of hex escape",
            Code::RecursionLimitExceeded => "recursion limit exceeded",
            Code::ControlCharacterWhileParsingString => {
                "control character (\\u0000-\\u001F) found while parsing a string"
            }
        }
    }
}

/// Why parsing stopped: a syntax error at a byte index (serde_json's position rules), or
/// the budget (the reason is in `ParseBudget::failure`).
enum Fail {
    Syntax(Code, usize),
    Budget,
}

type R<T> = Result<T, Fail>;

/// A cache for one place in the document's structure: the root, a key position of an
/// object, or the items of an array. Records at the same place tend to repeat their
/// keys, key order and short string values.
#[derive(Default)]
struct Node {
    /// The keys of the object most recently built here, in input order.
    keys: Vec<Arc<str>>,
    /// `keys` in sorted order (indices into `keys`), valid when `sorted_ok`.
    sorted: Vec<u32>,
    /// `keys` were distinct and `sorted` is their order.
    sorted_ok: bool,
    /// For each key position, the node of its values (0: none yet).
    kids: Vec<u32>,
    /// The node of this array's items (0: none yet).
    items: u32,
    /// The last few short strings seen here.
    strs: [Option<Arc<str>>; VALUE_WAYS],
}

/// At most this many nodes; deeper structure shares one node per depth.
const MAX_NODES: usize = 4096;

/// Where a parsed string's text is.
#[derive(Clone, Copy)]
enum Text {
    /// `text[a..b]`: no escapes.
    Slice(usize, usize),
    /// In the scratch buffer (it had escapes).
    Scratch,
}

struct Parser<'t, 'p, 'b> {
    text: &'t str,
    bytes: &'t [u8],
    pos: usize,
    pb: &'p mut ParseBudget<'b>,
    interner: Interner,
    /// Node 0 is the root value's.
    nodes: Vec<Node>,
    /// Per depth, the shared node used once `nodes` is full (0: none yet).
    fallback: Vec<u32>,
    /// Per depth, a reusable buffer for the values of the open array or object.
    bufs: Vec<Vec<Value>>,
    scratch: String,
}

/// Parses a whole JSON document (surrounding whitespace allowed).
pub(super) fn parse(text: &str, pb: &mut ParseBudget<'_>) -> Result<Value, ParseError> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        pb,
        interner: Interner::default(),
        nodes: vec![Node::default()],
        fallback: Vec::new(),
        bufs: Vec::new(),
        scratch: String::new(),
    };
    let parsed = p.document();
    match (parsed, p.pb.failure.take()) {
        (_, Some(f)) => Err(f),
        (Ok(v), None) => Ok(v),
        (Err(Fail::Syntax(code, at)), None) => {
            let (line, column) = position(p.bytes, at);
            Err(ParseError::Syntax(format!("{} at line {line} column {column}", code.text())))
        }
        (Err(Fail::Budget), None) => Err(ParseError::TooLarge),
    }
}

/// serde_json's line and column of byte index `i`.
#[cold]
fn position(bytes: &[u8], i: usize) -> (usize, usize) {
    let head = bytes.get(..i).unwrap_or(bytes);
    let start_of_line = head.iter().rposition(|&c| c == b'\n').map_or(0, |p| p + 1);
    let line = 1 + head.iter().take(start_of_line).filter(|&&c| c == b'\n').count();
    (line, i - start_of_line)
}

/// Byte equality for short strings without a call to `memcmp` (keys and short values are
/// compared once per member; most are a few bytes long): two overlapping word loads.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    fn w8(x: &[u8], at: usize) -> Option<[u8; 8]> {
        x.get(at..at + 8).and_then(|s| s.try_into().ok())
    }
    fn w4(x: &[u8], at: usize) -> Option<[u8; 4]> {
        x.get(at..at + 4).and_then(|s| s.try_into().ok())
    }
    match n {
        0 => true,
        1..=3 => a.first() == b.first() && a.get(n / 2) == b.get(n / 2) && a.last() == b.last(),
        4..=8 => w4(a, 0) == w4(b, 0) && w4(a, n - 4) == w4(b, n - 4),
        9..=16 => w8(a, 0) == w8(b, 0) && w8(a, n - 8) == w8(b, n - 8),
        _ => a == b,
    }
}

#[inline]
fn is_digit(c: u8) -> bool {
    c.is_ascii_digit()
}

/// Exact powers of ten (the fast path for short decimals).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
    1e21, 1e22,
];

impl Parser<'_, '_, '_> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Error at the current index (serde_json's `error`: after a consumed byte).
    #[cold]
    fn err<T>(&self, code: Code) -> R<T> {
        Err(Fail::Syntax(code, self.pos))
    }

    /// Error at the peeked byte (serde_json's `peek_error`).
    #[cold]
    fn peek_err<T>(&self, code: Code) -> R<T> {
        Err(Fail::Syntax(code, (self.pos + 1).min(self.bytes.len())))
    }

    #[inline]
    fn take(&mut self, bytes: u64) -> R<()> {
        if self.pb.take(bytes) { Ok(()) } else { Err(Fail::Budget) }
    }

    /// Skips whitespace and returns the next byte (not consumed).
    #[inline]
    fn skip_ws(&mut self) -> Option<u8> {
        while let Some(&c) = self.bytes.get(self.pos) {
            if c == b' ' || c == b'\n' || c == b'\t' || c == b'\r' {
                self.pos += 1;
            } else {
                return Some(c);
            }
        }
        None
    }

    fn document(&mut self) -> R<Value> {
        let v = self.value(0, 0)?;
        match self.skip_ws() {
            Some(_) => self.peek_err(Code::TrailingCharacters),
            None => Ok(v),
        }
    }

    /// One value at cache `node`, inside `depth` open arrays/objects.
    fn value(&mut self, depth: usize, node: usize) -> R<Value> {
        let Some(c) = self.skip_ws() else {
            return self.peek_err(Code::EofWhileParsingValue);
        };
        match c {
            b'"' => {
                self.pos += 1;
                let t = self.string()?;
                self.string_value(node, t)
            }
            b'{' => self.object(depth, node),
            b'[' => self.array(depth, node),
            b'-' | b'0'..=b'9' => {
                let v = self.number()?;
                self.take(cost::ELEM)?;
                Ok(v)
            }
            b'n' => {
                self.pos += 1;
                self.ident(b"ull")?;
                self.take(cost::ELEM)?;
                Ok(Value::Nil)
            }
            b't' => {
                self.pos += 1;
                self.ident(b"rue")?;
                self.take(cost::ELEM)?;
                Ok(Value::Bool(true))
            }
            b'f' => {
                self.pos += 1;
                self.ident(b"alse")?;
                self.take(cost::ELEM)?;
                Ok(Value::Bool(false))
            }
            _ => self.peek_err(Code::ExpectedSomeValue),
        }
    }

    /// A string value: charged, and when short, shared through the node's recent strings
    /// or the interner.
    #[inline]
    fn string_value(&mut self, node: usize, t: Text) -> R<Value> {
        let text: &str = match t {
            Text::Slice(a, b) => self.text.get(a..b).unwrap_or(""),
            Text::Scratch => self.scratch.as_str(),
        };
        if !self.pb.take(cost::ELEM + text.len() as u64) {
            return Err(Fail::Budget);
        }
        if text.len() > INTERN_MAX {
            return Ok(Value::Str(Arc::from(text)));
        }
        let Some(n) = self.nodes.get_mut(node) else {
            return Ok(Value::Str(self.interner.get(text)));
        };
        for a in n.strs.iter().flatten() {
            if same_bytes(a.as_bytes(), text.as_bytes()) {
                return Ok(Value::Str(a.clone()));
            }
        }
        let a = self.interner.get(text);
        n.strs.rotate_right(1);
        n.strs[0] = Some(a.clone());
        Ok(Value::Str(a))
    }

    /// The node for the values at key position `pos` of the object at `parent` (or for
    /// the items of the array at `parent` when `pos` is `None`), at `depth`.
    #[inline]
    fn kid(&mut self, parent: usize, pos: Option<usize>, depth: usize) -> usize {
        let count = self.nodes.len();
        let Some(p) = self.nodes.get_mut(parent) else { return 0 };
        let link = match pos {
            None => &mut p.items,
            Some(i) => {
                if p.kids.len() <= i {
                    p.kids.resize(i + 1, 0);
                }
                match p.kids.get_mut(i) {
                    Some(l) => l,
                    None => return 0,
                }
            }
        };
        if *link != 0 {
            return *link as usize;
        }
        if count < MAX_NODES {
            *link = count as u32;
            self.nodes.push(Node::default());
            return count;
        }
        // full: one shared node per depth
        if self.fallback.len() <= depth {
            self.fallback.resize(depth + 1, 0);
        }
        match self.fallback.get_mut(depth) {
            Some(f) if *f != 0 => *f as usize,
            Some(f) => {
                *f = self.nodes.len() as u32;
                self.nodes.push(Node::default());
                *f as usize
            }
            None => 0,
        }
    }

    fn ident(&mut self, rest: &[u8]) -> R<()> {
        for &expected in rest {
            match self.peek() {
                None => return self.err(Code::EofWhileParsingValue),
                Some(c) => {
                    self.pos += 1;
                    if c != expected {
                        return self.err(Code::ExpectedSomeIdent);
                    }
                }
            }
        }
        Ok(())
    }

    /// The body of a string (the opening quote consumed), through the closing quote.
    #[inline]
    fn string(&mut self) -> R<Text> {
        let start = self.pos;
        self.skip_plain();
        match self.peek() {
            Some(b'"') => {
                self.pos += 1;
                Ok(Text::Slice(start, self.pos - 1))
            }
            _ => self.string_slow(start),
        }
    }

    /// Advances to the next `"`, `\` or control character (or the end).
    #[inline]
    fn skip_plain(&mut self) {
        const ONES: u64 = u64::MAX / 255;
        const HIGHS: u64 = ONES << 7;
        let rest = self.bytes.get(self.pos..).unwrap_or(&[]);
        let mut chunks = rest.chunks_exact(8);
        for chunk in chunks.by_ref() {
            let Ok(arr) = <[u8; 8]>::try_from(chunk) else { break };
            let x = u64::from_le_bytes(arr);
            let ctrl = x.wrapping_sub(ONES * 0x20) & !x;
            let q = x ^ (ONES * u64::from(b'"'));
            let quote = q.wrapping_sub(ONES) & !q;
            let bs = x ^ (ONES * u64::from(b'\\'));
            let backslash = bs.wrapping_sub(ONES) & !bs;
            let hit = (ctrl | quote | backslash) & HIGHS;
            if hit != 0 {
                self.pos += (hit.trailing_zeros() / 8) as usize;
                return;
            }
            self.pos += 8;
        }
        while let Some(&c) = self.bytes.get(self.pos) {
            if c == b'"' || c == b'\\' || c < 0x20 {
                return;
            }
            self.pos += 1;
        }
    }

    /// A string with escapes (or an error): its text goes to the scratch buffer.
    #[cold]
    fn string_slow(&mut self, start: usize) -> R<Text> {
        self.scratch.clear();
        let mut from = start;
        loop {
            match self.peek() {
                None => return self.err(Code::EofWhileParsingString),
                Some(b'"') => {
                    self.scratch.push_str(self.text.get(from..self.pos).unwrap_or(""));
                    self.pos += 1;
                    return Ok(Text::Scratch);
                }
                Some(b'\\') => {
                    self.scratch.push_str(self.text.get(from..self.pos).unwrap_or(""));
                    self.pos += 1;
                    self.escape()?;
                    from = self.pos;
                }
                Some(_) => {
                    self.pos += 1;
                    return self.err(Code::ControlCharacterWhileParsingString);
                }
            }
            self.skip_plain();
        }
    }

    /// One escape (the backslash consumed), appended to the scratch buffer.
    fn escape(&mut self) -> R<()> {
        let Some(c) = self.peek() else {
            return self.err(Code::EofWhileParsingString);
        };
        self.pos += 1;
        let ch = match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => return self.unicode_escape(),
            _ => return self.err(Code::InvalidEscape),
        };
        self.scratch.push(ch);
        Ok(())
    }

    fn hex4(&mut self) -> R<u16> {
        let Some(&[a, b, c, d]) = self.bytes.get(self.pos..self.pos + 4) else {
            self.pos = self.bytes.len();
            return self.err(Code::EofWhileParsingString);
        };
        self.pos += 4;
        let mut n: u16 = 0;
        for h in [a, b, c, d] {
            let v = match h {
                b'0'..=b'9' => h - b'0',
                b'a'..=b'f' => h - b'a' + 10,
                b'A'..=b'F' => h - b'A' + 10,
                _ => return self.err(Code::InvalidEscape),
            };
            n = (n << 4) | u16::from(v);
        }
        Ok(n)
    }

    fn unicode_escape(&mut self) -> R<()> {
        let n = self.hex4()?;
        if (0xDC00..=0xDFFF).contains(&n) {
            return self.err(Code::LoneLeadingSurrogateInHexEscape);
        }
        let code = if (0xD800..=0xDBFF).contains(&n) {
            for expected in [b'\\', b'u'] {
                match self.peek() {
                    None => return self.err(Code::EofWhileParsingString),
                    Some(c) => {
                        self.pos += 1;
                        if c != expected {
                            return self.err(Code::UnexpectedEndOfHexEscape);
                        }
                    }
                }
            }
            let n2 = self.hex4()?;
            if !(0xDC00..=0xDFFF).contains(&n2) {
                return self.err(Code::LoneLeadingSurrogateInHexEscape);
            }
            ((u32::from(n - 0xD800) << 10) | u32::from(n2 - 0xDC00)) + 0x1_0000
        } else {
            u32::from(n)
        };
        match char::from_u32(code) {
            Some(ch) => {
                self.scratch.push(ch);
                Ok(())
            }
            None => self.err(Code::InvalidUnicodeCodePoint),
        }
    }

    /// A number (at its first byte, `-` or a digit), with serde_json's rules: integers
    /// that fit u64 are exact (i64 → Int, beyond → Float), everything else is the
    /// correctly rounded f64; an infinite result is "number out of range".
    fn number(&mut self) -> R<Value> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        // the integer part
        let mut sig: u64 = 0;
        let mut long = false; // more significant digits than fit a u64
        match self.peek() {
            None => return self.err(Code::EofWhileParsingValue),
            Some(b'0') => {
                self.pos += 1;
                if self.peek().is_some_and(is_digit) {
                    return self.peek_err(Code::InvalidNumber);
                }
            }
            Some(c @ b'1'..=b'9') => {
                self.pos += 1;
                sig = u64::from(c - b'0');
                while let Some(c) = self.peek().filter(|&c| is_digit(c)) {
                    let d = u64::from(c - b'0');
                    match sig.checked_mul(10).and_then(|x| x.checked_add(d)) {
                        Some(x) => sig = x,
                        None => {
                            long = true;
                            break;
                        }
                    }
                    self.pos += 1;
                }
                while self.peek().is_some_and(is_digit) {
                    self.pos += 1;
                }
            }
            Some(_) => {
                self.pos += 1;
                return self.err(Code::InvalidNumber);
            }
        }
        let mut nonzero = sig != 0 || long;
        let mut float = false;
        let mut frac_digits: i32 = 0;
        if self.peek() == Some(b'.') {
            float = true;
            self.pos += 1;
            let digits_start = self.pos;
            while let Some(c) = self.peek().filter(|&c| is_digit(c)) {
                if !long {
                    match sig.checked_mul(10).and_then(|x| x.checked_add(u64::from(c - b'0'))) {
                        Some(x) => {
                            sig = x;
                            frac_digits += 1;
                        }
                        None => long = true,
                    }
                }
                nonzero |= c != b'0';
                self.pos += 1;
            }
            if self.pos == digits_start {
                return match self.peek() {
                    Some(_) => self.peek_err(Code::InvalidNumber),
                    None => self.peek_err(Code::EofWhileParsingValue),
                };
            }
        }
        let mut exp: i32 = 0;
        if let Some(b'e' | b'E') = self.peek() {
            float = true;
            self.pos += 1;
            let positive_exp = match self.peek() {
                Some(b'+') => {
                    self.pos += 1;
                    true
                }
                Some(b'-') => {
                    self.pos += 1;
                    false
                }
                _ => true,
            };
            match self.peek() {
                None => return self.err(Code::EofWhileParsingValue),
                Some(c) if is_digit(c) => {
                    self.pos += 1;
                    exp = i32::from(c - b'0');
                }
                Some(_) => {
                    self.pos += 1;
                    return self.err(Code::InvalidNumber);
                }
            }
            while let Some(c) = self.peek().filter(|&c| is_digit(c)) {
                self.pos += 1;
                match exp.checked_mul(10).and_then(|x| x.checked_add(i32::from(c - b'0'))) {
                    Some(x) => exp = x,
                    None => {
                        // serde_json: an exponent past i32 is out of range, or zero
                        if nonzero && positive_exp {
                            return self.err(Code::NumberOutOfRange);
                        }
                        while self.peek().is_some_and(is_digit) {
                            self.pos += 1;
                        }
                        return Ok(Value::Float(if negative { -0.0 } else { 0.0 }));
                    }
                }
            }
            if !positive_exp {
                exp = -exp;
            }
        }
        if !float && !long {
            return Ok(if negative {
                let neg = (sig as i64).wrapping_neg();
                if neg >= 0 { Value::Float(-(sig as f64)) } else { Value::Int(neg) }
            } else {
                i64::try_from(sig).map_or(Value::Float(sig as f64), Value::Int)
            });
        }
        // exact fast path: both factors are exact f64s, so one operation rounds correctly
        if !long && sig <= 1 << 53 {
            let e = exp - frac_digits;
            if let Some(&p) = POW10.get(e.unsigned_abs() as usize) {
                let f = if e >= 0 { sig as f64 * p } else { sig as f64 / p };
                if f.is_finite() {
                    return Ok(Value::Float(if negative { -f } else { f }));
                }
            }
        }
        let f: f64 = match self.text.get(start..self.pos).map(str::parse) {
            Some(Ok(f)) => f,
            _ => return self.err(Code::InvalidNumber),
        };
        if f.is_infinite() { self.err(Code::NumberOutOfRange) } else { Ok(Value::Float(f)) }
    }

    /// Takes the reusable value buffer of `depth`.
    fn buf(&mut self, depth: usize) -> Vec<Value> {
        if self.bufs.len() <= depth {
            self.bufs.resize_with(depth + 1, Vec::new);
        }
        self.bufs.get_mut(depth).map(std::mem::take).unwrap_or_default()
    }

    /// Gives the buffer of `depth` back (emptied, capacity kept).
    fn give_back(&mut self, depth: usize, mut buf: Vec<Value>) {
        buf.clear();
        if let Some(b) = self.bufs.get_mut(depth) {
            *b = buf;
        }
    }

    fn array(&mut self, depth: usize, node: usize) -> R<Value> {
        if depth + 1 >= MAX_DEPTH {
            return self.peek_err(Code::RecursionLimitExceeded);
        }
        self.pos += 1;
        self.take(cost::HEADER)?;
        let mut items = self.buf(depth);
        let mut large: Option<PVector> = None;
        let out = match self.array_items(depth, node, &mut items, &mut large) {
            Ok(()) => Ok(Value::from_pvec(match large {
                // a large array went into its tree as it grew (no second copy at the end)
                Some(mut pv) => {
                    pv.extend(items.drain(..));
                    pv
                }
                None => items.drain(..).collect::<PVector>(),
            })),
            Err(e) => Err(e),
        };
        self.give_back(depth, items);
        out
    }

    fn array_items(&mut self, depth: usize, node: usize, items: &mut Vec<Value>, large: &mut Option<PVector>) -> R<()> {
        let mut first = true;
        let mut kid = 0;
        loop {
            match self.skip_ws() {
                None => return self.peek_err(Code::EofWhileParsingList),
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(_) if first => {
                    first = false;
                    kid = self.kid(node, None, depth + 1);
                }
                Some(b',') => {
                    self.pos += 1;
                    match self.skip_ws() {
                        Some(b']') => return self.peek_err(Code::TrailingComma),
                        Some(_) => {}
                        None => return self.peek_err(Code::EofWhileParsingValue),
                    }
                }
                Some(_) => return self.peek_err(Code::ExpectedListCommaOrEnd),
            }
            items.push(self.value(depth + 1, kid)?);
            if items.len() >= 64 {
                large.get_or_insert_with(PVector::new).extend(items.drain(..));
            }
        }
    }

    fn object(&mut self, depth: usize, node: usize) -> R<Value> {
        if depth + 1 >= MAX_DEPTH {
            return self.peek_err(Code::RecursionLimitExceeded);
        }
        self.pos += 1;
        self.take(cost::HEADER)?;
        let mut vals = self.buf(depth);
        let out = match self.members(depth, node, &mut vals) {
            Ok(hit) => Ok(self.build_map(node, hit, &mut vals)),
            Err(e) => Err(e),
        };
        self.give_back(depth, vals);
        out
    }

    /// Parses the members into `vals` and their keys into the node's `keys`; true when
    /// every key is the previous object's key at the same position (the same shape).
    fn members(&mut self, depth: usize, node: usize, vals: &mut Vec<Value>) -> R<bool> {
        let mut hit = true;
        let mut n = 0usize;
        loop {
            match self.skip_ws() {
                None => return self.peek_err(Code::EofWhileParsingObject),
                Some(b'}') => {
                    self.pos += 1;
                    let Some(nd) = self.nodes.get_mut(node) else { return Ok(false) };
                    if n != nd.keys.len() {
                        hit = false;
                        nd.keys.truncate(n);
                    }
                    return Ok(hit);
                }
                Some(c) if n == 0 => {
                    if c != b'"' {
                        return self.peek_err(Code::KeyMustBeAString);
                    }
                }
                Some(b',') => {
                    self.pos += 1;
                    match self.skip_ws() {
                        Some(b'"') => {}
                        Some(b'}') => return self.peek_err(Code::TrailingComma),
                        Some(_) => return self.peek_err(Code::KeyMustBeAString),
                        None => return self.peek_err(Code::EofWhileParsingValue),
                    }
                }
                Some(_) => return self.peek_err(Code::ExpectedObjectCommaOrEnd),
            }
            // the key
            self.pos += 1;
            let t = self.string()?;
            let key_len = match t {
                Text::Slice(a, b) => b - a,
                Text::Scratch => self.scratch.len(),
            };
            self.take(cost::ENTRY + key_len as u64)?;
            hit &= self.key(node, n, t);
            // the colon
            match self.skip_ws() {
                Some(b':') => self.pos += 1,
                Some(_) => return self.peek_err(Code::ExpectedColon),
                None => return self.peek_err(Code::EofWhileParsingObject),
            }
            let kid = self.kid(node, Some(n), depth + 1);
            vals.push(self.value(depth + 1, kid)?);
            n += 1;
        }
    }

    /// Records key `n` of the object at `node` in the node's `keys`; true when it is the
    /// key the previous object there had at this position.
    #[inline]
    fn key(&mut self, node: usize, n: usize, t: Text) -> bool {
        let s: &str = match t {
            Text::Slice(a, b) => self.text.get(a..b).unwrap_or(""),
            Text::Scratch => self.scratch.as_str(),
        };
        let Some(nd) = self.nodes.get_mut(node) else { return false };
        match nd.keys.get_mut(n) {
            Some(k) if same_bytes(k.as_bytes(), s.as_bytes()) => true,
            Some(k) => {
                *k = self.interner.get(s);
                false
            }
            None => {
                nd.keys.push(self.interner.get(s));
                false
            }
        }
    }

    /// Builds the map from the node's keys and `vals` (input order): sorted by key, the
    /// last of repeated keys winning. The order is reused while the shape repeats.
    fn build_map(&mut self, node: usize, hit: bool, vals: &mut [Value]) -> Value {
        let Some(nd) = self.nodes.get_mut(node) else { return Value::empty_map() };
        let keys = &nd.keys;
        if !(hit && nd.sorted_ok && nd.sorted.len() == keys.len()) {
            // a new shape: sort it (stable, so of equal keys the last one comes last)
            let key = |i: u32| keys.get(i as usize).map_or(&b""[..], |k| k.as_bytes());
            nd.sorted.clear();
            nd.sorted.extend(0..keys.len() as u32);
            nd.sorted.sort_by(|&a, &b| key(a).cmp(key(b)));
            nd.sorted_ok = nd.sorted.windows(2).all(|w| key(w[0]) != key(w[1]));
        }
        let sorted = &nd.sorted;
        let mut entries: Vec<(Value, Value)> = Vec::with_capacity(sorted.len());
        for (j, &i) in sorted.iter().enumerate() {
            let i = i as usize;
            if !nd.sorted_ok && sorted.get(j + 1).is_some_and(|&next| keys.get(next as usize) == keys.get(i)) {
                continue; // a later duplicate wins
            }
            if let (Some(k), Some(v)) = (keys.get(i), vals.get_mut(i)) {
                entries.push((Value::Str(k.clone()), std::mem::take(v)));
            }
        }
        Value::Map(Arc::new(PMap::from_sorted_unique(entries)))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::{ParseBudget, ParseError, serde_reference};
    use crate::value::Value;

    fn new(text: &str, bytes_left: u64) -> Result<Value, ParseError> {
        let mut pb = ParseBudget { bytes_left, budget: None, nodes: 0, failure: None };
        super::super::parse_with(text, &mut pb)
    }

    fn old(text: &str, bytes_left: u64) -> Result<Value, ParseError> {
        let mut pb = ParseBudget { bytes_left, budget: None, nodes: 0, failure: None };
        serde_reference::parse_with(text, &mut pb)
    }

    /// The new parser gives exactly what the serde_json one gave: the same value (same
    /// printed form, so -0.0 and 0.0 differ) or the same error, message included.
    fn same(text: &str, bytes_left: u64) {
        let (a, b) = (new(text, bytes_left), old(text, bytes_left));
        match (&a, &b) {
            (Ok(x), Ok(y)) => {
                assert_eq!(x, y, "{text:?}");
                assert_eq!(format!("{x:?}"), format!("{y:?}"), "{text:?}");
            }
            _ => assert_eq!(a, b, "{text:?} budget {bytes_left}"),
        }
    }

    fn syntax(text: &str) -> String {
        match new(text, u64::MAX) {
            Err(ParseError::Syntax(m)) => m,
            other => panic!("{text:?}: expected a syntax error, got {other:?}"),
        }
    }

    #[test]
    fn values() {
        for t in [
            "null",
            " true ",
            "false",
            "0",
            "-0",
            "-0.0",
            "12",
            "-12",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "18446744073709551615",
            "18446744073709551616",
            "123456789012345678901234567890",
            "-123456789012345678901234567890.5e-3",
            "1.5",
            "1e5",
            "1E+5",
            "1e-5",
            "0.1",
            "2.2250738585072014e-308",
            "4.9e-324",
            "1e-400",
            "-1e-400",
            "1.7976931348623157e308",
            "0e99999999999",
            "1e-99999999999",
            "-1e-99999999999",
            "0.000000000000000000000000000000000000001e39",
            "9007199254740993",
            "9007199254740993.0",
            "\"\"",
            "\"abc\"",
            "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"",
            "\"\\u00e9\\u20AC\\ud83d\\ude00 é €\"",
            "[]",
            "[1, [2, [3]], {}]",
            "{\"b\": 1, \"a\": 2}",
            "{\"a\": 1, \"a\": 2, \"b\": 3, \"a\": 4}",
            "{\"a\": 1, \"\\u0061\": 2}",
            "[{\"id\":1,\"s\":\"x\"},{\"id\":2,\"s\":\"y\"},{\"s\":\"x\",\"id\":3},{\"id\":4},{\"id\":5,\"s\":\"x\",\"t\":1},{}]",
            "[{\"a\":1,\"a\":2},{\"a\":3,\"a\":4},{\"a\":5}]",
            "[{\"u\":{\"x\":1},\"p\":{\"y\":2}},{\"u\":{\"x\":3},\"p\":{\"y\":4}}]",
        ] {
            same(t, u64::MAX);
            assert!(new(t, u64::MAX).is_ok(), "{t}");
        }
    }

    #[test]
    fn error_classes_match_serde_json() {
        let cases = [
            ("", "EOF while parsing a value at line 1 column 0"),
            ("   ", "EOF while parsing a value at line 1 column 3"),
            ("[1,", "EOF while parsing a value at line 1 column 3"),
            ("[1", "EOF while parsing a list at line 1 column 2"),
            ("{\"a\":1", "EOF while parsing an object at line 1 column 6"),
            ("{\"a\"", "EOF while parsing an object at line 1 column 4"),
            ("\"abc", "EOF while parsing a string at line 1 column 4"),
            ("{\"a\" 1}", "expected `:` at line 1 column 6"),
            ("[1 2]", "expected `,` or `]` at line 1 column 4"),
            ("{\"a\":1 \"b\":2}", "expected `,` or `}` at line 1 column 8"),
            ("nul", "EOF while parsing a value at line 1 column 3"),
            ("nulx", "expected ident at line 1 column 4"),
            ("x", "expected value at line 1 column 1"),
            ("[1,]", "trailing comma at line 1 column 4"),
            ("{\"a\":1,}", "trailing comma at line 1 column 8"),
            ("{1:2}", "key must be a string at line 1 column 2"),
            ("{\"a\":1,2:3}", "key must be a string at line 1 column 8"),
            ("\"\\x\"", "invalid escape at line 1 column 3"),
            ("\"\\u12G4\"", "invalid escape at line 1 column 7"),
            ("\"\\u12", "EOF while parsing a string at line 1 column 5"),
            ("\"\\udc00\"", "lone leading surrogate in hex escape at line 1 column 7"),
            ("\"\\ud800\\u0041\"", "lone leading surrogate in hex escape at line 1 column 13"),
            ("\"\\ud800x\"", "unexpected end of hex escape at line 1 column 8"),
            ("\"\\ud800\\n\"", "unexpected end of hex escape at line 1 column 9"),
            ("\"a\u{1}b\"", "control character (\\u0000-\\u001F) found while parsing a string at line 1 column 3"),
            ("01", "invalid number at line 1 column 2"),
            ("-", "EOF while parsing a value at line 1 column 1"),
            ("-x", "invalid number at line 1 column 2"),
            ("1.", "EOF while parsing a value at line 1 column 2"),
            ("1.x", "invalid number at line 1 column 3"),
            ("1e", "EOF while parsing a value at line 1 column 2"),
            ("1e+x", "invalid number at line 1 column 4"),
            ("1e400", "number out of range at line 1 column 5"),
            ("-1e400", "number out of range at line 1 column 6"),
            ("1e99999999999", "number out of range at line 1 column 12"),
            ("123456789012345678901234567890e300", "number out of range at line 1 column 34"),
            ("1 2", "trailing characters at line 1 column 3"),
            ("{}\n\n  x", "trailing characters at line 3 column 3"),
            ("[\n1,\n2\n", "EOF while parsing a list at line 4 column 0"),
        ];
        for (text, message) in cases {
            same(text, u64::MAX);
            assert_eq!(syntax(text), message, "{text:?}");
        }
    }

    #[test]
    fn depth_limit_is_serde_jsons() {
        for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
            let ok = format!("{}1{}", open.repeat(127), close.repeat(127));
            assert!(new(&ok, u64::MAX).is_ok());
            same(&ok, u64::MAX);
            let deep = format!("{}1{}", open.repeat(128), close.repeat(128));
            assert!(syntax(&deep).starts_with("recursion limit exceeded at line 1 column"));
            same(&deep, u64::MAX);
        }
        // hostile depth: an error, not a stack overflow
        let hostile = "[".repeat(1_000_000);
        assert!(syntax(&hostile).starts_with("recursion limit exceeded"));
    }

    #[test]
    fn budget_fires_at_the_same_points() {
        let text = r#"{"orders": [{"id": 1, "s": "paid", "xs": [1, 2.5, null, true]}, {"id": 2, "s": "failed", "xs": []}], "long": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}"#;
        for left in 0..2_000 {
            same(text, left);
        }
        assert_eq!(new("[1, 2, 3]", 16), Err(ParseError::TooLarge));
        // a syntax error before the budget runs out is a syntax error; after, too large
        assert!(matches!(new("[1, 2, x]", 1_000), Err(ParseError::Syntax(_))));
        assert_eq!(new("[1, 2, x]", 100), Err(ParseError::TooLarge));
    }

    #[test]
    fn huge_arrays_and_objects() {
        for n in (0..140).chain([1000, 4097]) {
            let arr = format!("[{}]", (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(","));
            same(&arr, u64::MAX);
            let v = new(&arr, u64::MAX).unwrap();
            let Value::Vector(items) = &v else { panic!("{v:?}") };
            assert_eq!(items.len(), n);
            assert!(items.iter().enumerate().all(|(i, x)| *x == Value::Int(i as i64)));
        }
        let obj = format!("{{{}}}", (0..1000).map(|i| format!("\"k{}\":{i}", i % 700)).collect::<Vec<_>>().join(","));
        same(&obj, u64::MAX);
        let records = format!(
            "[{}]",
            (0..5000)
                .map(|i| format!(
                    r#"{{"id":{i},"status":"{}","c":"c{}","n":{{"x":{i}}}}}"#,
                    ["a", "b", "c"][i % 3],
                    i % 97
                ))
                .collect::<Vec<_>>()
                .join(",")
        );
        same(&records, u64::MAX);
    }

    // ---- the differential property test ----

    fn number_text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<i64>().prop_map(|i| i.to_string()),
            any::<u64>().prop_map(|i| i.to_string()),
            (0u64..1000).prop_map(|i| i.to_string()),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| format!("{f:?}")),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| format!("{f:e}")),
            (
                proptest::option::of("-"),
                "(0|[1-9][0-9]{0,30})",
                proptest::option::of("[0-9]{1,30}"),
                proptest::option::of(("[eE]", "[-+]?", "[0-9]{1,12}"))
            )
                .prop_map(|(sign, int, frac, exp)| {
                    let mut s = sign.unwrap_or_default().to_string();
                    s.push_str(&int);
                    if let Some(f) = frac {
                        s.push('.');
                        s.push_str(&f);
                    }
                    if let Some((e, sign, digits)) = exp {
                        s.push_str(&e);
                        s.push_str(&sign);
                        s.push_str(&digits);
                    }
                    s
                }),
        ]
    }

    fn string_text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            4 => "[a-z]{0,6}",
            1 => Just("\\n".to_string()),
            1 => Just("\\\"".to_string()),
            1 => Just("\\\\".to_string()),
            1 => Just("\\/\\b\\f\\r\\t".to_string()),
            1 => Just("é€😀".to_string()),
            1 => any::<u16>().prop_map(|u| format!("\\u{u:04x}")),
            1 => Just("\\ud83d\\ude00".to_string()),
            1 => Just("\\uD83D\\uDE00".to_string()),
            1 => Just("\\u0061".to_string()),
            1 => "[a-z]{25,40}",
        ];
        proptest::collection::vec(piece, 0..4).prop_map(|ps| format!("\"{}\"", ps.concat()))
    }

    fn key_text() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => prop::sample::select(vec!["\"id\"", "\"a\"", "\"b\"", "\"status\"", "\"\"", "\"\\u0061\"", "\"ab\""])
                .prop_map(str::to_string),
            1 => string_text(),
        ]
    }

    fn ws() -> impl Strategy<Value = String> {
        prop_oneof![6 => Just(String::new()), 1 => "[ \t\r\n]{1,3}"]
    }

    fn json_text() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            Just("false".to_string()),
            number_text(),
            string_text(),
        ];
        leaf.prop_recursive(5, 64, 8, |inner| {
            prop_oneof![
                proptest::collection::vec((ws(), inner.clone(), ws()), 0..8).prop_map(|items| {
                    let parts: Vec<String> = items.into_iter().map(|(a, x, b)| format!("{a}{x}{b}")).collect();
                    format!("[{}]", parts.join(","))
                }),
                proptest::collection::vec((key_text(), ws(), inner.clone()), 0..6).prop_map(|members| {
                    let parts: Vec<String> = members.into_iter().map(|(k, w, v)| format!("{k}{w}:{w}{v}")).collect();
                    format!("{{{}}}", parts.join(","))
                }),
                // records: the same keys again and again (the shape cache)
                (proptest::collection::vec(key_text(), 1..5), proptest::collection::vec(inner, 1..12)).prop_map(
                    |(keys, vals)| {
                        let recs: Vec<String> = vals
                            .chunks(keys.len())
                            .map(|vs| {
                                let ms: Vec<String> = keys.iter().zip(vs).map(|(k, v)| format!("{k}:{v}")).collect();
                                format!("{{{}}}", ms.join(","))
                            })
                            .collect();
                        format!("[{}]", recs.join(","))
                    }
                ),
            ]
        })
        .prop_flat_map(|t| (ws(), Just(t), ws()).prop_map(|(a, t, b)| format!("{a}{t}{b}")))
    }

    const INSERTS: &[&str] =
        &["\"", "\\", ",", ":", "[", "]", "{", "}", " ", "0", "-", "e", ".", "\u{1}", "é", "u", "n", "\\u", "1e999"];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn same_as_serde_json(text in json_text()) {
            same(&text, u64::MAX);
        }

        #[test]
        fn same_as_serde_json_after_corruption(
            text in json_text(),
            cut in any::<prop::sample::Index>(),
            at in any::<prop::sample::Index>(),
            insert in prop::sample::select(INSERTS),
            how in 0..3u8,
        ) {
            let corrupted = match how {
                0 => {
                    let mut k = cut.index(text.len() + 1);
                    while !text.is_char_boundary(k) { k -= 1; }
                    text[..k].to_string()
                }
                1 => {
                    let mut k = at.index(text.len() + 1);
                    while !text.is_char_boundary(k) { k -= 1; }
                    format!("{}{insert}{}", &text[..k], &text[k..])
                }
                _ => {
                    let mut k = at.index(text.len().max(1));
                    while !text.is_char_boundary(k) { k -= 1; }
                    let mut j = k + 1;
                    while j < text.len() && !text.is_char_boundary(j) { j += 1; }
                    format!("{}{}", &text[..k], text.get(j..).unwrap_or(""))
                }
            };
            same(&corrupted, u64::MAX);
        }

        #[test]
        fn same_budget_outcome(text in json_text(), left in 0u64..4000) {
            same(&text, left);
        }
    }
}
