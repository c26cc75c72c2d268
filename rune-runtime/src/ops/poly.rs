//! `polyval`: a polynomial evaluated at every element of a tensor by Horner's rule, as NumPy's
//! `np.polyval(p, x)` and `jnp.polyval`, and its rules.
//!
//! A polynomial of degree `m − 1` written as `m` steps of `y = y·x + pₖ` over tensors costs `m`
//! ops and, in reverse mode, `m` residuals; as one op it is one pass over the points per
//! coefficient (the points a tile at a time in registers), and its rules are two more such
//! passes. The derivative in `x` is the derivative polynomial's value, accumulated beside the
//! value (`d = d·x + y`); the derivative in `pₖ` is `x^(m−1−k)`, so the cotangent of the
//! coefficients is `Σᵢ ḡᵢ xᵢ^(m−1−k)`, powers built up from the constant term's.

use crate::element::Element;
use crate::error::{panicking_twin, ShapeError};
use crate::tensor::Tensor;
use crate::vmath::vectorised;

/// The points are taken this many at a time through every coefficient, held in vector
/// registers (eight AVX2 registers of `f64`): each coefficient then costs a multiply and an
/// add per register, with no load or store, and the tile's independent chains hide the
/// latency of each.
const TILE: usize = 32;

/// `f` on each tile of `TILE` points as an array (so that its loops unroll into registers),
/// and on the shorter last tile as a slice, with the matching tile of `outs`.
#[inline(always)]
fn tiles<T: Copy>(
    xs: &[T],
    outs: &mut [T],
    full: impl Fn(&[T; TILE], &mut [T; TILE]),
    rest: impl Fn(&[T], &mut [T]),
) {
    let mut x_tiles = xs.chunks_exact(TILE);
    let mut out_tiles = outs.chunks_exact_mut(TILE);
    for (x, out) in (&mut x_tiles).zip(&mut out_tiles) {
        let x: &[T; TILE] = x.try_into().expect("a whole tile");
        let out: &mut [T; TILE] = out.try_into().expect("a whole tile");
        full(x, out);
    }
    rest(x_tiles.remainder(), out_tiles.into_remainder());
}

panicking_twin! {
    /// The polynomial with coefficients `p` (a vector, highest degree first, as NumPy's) at
    /// every element of `x`: `p[0]·x^(m−1) + p[1]·x^(m−2) + … + p[m−1]`, of `x`'s shape.
    ///
    /// ```
    /// use rune_runtime::{polyval, Tensor};
    /// let p = Tensor::from_vec(vec![2.0, -1.0, 3.0], &[3]);
    /// let x = Tensor::from_vec(vec![0.0, 1.0, 2.0], &[3]);
    /// assert_eq!(polyval(&p, &x).to_vec(), vec![3.0, 4.0, 9.0]);
    /// ```
    ///
    /// # Panics
    /// When `p` is not a vector of at least one coefficient.
    pub fn polyval<T>(p: &Tensor<T>, x: &Tensor<T>) -> Tensor<T>
    where
        T: Element,
    => try_polyval
}

/// Like [`polyval`], returning an error when `p` is not a vector of at least one coefficient.
pub fn try_polyval<T: Element>(p: &Tensor<T>, x: &Tensor<T>) -> Result<Tensor<T>, ShapeError> {
    check("polyval", p, x)?;
    let p = p.to_vec();
    let xs = points(x);
    let mut y = vec![T::zero(); xs.len()];
    vectorised(
        #[inline(always)]
        || {
            tiles(
                &xs,
                &mut y,
                #[inline(always)]
                |x, out| {
                    let mut acc = [p[0]; TILE];
                    for &c in &p[1..] {
                        for (a, &x) in acc.iter_mut().zip(x) {
                            *a = *a * x + c;
                        }
                    }
                    *out = acc;
                },
                #[inline(always)]
                |x, out| {
                    out.fill(p[0]);
                    for &c in &p[1..] {
                        for (a, &x) in out.iter_mut().zip(x) {
                            *a = *a * x + c;
                        }
                    }
                },
            );
        },
    );
    Ok(Tensor::from_vec(y, x.shape()))
}

/// The coefficients must be a vector of at least one.
fn check<T: Element>(op: &'static str, p: &Tensor<T>, x: &Tensor<T>) -> Result<(), ShapeError> {
    if p.ndim() != 1 || p.len() == 0 {
        return Err(ShapeError::new(
            op,
            format!(
                "the coefficients must be a vector of at least one, got shape {:?} (points of \
                 shape {:?})",
                p.shape(),
                x.shape()
            ),
        ));
    }
    Ok(())
}

/// `x`'s elements in row-major order, borrowed when they are laid out so.
fn points<T: Element>(x: &Tensor<T>) -> std::borrow::Cow<'_, [T]> {
    match x.as_slice() {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(x.to_vec()),
    }
}

/// The derivative polynomial `p′` at every element of `x`: `Σₖ (m−1−k) pₖ x^(m−2−k)`, by
/// Horner's rule on the value and its derivative together.
fn derivative<T: Element>(p: &[T], xs: &[T]) -> Vec<T> {
    let mut d = vec![T::zero(); xs.len()];
    vectorised(
        #[inline(always)]
        || {
            tiles(
                xs,
                &mut d,
                #[inline(always)]
                |x, out| {
                    let (mut y, mut dy) = ([p[0]; TILE], [T::zero(); TILE]);
                    for &c in &p[1..] {
                        for ((y, dy), &x) in y.iter_mut().zip(dy.iter_mut()).zip(x) {
                            *dy = *dy * x + *y;
                            *y = *y * x + c;
                        }
                    }
                    *out = dy;
                },
                #[inline(always)]
                |x, out| {
                    let mut y = [p[0]; TILE];
                    let y = &mut y[..x.len()];
                    for &c in &p[1..] {
                        for ((y, dy), &x) in y.iter_mut().zip(out.iter_mut()).zip(x) {
                            *dy = *dy * x + *y;
                            *y = *y * x + c;
                        }
                    }
                },
            );
        },
    );
    d
}

/// `Σ vᵢ`, then `vᵢ ← vᵢ xᵢ`, in one pass; eight partial sums, so that the adds are not one
/// chain (and a whole tile's adds are two registers' worth).
#[inline(always)]
fn sum_then_scale<T: Element>(v: &mut [T], xs: &[T]) -> T {
    let mut lanes = [T::zero(); 8];
    let mut v_chunks = v.chunks_exact_mut(8);
    let mut x_chunks = xs.chunks_exact(8);
    for (vs, xs) in (&mut v_chunks).zip(&mut x_chunks) {
        for ((lane, v), &x) in lanes.iter_mut().zip(vs.iter_mut()).zip(xs) {
            *lane += *v;
            *v *= x;
        }
    }
    for (v, &x) in v_chunks
        .into_remainder()
        .iter_mut()
        .zip(x_chunks.remainder())
    {
        lanes[0] += *v;
        *v *= x;
    }
    lanes.iter().fold(T::zero(), |a, &b| a + b)
}

/// The derivative rules of [`polyval`].
pub mod rules {
    use super::*;

    /// JVP of [`polyval`]: `polyval(ṗ, x) + p′(x) ẋ`, from whichever tangents there are.
    #[track_caller]
    #[must_use]
    pub fn polyval_jvp<T: Element>(
        p: &Tensor<T>,
        x: &Tensor<T>,
        dp: Option<&Tensor<T>>,
        dx: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        let from_p = dp.map(|dp| polyval(dp, x));
        let from_x = dx.map(|dx| polyval_vjp_x(dx, p, x));
        match (from_p, from_x) {
            (Some(a), Some(b)) => a + b,
            (Some(t), None) | (None, Some(t)) => t,
            (None, None) => Tensor::zeros(x.shape()),
        }
    }

    /// VJP of [`polyval`] for the coefficients: `Σᵢ ḡᵢ xᵢ^(m−1−k)` for coefficient `k`.
    #[track_caller]
    #[must_use]
    pub fn polyval_vjp_p<T: Element>(g: &Tensor<T>, p: &Tensor<T>, x: &Tensor<T>) -> Tensor<T> {
        check("polyval", p, x).unwrap_or_else(|e| panic!("{e}"));
        let m = p.len();
        let (gs, xs) = (points(g), points(x));
        let mut out = vec![T::zero(); m];
        // Each block carries `ḡᵢ xᵢʲ`, from the constant term's power up.
        let mut g_tiles = gs.chunks_exact(TILE);
        let mut x_tiles = xs.chunks_exact(TILE);
        vectorised(
            #[inline(always)]
            || {
                for (g, x) in (&mut g_tiles).zip(&mut x_tiles) {
                    let x: &[T; TILE] = x.try_into().expect("a whole tile");
                    let mut power: [T; TILE] = g.try_into().expect("a whole tile");
                    for k in (0..m).rev() {
                        out[k] += sum_then_scale(&mut power, x);
                    }
                }
                let (g, x) = (g_tiles.remainder(), x_tiles.remainder());
                let mut power = g.to_vec();
                for k in (0..m).rev() {
                    out[k] += sum_then_scale(&mut power, x);
                }
            },
        );
        Tensor::from_vec(out, &[m])
    }

    /// VJP of [`polyval`] for the points: `ḡ p′(x)`.
    #[track_caller]
    #[must_use]
    pub fn polyval_vjp_x<T: Element>(g: &Tensor<T>, p: &Tensor<T>, x: &Tensor<T>) -> Tensor<T> {
        check("polyval", p, x).unwrap_or_else(|e| panic!("{e}"));
        let d = derivative(&p.to_vec(), &points(x));
        let gs = points(g);
        let out = d.into_iter().zip(gs.iter()).map(|(d, &g)| d * g).collect();
        Tensor::from_vec(out, x.shape())
    }
}
