//! Maps of parameters: `BTreeMap<K, D>` and `HashMap<K, D>` of [`Differentiable`] values are
//! structures too, whose gradients are maps with the same keys. Their leaves come in the order of
//! their keys, so that two maps with the same keys (a model and its gradient, built apart) walk
//! their leaves side by side whatever the hash map's own order; a leaf's path is
//! `prefix.key`.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Display;
use std::hash::{BuildHasher, Hash};

use crate::model::Differentiable;
use crate::tensor::Tensor;

/// The path of the part at `key` in a map whose path is `prefix`.
fn key_path(prefix: &str, key: &impl Display) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// The entries of a map sorted by key.
fn sorted<'m, K: Ord + 'm, V>(entries: impl Iterator<Item = (&'m K, V)>) -> Vec<(&'m K, V)> {
    let mut entries: Vec<_> = entries.collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

/// `map[key] += alpha * other[key]` for every key, after checking that both maps have the same
/// keys (a gradient of the map's own type has them).
fn axpy_by_key<'m, K, D>(
    parts: impl Iterator<Item = (&'m K, &'m mut D)>,
    len: usize,
    alpha: D::Elem,
    other_len: usize,
    other: impl Fn(&K) -> Option<&'m D>,
) where
    K: Display + 'm,
    D: Differentiable + 'm,
{
    assert_eq!(
        len, other_len,
        "rune-ad: adding two maps of parameters with different keys ({len} and {other_len} entries)"
    );
    for (key, part) in parts {
        let o = other(key)
            .unwrap_or_else(|| panic!("rune-ad: the other map of parameters has no key `{key}`"));
        part.axpy(alpha, o);
    }
}

/// A map of parameters by name: its leaves are its values' leaves, in the order of the keys.
impl<K, D> Differentiable for BTreeMap<K, D>
where
    K: Ord + Clone + Display,
    D: Differentiable,
{
    type Elem = D::Elem;
    fn zeros_like(&self) -> Self {
        self.iter()
            .map(|(k, d)| (k.clone(), d.zeros_like()))
            .collect()
    }
    fn zero_tangent(&self) -> Self {
        self.iter()
            .map(|(k, d)| (k.clone(), d.zero_tangent()))
            .collect()
    }
    fn as_tangent(&self) -> Self {
        self.iter()
            .map(|(k, d)| (k.clone(), d.as_tangent()))
            .collect()
    }
    fn leaves(&self) -> Vec<&Tensor<D::Elem>> {
        self.values().flat_map(D::leaves).collect()
    }
    fn leaves_mut(&mut self) -> Vec<&mut Tensor<D::Elem>> {
        self.values_mut().flat_map(D::leaves_mut).collect()
    }
    fn leaf_paths(&self, prefix: &str) -> Vec<String> {
        self.iter()
            .flat_map(|(k, d)| d.leaf_paths(&key_path(prefix, k)))
            .collect()
    }
    fn buffers(&self, prefix: &str) -> Vec<(String, &Tensor<D::Elem>)> {
        self.iter()
            .flat_map(|(k, d)| d.buffers(&key_path(prefix, k)))
            .collect()
    }
    fn buffers_mut(&mut self, prefix: &str) -> Vec<(String, &mut Tensor<D::Elem>)> {
        self.iter_mut()
            .flat_map(|(k, d)| d.buffers_mut(&key_path(prefix, k)))
            .collect()
    }
    /// # Panics
    /// When the two maps' keys differ, or their leaves' shapes.
    fn axpy(&mut self, alpha: D::Elem, other: &Self) {
        let len = self.len();
        axpy_by_key(self.iter_mut(), len, alpha, other.len(), |k| other.get(k));
    }
}

/// A hash map of parameters by name: as a `BTreeMap`, its leaves in the order of the keys (not
/// the hash map's own order, which differs between two maps with the same keys).
impl<K, D, S> Differentiable for HashMap<K, D, S>
where
    K: Ord + Hash + Clone + Display,
    D: Differentiable,
    S: BuildHasher + Clone,
{
    type Elem = D::Elem;
    fn zeros_like(&self) -> Self {
        let mut out = self.clone();
        out.values_mut().for_each(|d| *d = d.zeros_like());
        out
    }
    fn zero_tangent(&self) -> Self {
        let mut out = self.clone();
        out.values_mut().for_each(|d| *d = d.zero_tangent());
        out
    }
    fn as_tangent(&self) -> Self {
        let mut out = self.clone();
        out.values_mut().for_each(|d| *d = d.as_tangent());
        out
    }
    fn leaves(&self) -> Vec<&Tensor<D::Elem>> {
        sorted(self.iter())
            .into_iter()
            .flat_map(|(_, d)| d.leaves())
            .collect()
    }
    fn leaves_mut(&mut self) -> Vec<&mut Tensor<D::Elem>> {
        sorted(self.iter_mut())
            .into_iter()
            .flat_map(|(_, d)| d.leaves_mut())
            .collect()
    }
    fn leaf_paths(&self, prefix: &str) -> Vec<String> {
        sorted(self.iter())
            .into_iter()
            .flat_map(|(k, d)| d.leaf_paths(&key_path(prefix, k)))
            .collect()
    }
    fn buffers(&self, prefix: &str) -> Vec<(String, &Tensor<D::Elem>)> {
        sorted(self.iter())
            .into_iter()
            .flat_map(|(k, d)| d.buffers(&key_path(prefix, k)))
            .collect()
    }
    fn buffers_mut(&mut self, prefix: &str) -> Vec<(String, &mut Tensor<D::Elem>)> {
        sorted(self.iter_mut())
            .into_iter()
            .flat_map(|(k, d)| d.buffers_mut(&key_path(prefix, k)))
            .collect()
    }
    /// # Panics
    /// When the two maps' keys differ, or their leaves' shapes.
    fn axpy(&mut self, alpha: D::Elem, other: &Self) {
        let len = self.len();
        axpy_by_key(self.iter_mut(), len, alpha, other.len(), |k| other.get(k));
    }
}

/// A map whose part at a key the backward pass of `#[differentiable]` code adds a gradient to.
#[doc(hidden)]
pub trait MapPartMut<Q: ?Sized> {
    /// The type of the map's values.
    type Part;
    /// The value at `key`, which the forward pass read.
    fn part_at_mut(&mut self, key: &Q) -> Option<&mut Self::Part>;
}

impl<K: Ord + Borrow<Q>, Q: Ord + ?Sized, V> MapPartMut<Q> for BTreeMap<K, V> {
    type Part = V;
    fn part_at_mut(&mut self, key: &Q) -> Option<&mut V> {
        self.get_mut(key)
    }
}

impl<K, Q, V, S> MapPartMut<Q> for HashMap<K, V, S>
where
    K: Eq + Hash + Borrow<Q>,
    Q: Eq + Hash + ?Sized,
    S: BuildHasher,
{
    type Part = V;
    fn part_at_mut(&mut self, key: &Q) -> Option<&mut V> {
        self.get_mut(key)
    }
}

/// The part at `key` of a map in a structure's gradient (a copy of the parameter, so it holds
/// every key the forward pass read).
#[doc(hidden)]
pub fn map_part_mut<'m, M: MapPartMut<Q>, Q: ?Sized>(map: &'m mut M, key: &Q) -> &'m mut M::Part {
    map.part_at_mut(key)
        .expect("rune-ad: a gradient of a map of parameters lacks a key its parameter has")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: &[f64]) -> Tensor<f64> {
        Tensor::from_vec(v.to_vec(), &[v.len()])
    }

    #[test]
    fn hash_map_leaves_follow_the_keys() {
        let mut a: HashMap<String, Tensor<f64>> = HashMap::new();
        let mut b: HashMap<String, Tensor<f64>> = HashMap::new();
        for k in ["c", "a", "b", "e", "d"] {
            a.insert(k.to_owned(), t(&[k.as_bytes()[0] as f64]));
        }
        for k in ["d", "e", "b", "a", "c"] {
            b.insert(k.to_owned(), t(&[1.0]));
        }
        assert_eq!(a.leaf_paths("m"), ["m.a", "m.b", "m.c", "m.d", "m.e"]);
        let first: Vec<f64> = a.leaves().iter().map(|l| l.to_vec()[0]).collect();
        assert_eq!(first, [97.0, 98.0, 99.0, 100.0, 101.0]);
        let sum = a.add(&b);
        assert_eq!(sum["c"].to_vec(), [100.0]);
        assert_eq!(b.leaf_paths(""), ["a", "b", "c", "d", "e"]);
    }

    #[test]
    #[should_panic(expected = "no key `a`")]
    fn adding_maps_with_other_keys_panics() {
        let a = BTreeMap::from([("a".to_owned(), t(&[1.0]))]);
        let b = BTreeMap::from([("z".to_owned(), t(&[1.0]))]);
        let _ = a.add(&b);
    }
}
