mod model {
    use rune_ad::prelude::*;

    #[differentiable]
    pub(crate) fn layer(w: &Tensor<f64>, x: &Tensor<f64>) -> Tensor<f64> {
        x.matmul(w).tanh()
    }

    #[differentiable]
    pub fn loss(w: &Tensor<f64>, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
        let h = layer(w, x);
        let h2 = layer(w, &h);
        (&h2 * &h2).sum()
    }
}

fn main() {
    let w = rune_ad::Tensor::<f64>::ones(&[2, 2]);
    let x = rune_ad::Tensor::<f64>::ones(&[3, 2]);
    let _ = model::loss_grad(&w, &x);
    let _ = model::layer_jvp(&w, &x, &w, &x);
}
