//! The persistent vector behind `Value::Vector`.
//!
//! Most vectors a program builds are small: tuples from `juxt`, `[k v]` entries, regex
//! groups, destructured pairs. An RRB tree allocates a whole 64-slot chunk (1.5 KiB) for
//! any vector past two items, so small vectors live in a plain `Vec` sized to their
//! contents (up to [`SMALL_VEC`] items); a bigger one is an RRB tree (structural sharing,
//! cheap `conj` on huge vectors), or flat until its first copy (below). Copy-on-write is
//! the caller's `Arc::make_mut`: a shared small vector copies at most `SMALL_VEC` values,
//! like one tree chunk.
//!
//! A vector that grows past [`SMALL_VEC`] by appending stays a plain `Vec` (`Flat`) while
//! it has one owner: the tree is made when it is first copied (and kept for the copies
//! after), or before a change at its front. Most big vectors are built once by appending
//! and then only read, and those never pay for a tree.

use std::ops::Index;

use crate::value::Value;

/// Largest vector kept as a flat `Vec`.
pub(crate) const SMALL_VEC: usize = 32;

/// A persistent vector of values.
#[derive(Clone, Default)]
pub struct PVector {
    repr: Repr,
}

enum Repr {
    Small(Vec<Value>),
    /// A big vector one owner built by appending (`mapv`, `into`, `conj` in a `reduce`, a
    /// JSON array): a plain `Vec`, so each item added is one write, where a tree's
    /// `push_back` takes a locked count check on its last chunk. Its first copy makes the
    /// tree (kept here, so later copies share it) and becomes `Large`; a change at the
    /// front settles it into `Large` first.
    Flat(Box<Flat>),
    /// Boxed: a tree's root is several pointers wide, and most vectors are small.
    Large(Box<imbl::Vector<Value>>),
    /// A big vector's items from the given index on: what `rest`, `next` and `[x & more]`
    /// make of a big vector something else still holds. The tree is shared, not cut (a
    /// cut copies the chunk it falls in), so walking a held vector with `rest` costs no
    /// copy per step. Any change but taking the front item settles it into `Large`.
    Tail(Box<(imbl::Vector<Value>, usize)>),
}

/// A [`Repr::Flat`] vector: its items, and its tree once a copy was made.
struct Flat {
    items: Vec<Value>,
    tree: std::sync::OnceLock<imbl::Vector<Value>>,
}

impl Flat {
    fn new(items: Vec<Value>) -> Box<Flat> {
        Box::new(Flat { items, tree: std::sync::OnceLock::new() })
    }

    /// The items as a tree, made once.
    fn tree(&self) -> &imbl::Vector<Value> {
        self.tree.get_or_init(|| self.items.iter().cloned().collect())
    }
}

impl Clone for Repr {
    fn clone(&self) -> Self {
        match self {
            Repr::Small(v) => Repr::Small(v.clone()),
            // copying the items one by one for every copy would make a loop that changes
            // copies of one big vector quadratic: copies share its tree
            Repr::Flat(f) => Repr::Large(Box::new(f.tree().clone())),
            Repr::Large(v) => Repr::Large(v.clone()),
            Repr::Tail(t) => Repr::Tail(t.clone()),
        }
    }
}

/// A vector to change in place: a [`Repr::Tail`] settled first.
enum Edit<'a> {
    Small(&'a mut Vec<Value>),
    Large(&'a mut imbl::Vector<Value>),
}

impl Drop for PVector {
    /// Items are dropped by `release`, so a vector nested any depth deep drops on any thread.
    #[inline]
    fn drop(&mut self) {
        crate::release::release(std::mem::take(&mut self.repr));
    }
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Small(Vec::new())
    }
}

impl PVector {
    /// An empty vector.
    pub fn new() -> Self {
        PVector::default()
    }

    /// A vector of exactly these items (kept flat when small, without a copy).
    pub(crate) fn from_vec(v: Vec<Value>) -> Self {
        if v.len() <= SMALL_VEC { PVector { repr: Repr::Small(v) } } else { PVector { repr: Repr::Flat(Flat::new(v)) } }
    }

    /// Number of items.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Small(v) => v.len(),
            Repr::Flat(f) => f.items.len(),
            Repr::Large(v) => v.len(),
            Repr::Tail(t) => t.0.len() - t.1,
        }
    }

    /// True when empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The item at `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&Value> {
        match &self.repr {
            Repr::Small(v) => v.get(i),
            Repr::Flat(f) => f.items.get(i),
            Repr::Large(v) => v.get(i),
            Repr::Tail(t) => t.1.checked_add(i).and_then(|i| t.0.get(i)),
        }
    }

    /// The item at `i`, mutable.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut Value> {
        match self.edit() {
            Edit::Small(v) => v.get_mut(i),
            Edit::Large(v) => v.get_mut(i),
        }
    }

    /// The first item.
    pub fn front(&self) -> Option<&Value> {
        self.get(0)
    }

    /// The last item.
    pub fn back(&self) -> Option<&Value> {
        match &self.repr {
            Repr::Small(v) => v.last(),
            Repr::Flat(f) => f.items.last(),
            Repr::Large(v) => v.back(),
            Repr::Tail(t) if t.1 < t.0.len() => t.0.back(),
            Repr::Tail(_) => None,
        }
    }

    /// The last item.
    pub fn last(&self) -> Option<&Value> {
        self.back()
    }

    /// Items in order.
    #[inline]
    pub fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Small(v) => Iter(IterRepr::Small(v.iter())),
            Repr::Flat(f) => Iter(IterRepr::Small(f.items.iter())),
            Repr::Large(v) => Iter(IterRepr::Large(v.iter())),
            Repr::Tail(t) => Iter(IterRepr::Large(t.0.focus().narrow(t.1..).into_iter())),
        }
    }

    /// The representation to change in place: a tail is settled into a tree of its own
    /// items first, and a flat vector that was copied changes as its tree from now on
    /// (so a vector copied and changed in turn makes its tree once, not at every copy).
    fn edit(&mut self) -> Edit<'_> {
        let settled = match &mut self.repr {
            Repr::Tail(t) => Some(Repr::Large(Box::new(t.0.skip(t.1)))),
            Repr::Flat(f) => f.tree.take().map(|tree| Repr::Large(Box::new(tree))),
            _ => None,
        };
        if let Some(own) = settled {
            crate::release::release(std::mem::replace(&mut self.repr, own));
        }
        match &mut self.repr {
            Repr::Small(v) => Edit::Small(v),
            // never copied: no tree to keep in step
            Repr::Flat(f) => Edit::Small(&mut f.items),
            Repr::Large(v) => Edit::Large(v),
            // settled above
            Repr::Tail(t) => Edit::Large(&mut t.0),
        }
    }

    /// A small vector about to get another item at its end becomes flat past
    /// [`SMALL_VEC`] items.
    fn grow(&mut self) {
        if let Repr::Small(v) = &mut self.repr
            && v.len() >= SMALL_VEC
        {
            self.repr = Repr::Flat(Flat::new(std::mem::take(v)));
        }
    }

    /// Before a change at the front or the middle: a small vector past [`SMALL_VEC`] items
    /// and a flat one become trees (a `Vec` moves every item for it).
    fn settle(&mut self) {
        let tree = match &mut self.repr {
            Repr::Small(v) if v.len() >= SMALL_VEC => std::mem::take(v).into_iter().collect(),
            Repr::Flat(f) => match f.tree.take() {
                Some(tree) => tree,
                None => std::mem::take(&mut f.items).into_iter().collect(),
            },
            _ => return,
        };
        crate::release::release(std::mem::replace(&mut self.repr, Repr::Large(Box::new(tree))));
    }

    /// Appends an item.
    pub fn push_back(&mut self, x: Value) {
        self.grow();
        // a flat vector never copied, appended to by its one owner (it grows by a quarter,
        // not double: it may be the program's largest value, and its spare room counts in
        // the peak memory)
        if let Repr::Flat(f) = &mut self.repr
            && f.tree.get().is_none()
        {
            if f.items.len() == f.items.capacity() {
                f.items.reserve_exact(f.items.len() / 4);
            }
            return f.items.push(x);
        }
        match self.edit() {
            Edit::Small(v) => v.push(x),
            Edit::Large(v) => v.push_back(x),
        }
    }

    /// Prepends an item.
    pub fn push_front(&mut self, x: Value) {
        self.settle();
        match self.edit() {
            Edit::Small(v) => v.insert(0, x),
            Edit::Large(v) => v.push_front(x),
        }
    }

    /// Removes the last item.
    pub fn pop_back(&mut self) -> Option<Value> {
        match self.edit() {
            Edit::Small(v) => v.pop(),
            Edit::Large(v) => v.pop_back(),
        }
    }

    /// Removes the first item.
    pub fn pop_front(&mut self) -> Option<Value> {
        self.settle();
        match &mut self.repr {
            Repr::Small(v) if v.is_empty() => None,
            Repr::Small(v) => Some(v.remove(0)),
            Repr::Large(v) => v.pop_front(),
            // settled above
            Repr::Flat(f) if f.items.is_empty() => None,
            Repr::Flat(f) => Some(f.items.remove(0)),
            // the tree stays shared: its item is copied out, not cut off
            Repr::Tail(t) => {
                let first = t.0.get(t.1).cloned();
                if first.is_some() {
                    t.1 += 1;
                }
                first
            }
        }
    }

    /// Replaces the item at `i` (which must exist), returning the old one.
    pub fn set(&mut self, i: usize, x: Value) -> Value {
        match self.edit() {
            Edit::Small(v) => match v.get_mut(i) {
                Some(slot) => std::mem::replace(slot, x),
                None => Value::Nil,
            },
            Edit::Large(v) if i < v.len() => v.set(i, x),
            Edit::Large(_) => Value::Nil,
        }
    }

    /// Inserts at `i` (at most `len`).
    pub fn insert(&mut self, i: usize, x: Value) {
        if i >= self.len() {
            return self.push_back(x);
        }
        self.settle();
        match self.edit() {
            Edit::Small(v) => v.insert(i.min(v.len()), x),
            Edit::Large(v) => {
                let i = i.min(v.len());
                v.insert(i, x)
            }
        }
    }

    /// Removes the item at `i` (which must exist).
    pub fn remove(&mut self, i: usize) -> Value {
        if i + 1 == self.len() {
            return self.pop_back().unwrap_or_default();
        }
        self.settle();
        match self.edit() {
            Edit::Small(v) if i < v.len() => v.remove(i),
            Edit::Large(v) if i < v.len() => v.remove(i),
            _ => Value::Nil,
        }
    }

    /// Splits at `i`: `self` keeps `[0, i)`, the result holds the rest.
    pub fn split_off(&mut self, i: usize) -> PVector {
        match self.edit() {
            Edit::Small(v) => PVector::from_vec(v.split_off(i.min(v.len()))),
            Edit::Large(v) => {
                let i = i.min(v.len());
                PVector { repr: Repr::Large(Box::new(v.split_off(i))) }
            }
        }
    }

    /// Appends every item of `other`.
    pub fn append(&mut self, other: PVector) {
        if let (Edit::Large(a), Repr::Large(b)) = (self.edit(), &other.repr) {
            a.append((**b).clone());
            return;
        }
        for x in other {
            self.push_back(x);
        }
    }

    /// Keeps the first `n` items.
    pub fn truncate(&mut self, n: usize) {
        match self.edit() {
            Edit::Small(v) => v.truncate(n),
            Edit::Large(v) => {
                if n < v.len() {
                    v.truncate(n)
                }
            }
        }
    }

    /// Removes every item.
    pub fn clear(&mut self) {
        self.repr = Repr::Small(Vec::new());
    }

    /// The items after the first `n`.
    pub fn skip(&self, n: usize) -> PVector {
        let (tree, start) = match &self.repr {
            Repr::Small(v) => return PVector::from_vec(v.get(n..).map(<[Value]>::to_vec).unwrap_or_default()),
            Repr::Flat(f) if f.items.len().saturating_sub(n) <= SMALL_VEC => {
                return PVector::from_vec(f.items.get(n..).map(<[Value]>::to_vec).unwrap_or_default());
            }
            // a big remainder is a tail of the tree (made once), as for `Large`
            Repr::Flat(f) => (f.tree(), 0),
            Repr::Large(v) => (&**v, 0),
            Repr::Tail(t) => (&t.0, t.1),
        };
        let start = start.saturating_add(n).min(tree.len());
        if tree.len() - start > SMALL_VEC {
            // the tree is shared, not cut: a big remainder is a tail of it
            PVector { repr: Repr::Tail(Box::new((tree.clone(), start))) }
        } else {
            tree.focus().narrow(start..).into_iter().cloned().collect()
        }
    }

    /// The first `n` items.
    pub fn take(&self, n: usize) -> PVector {
        match &self.repr {
            Repr::Small(v) => PVector::from_vec(v[..n.min(v.len())].to_vec()),
            Repr::Flat(f) if n <= SMALL_VEC => PVector::from_vec(f.items[..n.min(f.items.len())].to_vec()),
            Repr::Flat(f) => PVector { repr: Repr::Large(Box::new(f.tree().take(n.min(f.items.len())))) },
            Repr::Large(v) => PVector { repr: Repr::Large(Box::new(v.take(n.min(v.len())))) },
            Repr::Tail(t) => {
                let n = n.min(t.0.len() - t.1);
                PVector { repr: Repr::Large(Box::new(t.0.skip(t.1).take(n))) }
            }
        }
    }
}

impl std::fmt::Debug for PVector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Index<usize> for PVector {
    type Output = Value;
    fn index(&self, i: usize) -> &Value {
        match &self.repr {
            Repr::Small(v) => &v[i],
            Repr::Flat(f) => &f.items[i],
            Repr::Large(v) => &v[i],
            Repr::Tail(t) => &t.0[t.1 + i],
        }
    }
}

impl FromIterator<Value> for PVector {
    fn from_iter<I: IntoIterator<Item = Value>>(iter: I) -> Self {
        let mut iter = iter.into_iter();
        let mut small: Vec<Value> = Vec::with_capacity(iter.size_hint().0.min(SMALL_VEC));
        for x in iter.by_ref() {
            small.push(x);
            if small.len() > SMALL_VEC {
                small.extend(iter);
                return PVector { repr: Repr::Flat(Flat::new(small)) };
            }
        }
        small.shrink_to_fit();
        PVector { repr: Repr::Small(small) }
    }
}

impl Extend<Value> for PVector {
    fn extend<I: IntoIterator<Item = Value>>(&mut self, iter: I) {
        for x in iter {
            self.push_back(x);
        }
    }
}

/// Borrowing iterator.
#[derive(Clone)]
pub struct Iter<'a>(IterRepr<'a>);

/// The iterator of each representation (kept private: the tree is `imbl`'s).
#[derive(Clone)]
enum IterRepr<'a> {
    Small(std::slice::Iter<'a, Value>),
    Large(imbl::vector::Iter<'a, Value, imbl::shared_ptr::DefaultSharedPtr>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a Value;
    #[inline]
    fn next(&mut self) -> Option<&'a Value> {
        match &mut self.0 {
            IterRepr::Small(it) => it.next(),
            IterRepr::Large(it) => it.next(),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IterRepr::Small(it) => it.size_hint(),
            IterRepr::Large(it) => it.size_hint(),
        }
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            IterRepr::Small(it) => it.next_back(),
            IterRepr::Large(it) => it.next_back(),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a PVector {
    type Item = &'a Value;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// Owning iterator.
pub struct IntoIter(IntoIterRepr);

/// The owning iterator of each representation (kept private: the tree is `imbl`'s).
enum IntoIterRepr {
    Small(std::vec::IntoIter<Value>),
    Large(imbl::vector::ConsumingIter<Value, imbl::shared_ptr::DefaultSharedPtr>),
}

impl Iterator for IntoIter {
    type Item = Value;
    #[inline]
    fn next(&mut self) -> Option<Value> {
        match &mut self.0 {
            IntoIterRepr::Small(it) => it.next(),
            IntoIterRepr::Large(it) => it.next(),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IntoIterRepr::Small(it) => it.size_hint(),
            IntoIterRepr::Large(it) => it.size_hint(),
        }
    }
}

impl DoubleEndedIterator for IntoIter {
    fn next_back(&mut self) -> Option<Value> {
        match &mut self.0 {
            IntoIterRepr::Small(it) => it.next_back(),
            IntoIterRepr::Large(it) => it.next_back(),
        }
    }
}

impl ExactSizeIterator for IntoIter {}

impl PVector {
    /// The items as a plain `Vec` (a small vector's own, without a copy).
    pub(crate) fn into_vec(mut self) -> Vec<Value> {
        match std::mem::take(&mut self.repr) {
            Repr::Small(v) => v,
            Repr::Flat(mut f) => std::mem::take(&mut f.items),
            Repr::Large(v) => (*v).into_iter().collect(),
            Repr::Tail(t) => t.0.focus().narrow(t.1..).into_iter().cloned().collect(),
        }
    }
}

impl IntoIterator for PVector {
    type Item = Value;
    type IntoIter = IntoIter;
    fn into_iter(mut self) -> IntoIter {
        match std::mem::take(&mut self.repr) {
            Repr::Small(v) => IntoIter(IntoIterRepr::Small(v.into_iter())),
            Repr::Flat(mut f) => IntoIter(IntoIterRepr::Small(std::mem::take(&mut f.items).into_iter())),
            Repr::Large(v) => IntoIter(IntoIterRepr::Large((*v).into_iter())),
            Repr::Tail(t) => IntoIter(IntoIterRepr::Large(t.0.skip(t.1).into_iter())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &PVector) -> Vec<i64> {
        v.iter().map(|x| if let Value::Int(i) = x { *i } else { -1 }).collect()
    }

    #[test]
    fn flat_vectors_make_their_tree_once() {
        let mut v: PVector = (0..100).map(Value::Int).collect();
        assert!(matches!(v.repr, Repr::Flat(_)));
        // one owner appending: still flat
        v.push_back(Value::Int(100));
        v.pop_back();
        assert!(matches!(v.repr, Repr::Flat(_)));
        // a copy shares the tree the original keeps...
        let copy = v.clone();
        assert!(matches!(copy.repr, Repr::Large(_)));
        assert!(matches!(&v.repr, Repr::Flat(f) if f.tree.get().is_some()));
        // ...and the original, changed after that, changes as that tree: copying it
        // and changing it in turn never makes a tree again
        v.push_back(Value::Int(100));
        assert!(matches!(v.repr, Repr::Large(_)));
        assert_eq!(ints(&copy), (0..100).collect::<Vec<_>>());
        assert_eq!(ints(&v), (0..101).collect::<Vec<_>>());
        // a change at the front makes a tree first
        let mut w: PVector = (0..100).map(Value::Int).collect();
        w.push_front(Value::Int(-1));
        assert!(matches!(w.repr, Repr::Large(_)));
        assert_eq!(ints(&w)[..3], [-1, 0, 1]);
    }

    #[test]
    fn crosses_from_flat_to_tree_and_keeps_order() {
        let mut v = PVector::new();
        for i in 0..100 {
            v.push_back(Value::Int(i));
        }
        assert_eq!(ints(&v), (0..100).collect::<Vec<_>>());
        v.push_front(Value::Int(-5));
        assert_eq!(v.len(), 101);
        assert_eq!(ints(&v.take(3)), vec![-5, 0, 1]);
        assert_eq!(ints(&v.skip(99)), vec![98, 99]);
        let tail = v.split_off(100);
        assert_eq!(ints(&tail), vec![99]);
        assert_eq!(v.len(), 100);
        let collected: PVector = (0..40).map(Value::Int).collect();
        assert_eq!(collected.len(), 40);
        assert_eq!(collected[39], Value::Int(39));
        assert_eq!(ints(&collected.iter().rev().take(2).cloned().collect()), vec![39, 38]);
    }

    #[test]
    fn edits_in_place() {
        let mut v: PVector = (0..3).map(Value::Int).collect();
        assert_eq!(v.set(1, Value::Int(9)), Value::Int(1));
        v.insert(0, Value::Int(7));
        assert_eq!(ints(&v), vec![7, 0, 9, 2]);
        assert_eq!(v.remove(1), Value::Int(0));
        assert_eq!(v.pop_front(), Some(Value::Int(7)));
        assert_eq!(v.pop_back(), Some(Value::Int(2)));
        v.append((5..7).map(Value::Int).collect());
        assert_eq!(ints(&v), vec![9, 5, 6]);
        v.truncate(1);
        assert_eq!(ints(&v), vec![9]);
    }

    /// Every operation on vectors made by `skip` (tails of a shared tree among them)
    /// against a plain `Vec`, the source vector kept and checked too.
    mod model {
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Op {
            Skip(usize),
            PopFront,
            PopBack,
            PushBack(i64),
            PushFront(i64),
            Set(usize, i64),
            Insert(usize, i64),
            Remove(usize),
            SplitOff(usize),
            Append(usize),
            Truncate(usize),
            Take(usize),
            GetMut(usize, i64),
            Fork(i64),
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                3 => (0usize..80).prop_map(Op::Skip),
                3 => Just(Op::PopFront),
                1 => Just(Op::PopBack),
                1 => any::<i64>().prop_map(Op::PushBack),
                1 => any::<i64>().prop_map(Op::PushFront),
                1 => (0usize..200, any::<i64>()).prop_map(|(i, x)| Op::Set(i, x)),
                1 => (0usize..200, any::<i64>()).prop_map(|(i, x)| Op::Insert(i, x)),
                1 => (0usize..200).prop_map(Op::Remove),
                1 => (0usize..200).prop_map(Op::SplitOff),
                1 => (0usize..60).prop_map(Op::Append),
                1 => (0usize..200).prop_map(Op::Truncate),
                1 => (0usize..200).prop_map(Op::Take),
                1 => (0usize..200, any::<i64>()).prop_map(|(i, x)| Op::GetMut(i, x)),
                2 => any::<i64>().prop_map(Op::Fork),
            ]
        }

        fn same(v: &PVector, m: &[i64]) {
            assert_eq!(v.len(), m.len());
            assert_eq!(ints(v), m);
            assert_eq!(
                v.iter().rev().cloned().collect::<Vec<_>>(),
                m.iter().rev().map(|i| Value::Int(*i)).collect::<Vec<_>>()
            );
            for (i, x) in m.iter().enumerate() {
                assert_eq!(v.get(i), Some(&Value::Int(*x)));
                assert_eq!(v[i], Value::Int(*x));
            }
            assert_eq!(v.get(m.len()), None);
            assert_eq!(v.get(usize::MAX), None);
            assert_eq!(v.back(), m.last().map(|i| Value::Int(*i)).as_ref());
            assert_eq!(v.front(), m.first().map(|i| Value::Int(*i)).as_ref());
            let owned: Vec<Value> = v.clone().into_iter().collect();
            assert_eq!(owned, m.iter().map(|i| Value::Int(*i)).collect::<Vec<_>>());
            assert_eq!(v.clone().into_vec(), owned);
        }

        proptest! {
            #[test]
            fn tails_and_flat_vectors_behave_as_vectors(len in 0usize..200, ops in proptest::collection::vec(op(), 0..24)) {
                let source: PVector = (0..len as i64).map(Value::Int).collect();
                let mut v = source.clone();
                let mut m: Vec<i64> = (0..len as i64).collect();
                for op in ops {
                    match op {
                        Op::Skip(n) => {
                            v = v.skip(n);
                            m = m.get(n..).map(<[i64]>::to_vec).unwrap_or_default();
                        }
                        Op::PopFront => {
                            let got = v.pop_front();
                            let want = if m.is_empty() { None } else { Some(Value::Int(m.remove(0))) };
                            prop_assert_eq!(got, want);
                        }
                        Op::PopBack => prop_assert_eq!(v.pop_back(), m.pop().map(Value::Int)),
                        Op::PushBack(x) => {
                            v.push_back(Value::Int(x));
                            m.push(x);
                        }
                        Op::PushFront(x) => {
                            v.push_front(Value::Int(x));
                            m.insert(0, x);
                        }
                        Op::Set(i, x) if i < m.len() => {
                            prop_assert_eq!(v.set(i, Value::Int(x)), Value::Int(m[i]));
                            m[i] = x;
                        }
                        Op::Insert(i, x) => {
                            v.insert(i, Value::Int(x));
                            m.insert(i.min(m.len()), x);
                        }
                        Op::Remove(i) if i < m.len() => prop_assert_eq!(v.remove(i), Value::Int(m.remove(i))),
                        Op::SplitOff(i) => {
                            let back = v.split_off(i);
                            let mb = m.split_off(i.min(m.len()));
                            same(&back, &mb);
                        }
                        Op::Append(n) => {
                            v.append(source.skip(len.saturating_sub(n)));
                            m.extend(len.saturating_sub(n) as i64..len as i64);
                        }
                        Op::Truncate(n) => {
                            v.truncate(n);
                            m.truncate(n);
                        }
                        Op::Take(n) => same(&v.take(n), &m[..n.min(m.len())]),
                        Op::GetMut(i, x) => {
                            let got = v.get_mut(i).map(|slot| std::mem::replace(slot, Value::Int(x)));
                            prop_assert_eq!(got, m.get(i).map(|old| Value::Int(*old)));
                            if let Some(slot) = m.get_mut(i) {
                                *slot = x;
                            }
                        }
                        Op::Fork(x) => {
                            // a copy, then each side changed: neither sees the other's change
                            let mut fork = v.clone();
                            let fm = m.clone();
                            v.push_back(Value::Int(x));
                            m.push(x);
                            same(&fork, &fm);
                            fork.push_front(Value::Int(x));
                            fork.pop_back();
                            same(&v, &m);
                        }
                        Op::Set(..) | Op::Remove(_) => {}
                    }
                    same(&v, &m);
                }
                same(&source, &(0..len as i64).collect::<Vec<_>>());
            }
        }
    }
}
