//! Differentiable functions reached every way Rust reaches a function: by a glob import, a
//! renamed import, a re-export and a path, at every visibility, with no warning.
#![deny(warnings)]

mod outer {
    pub mod inner {
        use rune_ad::prelude::*;

        #[differentiable]
        pub(super) fn double(x: &Tensor<f64>) -> Tensor<f64> {
            x * 2.0
        }

        #[differentiable]
        pub(in crate::outer) fn square<T: Element>(x: &Tensor<T>) -> Tensor<T> {
            x * x
        }

        #[differentiable]
        pub fn cube(x: &Tensor<f64>) -> Tensor<f64> {
            x * x * x
        }
    }

    pub use inner::cube;
    use inner::*;
    use rune_ad::prelude::*;

    #[differentiable]
    pub fn both(x: &Tensor<f64>) -> Tensor<f64> {
        (double(x) + square::<f64>(x) + inner::cube(x)).sum()
    }
}

mod user {
    use crate::outer::cube as third_power;
    use rune_ad::prelude::*;

    #[differentiable]
    pub fn total(x: &Tensor<f64>) -> Tensor<f64> {
        crate::outer::both(x) + third_power(x).sum()
    }
}

fn main() {
    let x = rune_ad::Tensor::<f64>::ones(&[2]);
    // d/dx (2x + x² + x³ + x³) = 2 + 2x + 6x² = 10 at 1.
    assert_eq!(user::total_grad(&x).to_vec(), vec![10.0, 10.0]);
}
