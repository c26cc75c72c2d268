//! The expansion grows linearly with the body: a chain of `let`s four times as long expands to
//! four times the code (docs/guarantees.md, "Long and deep bodies").

use proc_macro2::{TokenStream, TokenTree};

use crate::expand;

/// `fn f(x: &Tensor<f64>) -> Tensor<f64>` over a chain of `lets` statements.
fn chain(lets: usize) -> TokenStream {
    let mut s = String::from("fn f(x: &Tensor<f64>) -> Tensor<f64> { let v0 = x * 1.0; ");
    for i in 1..lets {
        s.push_str(&format!("let v{i} = &v{} * 1.0001 + 0.5; ", i - 1));
    }
    s.push_str(&format!("v{} }}", lets - 1));
    s.parse().expect("the chain parses")
}

/// The number of tokens, a group's delimiters counting as one.
fn tokens(stream: TokenStream) -> usize {
    let mut count = 0;
    let mut streams = vec![stream];
    while let Some(stream) = streams.pop() {
        for t in stream {
            count += 1;
            if let TokenTree::Group(g) = t {
                streams.push(g.stream());
            }
        }
    }
    count
}

/// Expansion tokens per source token.
fn growth(lets: usize) -> f64 {
    let source = chain(lets);
    let n = tokens(source.clone());
    let out = crate::on_deep_stack(|| expand::differentiable(TokenStream::new(), source));
    tokens(out) as f64 / n as f64
}

#[test]
fn the_expansion_grows_linearly_with_the_body() {
    let short = growth(250);
    let long = growth(1000);
    // Long bodies have their lets gathered (`emit::tokens::gather_lets`), a few tokens more a let.
    assert!(
        long <= short * 1.1,
        "a body four times as long expands {long:.1} tokens a token against {short:.1}"
    );
    // Fused, the chain is one region: the function as written, and its value, tangent and
    // adjoint closures, each value read once written into its reader (3.2 tokens a token at
    // 1,000 `let`s; 33 op by op).
    let bound = if cfg!(feature = "no-fusion") {
        40.0
    } else {
        4.0
    };
    assert!(
        long <= bound,
        "{long:.1} tokens of expansion a token of source"
    );
}
