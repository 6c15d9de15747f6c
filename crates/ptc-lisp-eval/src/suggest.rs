//! "Did you mean ...?": the closest known names to a misspelled one.

/// Edit distance with adjacent transpositions (optimal string alignment), over chars.
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1).min(rows[i][j - 1] + 1).min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

/// Up to `max` of the candidates closest to `name` (all equally close, in the order given),
/// each as it should be written. Close means at most a third of the name's length in edits
/// (at least one), or the same name with `-` and `_` swapped or different case.
pub(crate) fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>, max: usize) -> Vec<String> {
    let len = name.chars().count();
    // short names match only by case and - / _; longer ones within a third of their length
    let limit = if len < 3 { 0 } else { (len / 3).max(1) };
    let norm = |s: &str| s.to_lowercase().replace('_', "-");
    let wanted = norm(name);
    let mut scored: Vec<(usize, usize, &str)> = Vec::new();
    for (i, c) in candidates.into_iter().enumerate() {
        if c == name || scored.iter().any(|(_, _, s)| *s == c) {
            continue;
        }
        let bare = c.rsplit('/').next().unwrap_or(c);
        // an edit distance is at least the difference in length: most names are skipped
        // without computing it
        let far = bare.chars().count().abs_diff(len) > limit;
        let d = if norm(bare) == wanted {
            0
        } else if far {
            continue;
        } else {
            distance(name, bare)
        };
        if d <= limit {
            scored.push((d, i, c));
        }
    }
    scored.sort();
    // only the best matches: a worse one next to a good one is noise
    let best = scored.first().map(|(d, _, _)| *d).unwrap_or(0);
    scored.into_iter().filter(|(d, _, _)| *d == best).take(max).map(|(_, _, c)| c.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("fitler", "filter"), 1);
        assert_eq!(distance("redcue", "reduce"), 1);
        assert_eq!(distance("", "ab"), 2);
        assert_eq!(distance("kitten", "sitting"), 3);
    }

    #[test]
    fn closest_names() {
        let names = ["filter", "first", "map", "data/user_id", "tool/search"];
        assert_eq!(closest("fitler", names, 2), ["filter"]);
        assert_eq!(closest("user-id", names, 2), ["data/user_id"]);
        assert_eq!(closest("serch", names, 2), ["tool/search"]);
        assert!(closest("zzzzzz", names, 2).is_empty());
    }
}
