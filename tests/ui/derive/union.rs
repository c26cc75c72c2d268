use rune_ad::prelude::*;

#[derive(Clone, Copy, Differentiable)]
union Bits {
    f: f64,
    u: u64,
}

fn main() {}
