//! Functions of numbers that return an array (`fn rhs(x: f64, y: f64) -> [f64; 2]`): their
//! entry points take and give arrays (the value, `f_jvp`'s tangent, `f_vjp`'s cotangent), while
//! the generated passes carry the elements as a tuple, as for a function returning `(f64, f64)`.
//! These turn one into the other at the entry points.

/// A tuple of `N` values of one type, as the array of them.
pub trait IntoArray {
    /// `[T; N]`.
    type Array;
    /// The array of the tuple's elements, in order.
    fn into_array(self) -> Self::Array;
}

/// An array's elements, borrowed, as the tuple of references a pullback takes.
pub trait ArrayRefs<'a> {
    /// `(&T, &T, ..)`.
    type Refs;
    /// The tuple of references to the elements, in order.
    fn refs(&'a self) -> Self::Refs;
}

macro_rules! arrays {
    ($($n:literal: ($($i:tt)+);)*) => {$(
        impl<T> IntoArray for ($(arrays!(@ty $i T),)+) {
            type Array = [T; $n];
            fn into_array(self) -> [T; $n] {
                [$(self.$i),+]
            }
        }

        impl<'a, T: 'a> ArrayRefs<'a> for [T; $n] {
            type Refs = ($(arrays!(@ty $i &'a T),)+);
            fn refs(&'a self) -> Self::Refs {
                ($(&self[$i],)+)
            }
        }
    )*};
    (@ty $i:tt $t:ty) => { $t };
}

arrays! {
    2: (0 1);
    3: (0 1 2);
    4: (0 1 2 3);
    5: (0 1 2 3 4);
    6: (0 1 2 3 4 5);
}

/// The value (or tangent) of a function returning an array, from its tuple.
#[inline]
pub fn array_value<V: IntoArray>(value: V) -> V::Array {
    value.into_array()
}

/// The cotangent of a function returning an array, as its pullback takes it.
#[inline]
pub fn array_cotangent<'a, A: ArrayRefs<'a>>(cotangent: &'a A) -> A::Refs {
    cotangent.refs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuples_and_arrays_keep_their_order() {
        assert_eq!(array_value((1.0, 2.0, 3.0)), [1.0, 2.0, 3.0]);
        let a = [4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
        let (p, q, r, s, t, u) = array_cotangent(&a);
        assert_eq!([*p, *q, *r, *s, *t, *u], a);
    }
}
