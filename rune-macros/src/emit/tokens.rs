//! Token utilities: where declarations go, how long bodies are gathered so that rustc and LLVM
//! keep up, and how generated tokens take the user's spans.

use std::collections::HashMap;

use proc_macro2::TokenStream;
use proc_macro2::{Spacing, Span, TokenTree};
use quote::quote;
use syn::Ident;

/// `pieces` with each declaration of `decls` put just before the first piece that names its
/// variable; a declaration no piece names is left out.
///
/// An adjoint declared `let mut a = None;` at the top of the backward pass has no type until its
/// first contribution, and rustc carries every such open variable through the checking of all
/// the code between: with thousands of adjoints that cost grows with the square of the body's
/// length. Declared where it is first named, an adjoint gets its type a statement later.
pub(super) fn declare_before_use(
    decls: Vec<(Ident, TokenStream)>,
    pieces: Vec<TokenStream>,
) -> Vec<TokenStream> {
    let mut pending: HashMap<String, TokenStream> = decls
        .into_iter()
        .map(|(ident, decl)| (ident.to_string(), decl))
        .collect();
    let mut out = Vec::with_capacity(pieces.len() + pending.len());
    for piece in pieces {
        for_each_ident(piece.clone(), &mut |i| {
            if let Some(decl) = pending.remove(&i.to_string()) {
                out.push(decl);
            }
        });
        out.push(piece);
    }
    out
}

/// Calls `f` on every identifier of `tokens`, inside their groups too (iteratively: generated
/// code nests as deep as the user's).
fn for_each_ident(tokens: impl IntoIterator<Item = TokenTree>, f: &mut impl FnMut(&Ident)) {
    let mut pending: Vec<TokenTree> = tokens.into_iter().collect();
    while let Some(token) = pending.pop() {
        match token {
            TokenTree::Ident(i) => f(&i),
            TokenTree::Group(g) => pending.extend(g.stream()),
            _ => {}
        }
    }
}

/// `let`s of a fused region's closure over scalars, each read once written into its reader:
/// `let n0 = a * b; let n1 = n0 + c; n1` becomes `((a * b) + c)`. At most [`INLINE_DEPTH`]
/// levels are nested; a deeper value, and one read twice, keeps its `let`. Every initializer is a pure expression
/// over `Copy` scalars, so where it is evaluated does not matter, and the result is the same bit
/// for bit. Fewer `let`s are fewer tokens and fewer locals for rustc to check (a fused chain of
/// 2,000 statements: about half the tokens).
pub(super) fn inline_single_reads(
    prefix: TokenStream,
    lets: Vec<(Ident, TokenStream)>,
    tail: TokenStream,
) -> TokenStream {
    let mut reads: HashMap<String, usize> = lets.iter().map(|(n, _)| (n.to_string(), 0)).collect();
    for tokens in lets.iter().map(|(_, e)| e).chain([&tail]) {
        for_each_ident(tokens.clone(), &mut |i| {
            if let Some(r) = reads.get_mut(&i.to_string()) {
                *r += 1;
            }
        });
    }
    // The initializers not written yet, and how deep each nests.
    let mut pending: HashMap<String, (TokenStream, usize)> = HashMap::new();
    let mut out = prefix;
    for (name, expr) in lets {
        let mut depth = 0;
        let expr = substitute(expr, &mut pending, &mut depth);
        if reads[&name.to_string()] == 1 && depth < INLINE_DEPTH {
            pending.insert(name.to_string(), (expr, depth + 1));
        } else {
            out.extend(quote!(let #name = #expr;));
        }
    }
    let tail = substitute(tail, &mut pending, &mut 0);
    out.extend(tail);
    out
}

/// How many inlined initializers [`inline_single_reads`] nests at most.
const INLINE_DEPTH: usize = 12;

/// `tokens` with each name of `pending` replaced by its initializer, in parentheses unless it is
/// one name or group (removed from `pending`); `depth` is raised to the deepest initializer written.
fn substitute(
    tokens: TokenStream,
    pending: &mut HashMap<String, (TokenStream, usize)>,
    depth: &mut usize,
) -> TokenStream {
    tokens
        .into_iter()
        .map(|t| match t {
            TokenTree::Ident(i) => match pending.remove(&i.to_string()) {
                Some((expr, d)) => {
                    *depth = (*depth).max(d);
                    let mut one = expr.clone().into_iter();
                    match (one.next(), one.next()) {
                        (Some(t @ (TokenTree::Ident(_) | TokenTree::Group(_))), None) => t,
                        _ => {
                            let paren = proc_macro2::Delimiter::Parenthesis;
                            let mut g = proc_macro2::Group::new(paren, expr);
                            g.set_span(i.span());
                            TokenTree::Group(g)
                        }
                    }
                }
                None => TokenTree::Ident(i),
            },
            TokenTree::Group(g) => {
                let mut inner =
                    proc_macro2::Group::new(g.delimiter(), substitute(g.stream(), pending, depth));
                inner.set_span(g.span());
                TokenTree::Group(inner)
            }
            t => t,
        })
        .collect()
}

/// `body` with each run of up to 16 consecutive top-level `let`s of generated names
/// (`let [mut] __rune_x = e;`) gathered into one: `let (a, b, ..) = { let a = ..; let b = ..;
/// (a, b, ..) };`.
///
/// Each `let` opens a scope inside the previous one, and a debug build describes that nesting
/// to LLVM, which recurses once a level: about 2,500 `let`s in one block overflow its stack
/// (plain Rust too). The generated passes have several `let`s for each op of the source, so one
/// by one they reached that depth for bodies a quarter of that length; gathered, the depth is a
/// sixteenth. Gathered code takes rustc a fifth longer to check, so bodies of fewer than 1,500
/// `let`s are left as they are. (Declaring the variables first and assigning them later would
/// also do, but rustc checks such code several times slower.) A name bound twice is left as
/// written, and so is a
/// `let` with a type or an `else`, or one whose initializer may borrow a temporary (a `let`
/// extends its life; the block would end it).
pub(super) fn gather_lets(body: TokenStream) -> TokenStream {
    gather_lets_from(body, 1500, false)
}

/// [`gather_lets`] for the body of a fused region's closure, from a few dozen `let`s on: an element's
/// scalar code is many short `let`s, each a scope of LLVM's debug information.
pub(super) fn gather_closure_lets(body: TokenStream) -> TokenStream {
    gather_lets_from(body, 64, true)
}

/// `scalars`: every initializer is an expression over `Copy` scalars, which borrows no temporary.
fn gather_lets_from(body: TokenStream, long: usize, scalars: bool) -> TokenStream {
    const RUN: usize = 16;
    let lets = body
        .clone()
        .into_iter()
        .filter(|t| matches!(t, TokenTree::Ident(kw) if kw == "let"))
        .count();
    if lets < long {
        return body;
    }
    let tokens: Vec<TokenTree> = body.into_iter().collect();
    let is_punct = |t: &TokenTree, c: char| matches!(t, TokenTree::Punct(p) if p.as_char() == c);
    let after_keyword = |i: usize| {
        matches!(
            i.checked_sub(1).map(|p| &tokens[p]),
            Some(TokenTree::Ident(prev)) if prev == "if" || prev == "while"
        )
    };
    // `let [mut] name = ..;` starting at i: (name, mut, index after its `;`).
    let simple_let = |i: usize| -> Option<(Ident, bool, usize)> {
        match &tokens[i] {
            TokenTree::Ident(kw) if kw == "let" && !after_keyword(i) => {}
            _ => return None,
        }
        let mutable = matches!(tokens.get(i + 1), Some(TokenTree::Ident(m)) if m == "mut");
        let at = i + 1 + usize::from(mutable);
        let Some(TokenTree::Ident(name)) = tokens.get(at) else {
            return None;
        };
        if !crate::names::is_hidden(name) {
            return None;
        }
        match tokens.get(at + 1) {
            Some(TokenTree::Punct(p)) if p.as_char() == '=' && p.spacing() == Spacing::Alone => {}
            _ => return None,
        }
        let start = at + 2;
        let end = (start..tokens.len()).find(|&k| is_punct(&tokens[k], ';'))?;
        match tokens.get(start) {
            _ if scalars => {}
            // `&a * &b` borrows no temporary past the statement; `&e` alone may.
            Some(t) if is_punct(t, '&') => {
                let binary = (start + 2..end).any(|k| {
                    matches!(&tokens[k], TokenTree::Punct(p) if "+-*/%^".contains(p.as_char()))
                        && !matches!(&tokens[k - 1], TokenTree::Punct(_))
                });
                if !binary {
                    return None;
                }
            }
            Some(TokenTree::Group(_)) => return None,
            _ => {}
        }
        for (k, t) in tokens.iter().enumerate().skip(start) {
            match t {
                TokenTree::Punct(p) if p.as_char() == ';' => {
                    return Some((name.clone(), mutable, k + 1));
                }
                TokenTree::Ident(e) if e == "else" => return None,
                TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Brace => {
                    return None
                }
                _ => {}
            }
        }
        None
    };
    // How many top-level `let`s bind each name (in any pattern: `let (a, b) = ..` too).
    let mut count: HashMap<String, usize> = HashMap::new();
    for (i, t) in tokens.iter().enumerate() {
        match t {
            TokenTree::Ident(kw) if kw == "let" && !after_keyword(i) => {}
            _ => continue,
        }
        let pattern = tokens[i + 1..]
            .iter()
            .take_while(
                |t| !matches!(t, TokenTree::Punct(p) if matches!(p.as_char(), '=' | ';' | ':')),
            )
            .cloned();
        for_each_ident(pattern, &mut |name| {
            *count.entry(name.to_string()).or_default() += 1;
        });
    }
    // The last top-level token that names each identifier (inside its groups too): a gathered
    // `let` hands on only the names read after it (a name moved inside it is not).
    let mut last_use: HashMap<String, usize> = HashMap::new();
    for (i, t) in tokens.iter().enumerate() {
        for_each_ident([t.clone()], &mut |name| {
            last_use.insert(name.to_string(), i);
        });
    }
    let mut out = TokenStream::new();
    let mut i = 0;
    while i < tokens.len() {
        let mut run = Vec::new();
        let mut end = i;
        while run.len() < RUN {
            match simple_let(end) {
                Some((name, mutable, next)) if count[&name.to_string()] == 1 => {
                    run.push((name, mutable));
                    end = next;
                    if end >= tokens.len() {
                        break;
                    }
                }
                _ => break,
            }
        }
        if run.len() < 2 {
            out.extend([tokens[i].clone()]);
            i += 1;
            continue;
        }
        let lets = &tokens[i..end];
        run.retain(|(name, _)| last_use[&name.to_string()] >= end);
        let pattern = run.iter().map(|(name, mutable)| {
            if *mutable {
                quote!(mut #name)
            } else {
                quote!(#name)
            }
        });
        let names = run.iter().map(|(name, _)| name);
        out.extend(quote!(let (#(#pattern,)*) = { #(#lets)* (#(#names,)*) };));
        i = end;
    }
    out
}

/// `tokens` with every token's location moved to `span` (keeping its hygiene), so that an error
/// in generated code underlines the user's expression that produced it.
pub(super) fn relocate(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|tt| match tt {
            TokenTree::Group(g) => {
                let mut new = proc_macro2::Group::new(g.delimiter(), relocate(g.stream(), span));
                new.set_span(g.span().located_at(span));
                TokenTree::Group(new)
            }
            mut other => {
                other.set_span(other.span().located_at(span));
                other
            }
        })
        .collect()
}

/// [`relocate`] for a forward op: identifiers keep their hygiene, but the other tokens and
/// method names take the user's span as it is, so that a `#[track_caller]` op that panics
/// reports the user's line (a location in the macro's own context is reported at the
/// attribute).
pub(super) fn relocate_call(tokens: TokenStream, span: Span) -> TokenStream {
    let mut after_dot = false;
    let mut joint_dot = false;
    tokens
        .into_iter()
        .map(|tt| {
            let out = match tt {
                TokenTree::Group(g) => {
                    let mut new =
                        proc_macro2::Group::new(g.delimiter(), relocate_call(g.stream(), span));
                    new.set_span(span);
                    TokenTree::Group(new)
                }
                TokenTree::Ident(mut i) if after_dot => {
                    i.set_span(span);
                    TokenTree::Ident(i)
                }
                TokenTree::Ident(mut i) => {
                    i.set_span(i.span().located_at(span));
                    TokenTree::Ident(i)
                }
                mut other => {
                    other.set_span(span);
                    other
                }
            };
            // A field or method access `.name`, not a range `..name`.
            after_dot = matches!(&out, TokenTree::Punct(p) if p.as_char() == '.'
                && p.spacing() == proc_macro2::Spacing::Alone)
                && !joint_dot;
            joint_dot = matches!(&out, TokenTree::Punct(p) if p.as_char() == '.'
                && p.spacing() == proc_macro2::Spacing::Joint);
            out
        })
        .collect()
}

/// Generated code that holds none of the user's tokens, built by `build` in proc-macro2's own
/// representation of tokens and handed to rustc as one piece of text.
///
/// Inside a proc macro every token proc-macro2 makes, and every step over a stream, is a call
/// across the bridge to rustc; a fused region's scalar code is thousands of tokens, walked again
/// by [`inline_single_reads`] and [`gather_closure_lets`]. Built apart, it crosses the bridge
/// once, as text that rustc lexes ([`lex`]). The text's tokens take the call site's span, as
/// `quote!`'s do; identifiers made by `names::hidden` (`Span::mixed_site`) become call-site ones,
/// which is the same for the code's own items and consistent among its locals, all of which
/// `build` makes. `build` must not take in tokens made outside it (a stream of both kinds panics
/// in proc-macro2).
pub(super) fn detached(build: impl FnOnce() -> TokenStream) -> String {
    /// Returns proc-macro2 to rustc's tokens when dropped, on a panic too.
    struct Forced;
    impl Drop for Forced {
        fn drop(&mut self) {
            proc_macro2::fallback::unforce();
        }
    }
    proc_macro2::fallback::force();
    let _forced = Forced;
    build().to_string()
}

/// The tokens of `text`, code that [`detached`] wrote.
///
/// Inside a proc macro rustc lexes it: proc-macro2's own `parse` would lex it first to check it,
/// which took as long as the rest of the region's emission.
pub(super) fn lex(text: &str) -> TokenStream {
    if proc_macro::is_available() {
        let tokens: proc_macro::TokenStream = text.parse().expect("generated code lexes");
        tokens.into()
    } else {
        text.parse().expect("generated code lexes")
    }
}
