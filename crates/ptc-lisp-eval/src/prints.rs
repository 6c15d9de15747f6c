//! The printed output of a run: lines under the run's `max_print_bytes` cap.
//!
//! Every print path ends here: [`Prints::record`] keeps a line while the run's total
//! stays within the cap, and once a line would cross it, that line and every later one
//! are dropped and one marker line says so. Parallel branches (`pmap`, `pcalls`) print
//! into logs of their own; the parent takes each call's [`Chunk`] in call order with
//! [`Prints::absorb`], which counts its lines against the parent's cap as if the calls
//! had run one after the other. So a run never prints more than `max_print_bytes` bytes
//! (plus the one marker), however many branches print.

/// Captured output lines under a byte cap.
#[derive(Debug)]
pub(crate) struct Prints {
    lines: Vec<String>,
    /// Bytes in `lines`.
    bytes: usize,
    /// The cap (`max_print_bytes`).
    max_bytes: usize,
    /// A line was dropped: every later one is dropped too, and the marker closes the log.
    dropped: bool,
}

/// Where a log stood before a call, to cut out what that call printed ([`Prints::since`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    len: usize,
    dropped: bool,
}

/// What one call printed in a branch: its kept lines, and whether the branch started
/// dropping lines during the call.
#[derive(Debug, Default)]
pub(crate) struct Chunk {
    lines: Vec<String>,
    dropped: bool,
}

impl Prints {
    /// An empty log with a cap of `max_bytes` bytes.
    pub(crate) fn new(max_bytes: usize) -> Self {
        Prints { lines: Vec::new(), bytes: 0, max_bytes, dropped: false }
    }

    /// Keeps `line` if the total stays within the cap; otherwise drops it and every
    /// later line.
    pub(crate) fn record(&mut self, line: String) {
        if self.dropped {
            return;
        }
        let total = self.bytes.saturating_add(line.len());
        if total > self.max_bytes {
            self.dropped = true;
            return;
        }
        self.bytes = total;
        self.lines.push(line);
    }

    /// Where the log stands now.
    pub(crate) fn mark(&self) -> Mark {
        Mark { len: self.lines.len(), dropped: self.dropped }
    }

    /// Takes the lines recorded since `mark` out of the log (their bytes stay counted).
    pub(crate) fn since(&mut self, mark: Mark) -> Chunk {
        let at = mark.len.min(self.lines.len());
        Chunk { lines: self.lines.split_off(at), dropped: self.dropped && !mark.dropped }
    }

    /// Records a branch's chunk as if its call had printed here.
    pub(crate) fn absorb(&mut self, chunk: Chunk) {
        for line in chunk.lines {
            self.record(line);
        }
        if chunk.dropped {
            // the branch dropped a line: its own total passed the cap, so this one
            // would have too
            self.dropped = true;
        }
    }

    /// The lines, closed by the marker when some were dropped.
    pub(crate) fn into_lines(self) -> Vec<String> {
        let mut lines = self.lines;
        if self.dropped {
            lines.push(format!(
                "... (further output dropped: more than {} bytes printed in this run; print less, e.g. counts or the first few items)",
                self.max_bytes
            ));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_past_the_cap_are_dropped_with_one_marker() {
        let mut p = Prints::new(10);
        p.record("12345".into());
        p.record("1234".into());
        p.record("12".into());
        p.record("1".into());
        let lines = p.into_lines();
        assert_eq!(&lines[..2], ["12345", "1234"]);
        assert_eq!(lines.len(), 3);
        assert!(lines[2].contains("more than 10 bytes"), "{lines:?}");
    }

    #[test]
    fn absorbed_chunks_count_against_the_parent_cap() {
        let mut parent = Prints::new(10);
        for _ in 0..3 {
            let mut branch = Prints::new(10);
            let mark = branch.mark();
            branch.record("123456".into());
            parent.absorb(branch.since(mark));
        }
        let lines = parent.into_lines();
        assert_eq!(lines[0], "123456");
        assert_eq!(lines.len(), 2, "{lines:?}");
    }

    #[test]
    fn a_branch_that_dropped_makes_the_parent_drop() {
        let mut branch = Prints::new(10);
        let first = branch.mark();
        branch.record("123456".into());
        let a = branch.since(first);
        let second = branch.mark();
        branch.record("123456".into());
        let b = branch.since(second);
        assert!(!a.dropped && b.dropped && b.lines.is_empty());
        let mut parent = Prints::new(10);
        parent.absorb(a);
        parent.record("1".into());
        parent.absorb(b);
        parent.record("2".into());
        let lines = parent.into_lines();
        assert_eq!(&lines[..2], ["123456", "1"]);
        assert_eq!(lines.len(), 3, "{lines:?}");
    }
}
