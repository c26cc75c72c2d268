//! Functions returning `Result`: `?` on `try_` ops and on calls of other such functions,
//! `return Err(..)`, and every generated function returning the same error.

use rune_ad::prelude::*;

#[derive(Debug, PartialEq)]
enum ModelError {
    Shape(String),
    TooFewRows(usize),
}

impl From<rune_ad::ShapeError> for ModelError {
    fn from(e: rune_ad::ShapeError) -> Self {
        ModelError::Shape(e.to_string())
    }
}

#[differentiable]
fn flattened(x: &Tensor<f64>, #[nodiff] rows: usize) -> Result<Tensor<f64>, ModelError> {
    if rows < 2 {
        return Err(ModelError::TooFewRows(rows));
    }
    let y = x.try_reshape(&[rows, x.len() / rows])?;
    Ok(y.tanh())
}

#[differentiable]
fn fallible_loss(
    x: &Tensor<f64>,
    w: &Tensor<f64>,
    #[nodiff] rows: usize,
) -> Result<Tensor<f64>, ModelError> {
    let h = flattened(x, rows)?;
    let z = h.try_matmul(w)?;
    Ok(z.square().sum())
}

#[test]
fn results_flow_through_every_variant() {
    let x = Tensor::from_vec(vec![0.1, -0.2, 0.3, 0.4], &[4]);
    let w = Tensor::from_vec(vec![0.5, -1.0], &[2, 1]);
    let (value, (gx, gw)) = fallible_loss_value_and_grad(&x, &w, 2).expect("shapes agree");
    assert_eq!(value.item(), fallible_loss(&x, &w, 2).unwrap().item());
    // By hand: h = tanh(x as 2×2), z = h w, f = Σ z²; df/dw = hᵀ 2z, df/dx = (2z wᵀ) (1 - h²).
    let h: Vec<f64> = x.to_vec().iter().map(|v| v.tanh()).collect();
    let z = [h[0] * 0.5 - h[1], h[2] * 0.5 - h[3]];
    let want_gw = [
        2.0 * (h[0] * z[0] + h[2] * z[1]),
        2.0 * (h[1] * z[0] + h[3] * z[1]),
    ];
    for (g, w) in gw.to_vec().iter().zip(want_gw) {
        assert!((g - w).abs() < 1e-12);
    }
    let want_gx = [
        2.0 * z[0] * 0.5 * (1.0 - h[0] * h[0]),
        -2.0 * z[0] * (1.0 - h[1] * h[1]),
        2.0 * z[1] * 0.5 * (1.0 - h[2] * h[2]),
        -2.0 * z[1] * (1.0 - h[3] * h[3]),
    ];
    for (g, w) in gx.to_vec().iter().zip(want_gx) {
        assert!((g - w).abs() < 1e-12);
    }
    let (_, t) = fallible_loss_jvp(
        &x,
        &w,
        2,
        &Tensor::zeros(&[4]),
        &Tensor::from_vec(vec![1.0, 0.0], &[2, 1]),
    )
    .expect("shapes agree");
    assert!((t.item() - want_gw[0]).abs() < 1e-12);
    // Errors come back from every variant.
    assert_eq!(
        fallible_loss_grad(&x, &w, 1).unwrap_err(),
        ModelError::TooFewRows(1)
    );
    assert!(matches!(
        fallible_loss_value_and_grad(&x, &w, 3),
        Err(ModelError::Shape(_))
    ));
    assert!(matches!(
        fallible_loss_vjp(&x, &w, 3, &Tensor::scalar(1.0)),
        Err(ModelError::Shape(_))
    ));
}
