//! Constant code of the dual twin computed on real numbers.
//!
//! The twin is the function with its element type rewritten to dual numbers, so the constant
//! code the user wrote (`let scores = .. points.matmul(&fixed.t())`, `let nearest =
//! scores.argmin(1)`) runs on dual numbers there too, whose tangents are all zero: it reads only
//! `#[nodiff]` tensors, which the twin's callers lift, and values cut by `stop_gradient`
//! (`detach`), which carry no tangent. That is twice the memory traffic of the real code and,
//! for a matrix product, a split of every operand into its parts, for tangents nothing reads.
//!
//! This pass finds such code and runs it on the primal parts instead. A `let name = expr;` of
//! constant code is computed on real numbers when every value `expr` reads is real here: a
//! `#[nodiff]` tensor parameter (read through its primal part, `__rune_re_<param>`, taken once
//! at the top of the body), a field of a method's `self` (read in place of the binding that
//! lifts it, `super::fields`), `stop_gradient` of a differentiated value (its primal part), an
//! earlier such `let`, or code that is the same in both functions (numbers the function does
//! not differentiate, functions, literals). Its result must not meet the twin's dual code as a
//! real tensor, so such a `let` is kept only when nothing but other real `let`s reads it, or
//! when its value has no element type to differ: an index or mask (`argmin`, `argmax`,
//! `argsort`, comparisons), which the rest of the twin reads as it would have. Everything else
//! stays as it was. What it reads is decided on the tokens, conservatively: a type the twin
//! rewrote, a method that reads a tensor's numbers (`item`, `to_vec`, ..), a differentiated
//! value read other than through `stop_gradient`, or a constant not known to be real keeps the
//! statement on dual numbers.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{Delimiter, Group, Ident, TokenStream, TokenTree};
use quote::{quote, ToTokens};

use crate::ir::{Body, Code, Stmt};
use crate::names::{hidden, is_hidden, val_of};
use crate::ops;
use crate::parse::Param;

/// Methods whose result is an index or a mask: the same type on real and on dual numbers.
const ELEMENTLESS: &[&str] = &[
    "argmin", "argmax", "argsort", "lt", "gt", "le", "ge", "eq", "ne",
];

/// Identifiers that, beside the methods the lowering already treats as reading a tensor's
/// numbers ([`ops::CONCRETIZING`]), keep a statement on dual numbers wherever they appear: they
/// read numbers too (whose type differs between the two functions), name the dual type, or
/// name the receiver.
const KEEPS_DUAL: &[&str] = &[
    "iter",
    "into_iter",
    "as_slice",
    "into_vec",
    "to_scalar",
    "Dual",
    "self",
];

/// Whether `ident` keeps a statement on dual numbers.
fn keeps_dual(ident: &str) -> bool {
    ops::CONCRETIZING.contains(&ident) || KEEPS_DUAL.contains(&ident)
}

/// How the twin's parameters are read by constant code.
enum ParamRead {
    /// A `#[nodiff]` tensor: read through its primal part, held by this identifier.
    Root(Ident),
    /// The same in both functions (a number or an index the function does not differentiate).
    Same,
    /// Dual in the twin: a differentiated parameter, or a collection of tensors.
    Dual,
}

/// A field of `self` that the twin binds at its top (`super::fields`): `binding` is read in
/// place of `self.member`.
struct SelfField {
    member: syn::Member,
    binding: String,
}

/// The bindings of `self`'s fields at the top of the twin's body (as the lowering renamed
/// them): `let binding = ::rune_ad::__private::twin_field!(self.member);`.
fn self_fields(body: &Body) -> Vec<SelfField> {
    let mut found = Vec::new();
    for s in &body.stmts {
        let Stmt::Verbatim(code) = s else { continue };
        let Some((binding, syn::Expr::Macro(m))) = let_parts(code) else {
            continue;
        };
        if m.mac
            .path
            .segments
            .last()
            .is_none_or(|s| s.ident != "twin_field")
        {
            continue;
        }
        if let Ok(syn::Expr::Field(field)) = m.mac.parse_body::<syn::Expr>() {
            if matches!(&*field.base, syn::Expr::Path(p) if p.path.is_ident("self")) {
                found.push(SelfField {
                    member: field.member,
                    binding,
                });
            }
        }
    }
    found
}

/// One `let` that may run on real numbers.
struct Candidate {
    /// The bound name.
    name: String,
    /// The names of earlier candidates it reads.
    reads: BTreeSet<String>,
    /// The `#[nodiff]` tensor parameters it reads.
    roots: BTreeSet<String>,
    /// Its value is an index or a mask.
    elementless: bool,
}

/// Runs the constant code of the twin's `body` that reads only real values on real numbers
/// (see the module's documentation). `params` are the twin's parameters.
pub fn compute_on_primals(body: &mut Body, params: &[Param]) {
    let mut reads: BTreeMap<String, ParamRead> = params
        .iter()
        .map(|p| {
            let ty = &p.ty;
            let text = quote!(#ty).to_string();
            let read = if p.active.is_some() {
                ParamRead::Dual
            } else if is_tensor(&p.ty) && !p.mutable {
                ParamRead::Root(hidden(&format!("re_{}", p.ident)))
            } else if text.contains("Tensor") || text.contains("Dual") {
                ParamRead::Dual
            } else {
                ParamRead::Same
            };
            (p.ident.to_string(), read)
        })
        .collect();
    // A field of `self` is real in the twin's `self` (its binding lifts a tensor).
    let self_fields = self_fields(body);
    for field in &self_fields {
        let shadow = hidden(&format!("re_self_{}", field.member.to_token_stream()));
        reads.insert(field.binding.clone(), ParamRead::Root(shadow));
    }
    // Candidates in program order: each may read the earlier ones.
    let mut candidates: Vec<Candidate> = Vec::new();
    visit_verbatim(&mut body.stmts, &mut |code| {
        let known: BTreeSet<&str> = candidates.iter().map(|c| c.name.as_str()).collect();
        if let Some(c) = candidate(code, &reads, &known) {
            candidates.push(c);
        }
    });
    // Demote, until nothing changes, every candidate that dual code reads (unless its value
    // is elementless) or that reads a demoted one.
    let mut kept: BTreeSet<String> = candidates.iter().map(|c| c.name.clone()).collect();
    loop {
        let mentioned = mentioned_outside(body, &kept);
        let demoted: Vec<String> = candidates
            .iter()
            .filter(|c| kept.contains(&c.name))
            .filter(|c| {
                (mentioned.contains(&c.name) && !c.elementless)
                    || c.reads.iter().any(|r| !kept.contains(r))
            })
            .map(|c| c.name.clone())
            .collect();
        if demoted.is_empty() {
            break;
        }
        for d in demoted {
            kept.remove(&d);
        }
    }
    if kept.is_empty() {
        return;
    }
    let roots: BTreeSet<String> = candidates
        .iter()
        .filter(|c| kept.contains(&c.name))
        .flat_map(|c| c.roots.iter().cloned())
        .collect();
    visit_verbatim(&mut body.stmts, &mut |code| {
        if let Some(name) = let_name(code) {
            if kept.contains(&name) {
                *code = Code::new(on_primals(code.tokens().clone(), &reads));
            }
        }
    });
    // The primal part of each `#[nodiff]` tensor the kept statements read, once, first, and
    // the real field of `self` for each field binding they read.
    let fields = self_fields.iter().filter_map(|field| {
        let ParamRead::Root(shadow) = &reads[&field.binding] else {
            return None;
        };
        let member = &field.member;
        roots
            .contains(&field.binding)
            .then(|| Stmt::Verbatim(quote!(let #shadow = &self.#member;).into()))
    });
    let fields: Vec<Stmt> = fields.collect();
    let shadows = params.iter().filter_map(|p| {
        let ParamRead::Root(shadow) = &reads[&p.ident.to_string()] else {
            return None;
        };
        if !roots.contains(&p.ident.to_string()) {
            return None;
        }
        // Read as the parameter is: a reference stays one (the temporary lives to the end of
        // the body), an owned tensor is borrowed to take its primal part.
        let ident = &p.ident;
        let primal = match p.ty {
            syn::Type::Reference(_) => quote!(&::rune_ad::__private::dual_primal(#ident)),
            _ => quote!(::rune_ad::__private::dual_primal(&#ident)),
        };
        Some(Stmt::Verbatim(quote!(let #shadow = #primal;).into()))
    });
    let shadows: Vec<Stmt> = shadows.chain(fields).collect();
    body.stmts.splice(0..0, shadows);
}

/// Whether `ty` is `Tensor<..>` or a reference to one.
fn is_tensor(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Reference(r) => is_tensor(&r.elem),
        syn::Type::Group(g) => is_tensor(&g.elem),
        syn::Type::Path(p) => {
            p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Tensor")
        }
        _ => false,
    }
}

/// Calls `f` on the code of every `Verbatim` statement, depth first, in order.
fn visit_verbatim(stmts: &mut [Stmt], f: &mut impl FnMut(&mut Code)) {
    for s in stmts {
        match s {
            Stmt::Verbatim(code) => f(code),
            Stmt::Branch { arms, .. } => arms.iter_mut().for_each(|a| visit_verbatim(a, f)),
            Stmt::Stages { stages, .. } => stages.iter_mut().for_each(|a| visit_verbatim(a, f)),
            Stmt::Loop { body, .. } => visit_verbatim(body, f),
            _ => {}
        }
    }
}

/// The name a `let name = expr;` binds: one plain identifier, without `mut` or a type.
fn let_name(code: &Code) -> Option<String> {
    let_parts(code).map(|(name, _)| name)
}

/// The name and the initializer of a `let name = expr;` ([`let_name`]).
fn let_parts(code: &Code) -> Option<(String, syn::Expr)> {
    let Ok(syn::Stmt::Local(local)) = syn::parse2::<syn::Stmt>(code.tokens().clone()) else {
        return None;
    };
    let syn::Pat::Ident(pi) = local.pat else {
        return None;
    };
    let plain = pi.by_ref.is_none() && pi.mutability.is_none() && pi.subpat.is_none();
    let init = local.init?;
    (plain && init.diverge.is_none()).then(|| (pi.ident.to_string(), *init.expr))
}

/// `code` as a candidate: a `let` whose every read is real here (see the module's
/// documentation), reading at least one real value. `known` are the earlier candidates.
fn candidate(
    code: &Code,
    params: &BTreeMap<String, ParamRead>,
    known: &BTreeSet<&str>,
) -> Option<Candidate> {
    let (name, init) = let_parts(code)?;
    let elementless = matches!(&init, syn::Expr::MethodCall(m)
        if ELEMENTLESS.contains(&m.method.to_string().as_str()));
    let tokens = quote!(#init);
    let mut c = Candidate {
        name,
        reads: BTreeSet::new(),
        roots: BTreeSet::new(),
        elementless,
    };
    let mut real = false;
    let mut ok = true;
    scan(&tokens, &mut |ident, after_path, detached| {
        let text = ident.to_string();
        if keeps_dual(&text) {
            ok = false;
        } else if detached {
            real = true;
        } else if val_of(ident).is_some() {
            ok = false;
        } else if let Some(ParamRead::Root(_)) = params.get(&text) {
            // A `#[nodiff]` tensor parameter, or the binding of a field of `self`.
            if !after_path {
                c.roots.insert(text);
                real = true;
            }
        } else if is_hidden(ident) {
            if known.contains(text.as_str()) {
                c.reads.insert(text);
                real = true;
            } else {
                ok = false;
            }
        } else if !after_path {
            match params.get(&text) {
                Some(ParamRead::Root(_)) => {
                    c.roots.insert(text);
                    real = true;
                }
                Some(ParamRead::Dual) => ok = false,
                Some(ParamRead::Same) | None => {}
            }
        }
    });
    (ok && real).then_some(c)
}

/// Calls `f(ident, after_path, detached)` on every identifier of `tokens`: `after_path` when a
/// `.` or `::` comes right before it (a method, field or path segment, not a variable), and
/// `detached` for the value `x` of `::rune_ad::__private::detach(&x)`.
fn scan(tokens: &TokenStream, f: &mut impl FnMut(&Ident, bool, bool)) {
    let tts: Vec<TokenTree> = tokens.clone().into_iter().collect();
    let mut i = 0;
    while i < tts.len() {
        match &tts[i] {
            TokenTree::Ident(ident) => {
                if let Some(v) = detached_value(&tts, i) {
                    f(ident, true, false);
                    f(&v, false, true);
                    i += 2;
                    continue;
                }
                f(ident, after_path(&tts, i), false);
            }
            TokenTree::Group(g) => scan(&g.stream(), f),
            TokenTree::Punct(_) | TokenTree::Literal(_) => {}
        }
        i += 1;
    }
}

/// Whether a `.` or `::` comes right before token `i`.
fn after_path(tts: &[TokenTree], i: usize) -> bool {
    matches!(i.checked_sub(1).map(|j| &tts[j]), Some(TokenTree::Punct(p))
        if p.as_char() == '.' || p.as_char() == ':')
}

/// The value `x` when token `i` is the `detach` of `detach(&x)` after `__private::`, with `x` a
/// differentiated value.
fn detached_value(tts: &[TokenTree], i: usize) -> Option<Ident> {
    let TokenTree::Ident(name) = &tts[i] else {
        return None;
    };
    if name != "detach" || !after_path(tts, i) {
        return None;
    }
    let TokenTree::Group(g) = tts.get(i + 1)? else {
        return None;
    };
    if g.delimiter() != Delimiter::Parenthesis {
        return None;
    }
    borrowed_value(g.stream())
}

/// `x` of `&x`, a differentiated value, also within parentheses or an invisible group (how a
/// method's body hands its values on).
fn borrowed_value(tokens: TokenStream) -> Option<Ident> {
    let inner: Vec<TokenTree> = tokens.into_iter().collect();
    match inner.as_slice() {
        [TokenTree::Punct(amp), TokenTree::Ident(v)]
            if amp.as_char() == '&' && val_of(v).is_some() =>
        {
            Some(v.clone())
        }
        [TokenTree::Group(g)]
            if matches!(g.delimiter(), Delimiter::Parenthesis | Delimiter::None) =>
        {
            borrowed_value(g.stream())
        }
        _ => None,
    }
}

/// `tokens` computed on primal parts: `detach(&x)` becomes `dual_primal(&x)`, and each
/// `#[nodiff]` tensor parameter its primal part.
fn on_primals(tokens: TokenStream, params: &BTreeMap<String, ParamRead>) -> TokenStream {
    let tts: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::with_capacity(tts.len());
    for (i, tt) in tts.iter().enumerate() {
        out.push(match tt {
            TokenTree::Ident(ident) if detached_value(&tts, i).is_some() => {
                TokenTree::Ident(Ident::new("dual_primal", ident.span()))
            }
            TokenTree::Ident(ident) if !after_path(&tts, i) => {
                match params.get(&ident.to_string()) {
                    Some(ParamRead::Root(shadow)) => TokenTree::Ident(shadow.clone()),
                    _ => tt.clone(),
                }
            }
            TokenTree::Group(g) => {
                let mut group = Group::new(g.delimiter(), on_primals(g.stream(), params));
                group.set_span(g.span());
                TokenTree::Group(group)
            }
            _ => tt.clone(),
        });
    }
    out.into_iter().collect()
}

/// The candidates in `names` that code other than their own `let`s mentions: constant code of
/// every other statement, a fused region's literals, the aux output.
fn mentioned_outside(body: &Body, names: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut look = |tokens: &TokenStream| mentions(tokens, names, &mut found);
    crate::ir::walk(&body.stmts, &mut |s| {
        if let Stmt::Verbatim(code) = s {
            if let_name(code).is_some_and(|n| names.contains(&n)) {
                return;
            }
        }
        s.for_each_code(&mut |c| look(c.tokens()));
        if let Stmt::Fused { literals, .. } = s {
            literals.iter().for_each(&mut look);
        }
    });
    if let Some(crate::ir::OutputAux::Expr(c)) = &body.aux {
        look(c.tokens());
    }
    found
}

/// Adds to `found` each of `names` that `tokens` holds.
fn mentions(tokens: &TokenStream, names: &BTreeSet<String>, found: &mut BTreeSet<String>) {
    for tt in tokens.clone() {
        match tt {
            TokenTree::Ident(i) => {
                let text = i.to_string();
                if names.contains(&text) {
                    found.insert(text);
                }
            }
            TokenTree::Group(g) => mentions(&g.stream(), names, found),
            _ => {}
        }
    }
}
