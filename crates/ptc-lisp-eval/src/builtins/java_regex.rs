//! Java's `Matcher` behaviour on top of the linear-time `regex` crate: the successive
//! `find()` loop (an empty match right after a non-empty one counts, as in Java), the
//! `Pattern.split` algorithm (no empty leading piece for a zero-width match at 0, trailing
//! empty pieces dropped when the limit is 0), and `$1` / `${name}` replacement strings.

use regex::{Captures, Regex};

use crate::error::{ErrorKind, EvalResult, err};

/// Every match in order, the way Java's `Matcher.find()` walks a string: after an empty
/// match the search resumes one character later, after a non-empty one at its end.
pub(super) struct FindIter<'r, 'h> {
    re: &'r Regex,
    hay: &'h str,
    pos: usize,
}

/// Starts a Java-style match loop over `hay`.
pub(super) fn find_iter<'r, 'h>(re: &'r Regex, hay: &'h str) -> FindIter<'r, 'h> {
    FindIter { re, hay, pos: 0 }
}

impl<'h> Iterator for FindIter<'_, 'h> {
    type Item = Captures<'h>;

    fn next(&mut self) -> Option<Captures<'h>> {
        if self.pos > self.hay.len() {
            return None;
        }
        let caps = self.re.captures_at(self.hay, self.pos)?;
        let (start, end) = caps.get(0).map_or((self.pos, self.pos), |m| (m.start(), m.end()));
        self.pos = if end == start {
            // step over one whole character so the next search starts on a boundary
            end + self.hay[end..].chars().next().map_or(1, char::len_utf8)
        } else {
            end
        };
        Some(caps)
    }
}

/// The same walk as [`find_iter`], yielding only each whole match's byte range: no capture
/// groups are resolved, so the regex engine can stay on its fastest path.
pub(super) struct MatchIter<'r, 'h> {
    re: &'r Regex,
    hay: &'h str,
    pos: usize,
}

/// Starts a Java-style match loop over `hay` that reports whole matches only.
pub(super) fn match_iter<'r, 'h>(re: &'r Regex, hay: &'h str) -> MatchIter<'r, 'h> {
    MatchIter { re, hay, pos: 0 }
}

impl Iterator for MatchIter<'_, '_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        if self.pos > self.hay.len() {
            return None;
        }
        let m = self.re.find_at(self.hay, self.pos)?;
        let (start, end) = (m.start(), m.end());
        self.pos = if end == start { end + self.hay[end..].chars().next().map_or(1, char::len_utf8) } else { end };
        Some((start, end))
    }
}

/// Java's `Pattern.split(input, limit)`: a positive limit caps the number of pieces, zero
/// drops trailing empty pieces, a negative limit keeps them. No match yields `[input]`.
///
/// `None` when there would be more than `max_pieces` pieces (the caller's memory budget
/// cannot hold them): the pieces are counted as they are found, never all collected first.
pub(super) fn split<'h>(re: &Regex, hay: &'h str, limit: i64, max_pieces: usize) -> Option<Vec<&'h str>> {
    split_at_matches(match_iter(re, hay), hay, limit, max_pieces)
}

/// [`split`] for the pattern `\s+` (Java's ASCII whitespace: space, tab, newline, vertical
/// tab, form feed, carriage return), the commonest separator, without the regex engine.
pub(super) fn split_whitespace(hay: &str, limit: i64, max_pieces: usize) -> Option<Vec<&str>> {
    split_at_matches(WhitespaceRuns { hay: hay.as_bytes(), pos: 0 }, hay, limit, max_pieces)
}

/// Runs of ASCII whitespace, as `\s+` matches them (whole runs, never empty).
struct WhitespaceRuns<'h> {
    hay: &'h [u8],
    pos: usize,
}

impl Iterator for WhitespaceRuns<'_> {
    type Item = (usize, usize);
    fn next(&mut self) -> Option<(usize, usize)> {
        let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r');
        let start = self.pos + self.hay.get(self.pos..)?.iter().position(ws)?;
        let len = self.hay[start..].iter().take_while(|b| ws(b)).count();
        self.pos = start + len;
        Some((start, start + len))
    }
}

fn split_at_matches<'h>(
    matches: impl Iterator<Item = (usize, usize)>,
    hay: &'h str,
    limit: i64,
    max_pieces: usize,
) -> Option<Vec<&'h str>> {
    let limited = limit > 0;
    let mut pieces: Vec<&'h str> = Vec::new();
    let mut index = 0;
    for (start, end) in matches {
        if limited && pieces.len() as i64 >= limit - 1 {
            break;
        }
        if pieces.len() >= max_pieces {
            return None;
        }
        if index == 0 && start == 0 && end == 0 {
            // no empty leading piece for a zero-width match at the beginning
            continue;
        }
        pieces.push(&hay[index..start]);
        index = end;
    }
    if index == 0 && pieces.is_empty() {
        return Some(vec![hay]);
    }
    pieces.push(&hay[index..]);
    if limit == 0 {
        while pieces.last().is_some_and(|p| p.is_empty()) {
            pieces.pop();
        }
    }
    Some(pieces)
}

/// One piece of a parsed Java replacement string.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Piece {
    /// Literal text.
    Text(String),
    /// A numbered group (`$1`).
    Group(usize),
    /// A named group (`${name}`).
    Named(String),
}

/// Parses a Java replacement string (`$1`, `${name}`, `\$` for a literal dollar) against
/// a pattern, with Java's rules: `$12` means group 12 only when the pattern has 12 groups
/// (else group 1 followed by "2"), and a reference to a missing group is an error.
pub(super) fn parse_replacement(fname: &str, re: &Regex, r: &str) -> EvalResult<Vec<Piece>> {
    let groups = re.captures_len() - 1;
    let mut out = Vec::new();
    let mut text = String::new();
    let mut chars = r.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(n) => text.push(n),
                None => {
                    return err(
                        ErrorKind::RuntimeError,
                        format!("{fname}: the replacement ends with a lone backslash; write \\\\ for a backslash"),
                    );
                }
            },
            '$' => {
                if !text.is_empty() {
                    out.push(Piece::Text(std::mem::take(&mut text)));
                }
                match chars.peek().copied() {
                    Some('{') => {
                        chars.next();
                        let mut name = String::new();
                        for n in chars.by_ref() {
                            if n == '}' {
                                break;
                            }
                            name.push(n);
                        }
                        if re.capture_names().flatten().all(|g| g != name) {
                            return err(
                                ErrorKind::RuntimeError,
                                format!(
                                    "{fname}: the replacement refers to group ${{{name}}}, which the pattern does not name"
                                ),
                            );
                        }
                        out.push(Piece::Named(name));
                    }
                    Some(d) if d.is_ascii_digit() => {
                        chars.next();
                        let mut n = d as usize - '0' as usize;
                        if n > groups {
                            return err(
                                ErrorKind::RuntimeError,
                                format!(
                                    "{fname}: the replacement refers to group ${n}, but the pattern has {groups} group(s); write \\$ for a literal dollar sign"
                                ),
                            );
                        }
                        // Java takes more digits only while they still name a group
                        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                            let more = n * 10 + (*d as usize - '0' as usize);
                            if more > groups {
                                break;
                            }
                            n = more;
                            chars.next();
                        }
                        out.push(Piece::Group(n));
                    }
                    _ => {
                        return err(
                            ErrorKind::RuntimeError,
                            format!(
                                "{fname}: a '$' in the replacement must be followed by a group number or {{name}}; write \\$ for a literal dollar sign"
                            ),
                        );
                    }
                }
            }
            c => text.push(c),
        }
    }
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    Ok(out)
}

/// Appends the replacement for one match.
/// Bytes [`expand`] appends for one match, computed without building it.
pub(super) fn expanded_len(pieces: &[Piece], caps: &Captures<'_>) -> u64 {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Text(t) => t.len(),
            Piece::Group(n) => caps.get(*n).map_or(0, |m| m.len()),
            Piece::Named(n) => caps.name(n).map_or(0, |m| m.len()),
        } as u64)
        .fold(0u64, u64::saturating_add)
}

pub(super) fn expand(pieces: &[Piece], caps: &Captures<'_>, out: &mut String) {
    for p in pieces {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Group(n) => out.push_str(caps.get(*n).map_or("", |m| m.as_str())),
            Piece::Named(n) => out.push_str(caps.name(n).map_or("", |m| m.as_str())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn re(s: &str) -> Regex {
        Regex::new(s).unwrap()
    }

    fn all(r: &str, s: &str) -> Vec<String> {
        find_iter(&re(r), s).map(|c| c[0].to_string()).collect()
    }

    #[test]
    fn empty_match_after_a_match_counts_as_in_java() {
        assert_eq!(all("a*", "baaab"), vec!["", "aaa", "", ""]);
        assert_eq!(all("", "ab"), vec!["", "", ""]);
        assert_eq!(all("", "é"), vec!["", ""]);
        assert_eq!(all("x", ""), Vec::<String>::new());
    }

    #[test]
    fn split_stops_past_max_pieces() {
        assert_eq!(split(&re(""), "abcdef", 0, 3), None);
        assert_eq!(split(&re(","), "a,b,c", 0, 3), Some(vec!["a", "b", "c"]));
        assert_eq!(split_whitespace("a b c d", 0, 2), None);
    }

    #[test]
    fn java_split() {
        assert_eq!(split(&re(","), "a,b,,c,,", 0, usize::MAX).unwrap(), vec!["a", "b", "", "c"]);
        assert_eq!(split(&re(","), ",,,", 0, usize::MAX).unwrap(), Vec::<&str>::new());
        assert_eq!(split(&re(","), "", 0, usize::MAX).unwrap(), vec![""]);
        assert_eq!(split(&re(""), "abc", 0, usize::MAX).unwrap(), vec!["a", "b", "c"]);
        assert_eq!(split(&re(","), ",a", 0, usize::MAX).unwrap(), vec!["", "a"]);
        assert_eq!(split(&re(","), "a,b,,", -1, usize::MAX).unwrap(), vec!["a", "b", "", ""]);
        assert_eq!(split(&re(","), "a,b,c", 2, usize::MAX).unwrap(), vec!["a", "b,c"]);
        assert_eq!(split(&re(","), "a,b,c", 1, usize::MAX).unwrap(), vec!["a,b,c"]);
        assert_eq!(split(&re("\r?\n"), "\n", 0, usize::MAX).unwrap(), Vec::<&str>::new());
    }

    #[test]
    fn replacement_references() {
        let r = re("(a)(b)");
        assert_eq!(
            parse_replacement("t", &r, "$2$1$12\\$").unwrap(),
            vec![Piece::Group(2), Piece::Group(1), Piece::Group(1), Piece::Text("2$".into())]
        );
        assert!(parse_replacement("t", &r, "$3").is_err());
        assert!(parse_replacement("t", &r, "cost $").is_err());
        let named = re("(?<y>\\d+)");
        assert_eq!(parse_replacement("t", &named, "${y}").unwrap(), vec![Piece::Named("y".into())]);
        assert!(parse_replacement("t", &named, "${z}").is_err());
    }
}

#[cfg(test)]
mod whitespace_split {
    use super::*;

    #[test]
    fn agrees_with_the_regex_engine() {
        let re = Regex::new("[ \\t\\n\\x0B\\x0C\\r]+").unwrap_or_else(|e| panic!("{e}"));
        let inputs = [
            "",
            " ",
            "a",
            " a",
            "a ",
            "  a  b  ",
            "a\tb\nc\rd\x0Be\x0Cf",
            "a\u{a0}b c",
            "\n\nx\n\n",
            "ünï cödé  ok",
            "a b c d e",
        ];
        for hay in inputs {
            for limit in [-1, 0, 1, 2, 3, 10] {
                assert_eq!(
                    split_whitespace(hay, limit, usize::MAX),
                    split(&re, hay, limit, usize::MAX),
                    "{hay:?} limit {limit}"
                );
            }
        }
    }
}
