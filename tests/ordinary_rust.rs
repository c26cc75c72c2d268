//! Ordinary Rust inside `#[differentiable]` bodies: printing and checking macros that read
//! values (forward only), blocks of plain statements, format strings that capture names.

use rune_ad::prelude::*;

fn t64(values: &[f64], shape: &[usize]) -> Tensor<f64> {
    Tensor::from_vec(values.to_vec(), shape)
}

#[differentiable]
fn printed(x: &Tensor<f64>, #[nodiff] k: f64) -> Tensor<f64> {
    let y = x.exp() * k;
    println!("y = {:?}, k = {k}", y.to_vec());
    eprintln!("{} elements", y.len());
    assert!(y.sum().item() > 0.0, "the sum of {y:?} is not positive");
    assert_eq!(y.shape(), x.shape());
    debug_assert!(k.is_finite());
    {
        let s = k * 2.0;
        println!("{s}");
    }
    let label = format!("{:.3}", y.sum().item());
    assert!(!label.is_empty());
    let z = dbg!(&y * 2.0);
    z.sum()
}

#[test]
fn printing_and_checking_macros_read_values() {
    let x = t64(&[0.5, -1.0], &[2]);
    // f = 2 k Σ exp(x), df/dx = 2 k exp(x).
    let (value, g) = printed_value_and_grad(&x, 3.0);
    assert_eq!(value.item(), printed(&x, 3.0).item());
    let want: Vec<f64> = x.to_vec().iter().map(|v| 6.0 * v.exp()).collect();
    for (g, w) in g.to_vec().iter().zip(&want) {
        assert!((g - w).abs() < 1e-12);
    }
    let (value, t) = printed_jvp(&x, 3.0, &t64(&[1.0, 0.0], &[2]));
    assert_eq!(value.item(), printed(&x, 3.0).item());
    assert!((t.item() - want[0]).abs() < 1e-12);
}

#[test]
#[should_panic(expected = "is not positive")]
fn a_failing_assertion_in_the_forward_pass_panics() {
    let x = t64(&[0.5], &[1]);
    let _ = printed_value_and_grad(&x, -1.0);
}

#[differentiable]
fn masked_by_comparison(x: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {
    // Masks are constants by nature: comparisons may take differentiated tensors on either side.
    let c = y * 0.0 + 0.5;
    let above = c.lt(x);
    let below = x.le(y);
    (where_cond(&above, x, y) + where_cond(&below, &(x * 2.0), &c)).sum()
}

#[test]
fn comparisons_read_differentiated_arguments() {
    let x = t64(&[1.0, 0.2, 3.0], &[3]);
    let y = t64(&[2.0, 0.1, 1.0], &[3]);
    // above = x > 0.5: [t, f, t]; below = x <= y: [t, f, f].
    // f = (x0 + y1 + x2) + (2 x0 + 0.5 + 0.5): dx = [3, 0, 1], dy = [0, 1, 0].
    let (value, (gx, gy)) = masked_by_comparison_value_and_grad(&x, &y);
    assert_eq!(value.item(), masked_by_comparison(&x, &y).item());
    assert_eq!(value.item(), 1.0 + 0.1 + 3.0 + 2.0 + 1.0);
    assert_eq!(gx.to_vec(), vec![3.0, 0.0, 1.0]);
    assert_eq!(gy.to_vec(), vec![0.0, 1.0, 0.0]);
}

#[differentiable]
fn optional_steps(
    x: &Tensor<f64>,
    #[nodiff] scale: Option<f64>,
    #[nodiff] schedule: &[usize],
) -> Tensor<f64> {
    let mut h = x.clone();
    if let Some(s) = scale {
        h = &h * s;
    } else {
        h = h.sin();
    }
    let mut queue = schedule.to_vec();
    while let Some(n) = queue.pop() {
        h = &h * (n as f64);
    }
    h.sum()
}

#[test]
fn if_let_and_while_let_on_plain_values() {
    let x = t64(&[0.5, 2.0], &[2]);
    // scale 3, schedule [2, 5]: f = 30 Σ x.
    let (value, g) = optional_steps_value_and_grad(&x, Some(3.0), &[2, 5]);
    assert_eq!(value.item(), 75.0);
    assert_eq!(value.item(), optional_steps(&x, Some(3.0), &[2, 5]).item());
    assert_eq!(g.to_vec(), vec![30.0, 30.0]);
    // No scale: f = 2 Σ sin x.
    let (value, g) = optional_steps_value_and_grad(&x, None, &[2]);
    assert_eq!(value.item(), optional_steps(&x, None, &[2]).item());
    assert_eq!(g.to_vec(), vec![2.0 * 0.5f64.cos(), 2.0 * 2.0f64.cos()]);
    let (_, t) = optional_steps_jvp(&x, None, &[2], &t64(&[1.0, 0.0], &[2]));
    assert_eq!(t.item(), 2.0 * 0.5f64.cos());
}

#[differentiable]
fn raw_identifiers(x: &Tensor<f64>, #[nodiff] r#type: usize) -> Tensor<f64> {
    let r#loop = 2.0;
    let mut total = x * 0.0;
    for r#i in 0..r#type {
        total += x * (r#loop + r#i as f64);
    }
    total.sum()
}

#[test]
fn raw_identifiers_are_names_like_any_other() {
    let x = t64(&[1.0, 2.0], &[2]);
    // type = 2: total = x (2 + 3) = 5 x.
    let (value, g) = raw_identifiers_value_and_grad(&x, 2);
    assert_eq!(value.item(), 15.0);
    assert_eq!(value.item(), raw_identifiers(&x, 2).item());
    assert_eq!(g.to_vec(), vec![5.0, 5.0]);
}
