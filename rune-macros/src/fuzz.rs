//! A mutation fuzzer for the expansion: every input yields code or a spanned error, never a
//! panic. The corpus is every `#[differentiable]` function in the repository's tests and
//! examples; each case deletes, duplicates or swaps tokens of one of them (deterministically,
//! from a seed). `cargo test -p rune-macros fuzz` runs a few thousand cases;
//! `RUNE_FUZZ_CASES=1000000 cargo test --release -p rune-macros fuzz` runs at length.

use proc_macro2::{TokenStream, TokenTree};

use crate::expand;

/// The functions of the corpus, as token streams.
fn corpus() -> Vec<TokenStream> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for dir in ["tests", "examples"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let Ok(file) = syn::parse_file(&text) else {
                continue;
            };
            for item in file.items {
                if let syn::Item::Fn(mut f) = item {
                    if f.attrs.iter().any(|a| a.path().is_ident("differentiable")) {
                        f.attrs.retain(|a| !a.path().is_ident("differentiable"));
                        out.push(quote::quote!(#f));
                    }
                }
            }
        }
    }
    out
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// `tokens` with one mutation at a random depth: a token deleted, duplicated, or swapped with
/// its neighbour.
fn mutate(tokens: TokenStream, rng: &mut Rng) -> TokenStream {
    let mut list: Vec<TokenTree> = tokens.into_iter().collect();
    if list.is_empty() {
        return TokenStream::new();
    }
    let at = rng.below(list.len());
    // Half the time, go inside a group instead.
    if let TokenTree::Group(g) = &list[at] {
        if rng.below(2) == 0 {
            let mut inner = proc_macro2::Group::new(g.delimiter(), mutate(g.stream(), rng));
            inner.set_span(g.span());
            list[at] = TokenTree::Group(inner);
            return list.into_iter().collect();
        }
    }
    match rng.below(3) {
        0 => {
            list.remove(at);
        }
        1 => {
            let t = list[at].clone();
            list.insert(at, t);
        }
        _ if at + 1 < list.len() => list.swap(at, at + 1),
        _ => {}
    }
    list.into_iter().collect()
}

#[test]
fn fuzz_expansion_never_panics() {
    // On the macro's own deep stack, as rustc runs it: the corpus holds the deep bodies of
    // tests/long_bodies.rs, and parsing them and their expansions recurses as deep.
    crate::on_deep_stack(fuzz_on_this_stack);
}

fn fuzz_on_this_stack() {
    let corpus = corpus();
    assert!(corpus.len() > 100, "corpus of {} functions", corpus.len());
    let cases: usize = std::env::var("RUNE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    let mut rng = Rng(0x5EED_F00D);
    // Every corpus function expands as it is, and its expansion parses as Rust.
    for f in &corpus {
        let out = expand::differentiable(TokenStream::new(), f.clone());
        syn::parse2::<syn::File>(out).expect("the expansion of a corpus function parses");
    }
    for case in 0..cases {
        let f = corpus[rng.below(corpus.len())].clone();
        let mut input = f;
        for _ in 0..=rng.below(3) {
            input = mutate(input, &mut rng);
        }
        let shown = input.to_string();
        let result = std::panic::catch_unwind(|| expand::differentiable(TokenStream::new(), input));
        assert!(
            result.is_ok(),
            "case {case}: the macro panicked on\n{shown}"
        );
    }
}
