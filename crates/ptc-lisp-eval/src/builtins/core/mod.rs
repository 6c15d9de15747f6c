//! clojure.core, one file per group of Clojure's own reference (the cheatsheet's
//! sections): numbers, predicates (type tests), strings, io, regex, collections,
//! sequences (seq in, seq out), consume (using a seq), lazy producers, transducers and
//! functions.

pub(crate) mod collections;
pub(crate) mod comparators;
pub(crate) mod consume;
pub(crate) mod functions;
pub(crate) mod io;
pub(crate) mod lazy_seqs;
pub(crate) mod map_filter;
pub(crate) mod numbers;
pub(crate) mod predicates;
pub(crate) mod regex;
pub(crate) mod sequences;
pub(crate) mod strings;
pub(crate) mod transducers;
