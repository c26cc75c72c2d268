//! Emission: the derivative functions, written with `quote!`.
//!
//! For a function `f` this writes
//! - `fwd` (hidden): the forward pass, returning the value and a pullback closure that owns
//!   exactly the residuals its rules read and returns one gradient slot per parameter;
//! - `tangent` (hidden): the forward pass with each op followed by its tangent rule, taking
//!   one tangent slot per parameter;
//! - the public `f_vjp`, `f_grad`, `f_value_and_grad`, `f_jvp` and `f_pullback`, thin wrappers
//!   of those two.
//!
//! Beside a free function the hidden entry points are associated functions of a type named `f`
//! (`f::fwd`); in an `impl` block, associated functions `f_fwd`, `f_tangent` (see [`Host`]).

use std::collections::HashMap;

use proc_macro2::TokenStream;
use proc_macro2::{Spacing, Span, TokenTree};
use quote::{format_ident, quote, ToTokens};
use syn::{Ident, ItemFn};

use crate::analyse::{config_keep, path_consts, walk, Analysis};
use crate::ir::{
    Body, BranchHead, CallArg, Callee, Const, List, LoopHead, Operand, OutputAux, OutputElem,
    PathSeg, Slot, Stmt, Use, Val,
};
use crate::lower::{path_place, path_tokens};
use crate::names::{
    adjoint_ident, arm_ident, arm_stack_ident, config_ident, const_ident, hidden,
    list_adjoint_ident, list_tangent_ident, pullback_ident, reached_ident, reached_stack_ident,
    residual_ident, shape_ident, sizes_ident, slot_adjoint_ident, slot_ident, slot_tangent_ident,
    stages_label, struct_grad_ident, struct_tangent_ident, tangent_ident, template_ident,
    trips_ident, trips_stack_ident, val_ident, witness_ident,
};
use crate::ops::{self, Form, Keep, OpSpec, Param, Rule, RuleArg};
use crate::parse::{Entry, Options, Returns, Signature};

const RT: &str = "::rune_ad::__private";

/// `pieces` with each declaration of `decls` put just before the first piece that names its
/// variable; a declaration no piece names is left out.
///
/// An adjoint declared `let mut a = None;` at the top of the backward pass has no type until its
/// first contribution, and rustc carries every such open variable through the checking of all
/// the code between: with thousands of adjoints that cost grows with the square of the body's
/// length. Declared where it is first named, an adjoint gets its type a statement later.
fn declare_before_use(
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
fn gather_lets(body: TokenStream) -> TokenStream {
    const RUN: usize = 16;
    const LONG: usize = 1500;
    let lets = body
        .clone()
        .into_iter()
        .filter(|t| matches!(t, TokenTree::Ident(kw) if kw == "let"))
        .count();
    if lets < LONG {
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
        if !name.to_string().starts_with("__rune_") {
            return None;
        }
        match tokens.get(at + 1) {
            Some(TokenTree::Punct(p)) if p.as_char() == '=' && p.spacing() == Spacing::Alone => {}
            _ => return None,
        }
        let start = at + 2;
        let end = (start..tokens.len()).find(|&k| is_punct(&tokens[k], ';'))?;
        match tokens.get(start) {
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

fn rt() -> TokenStream {
    RT.parse().expect("path parses")
}

/// Whether `ty` is a plain number or `bool` (passed by copy).
fn is_copy_number(ty: &syn::Type) -> bool {
    let text = ty.to_token_stream().to_string();
    matches!(
        text.as_str(),
        "f32"
            | "f64"
            | "bool"
            | "usize"
            | "isize"
            | "u8"
            | "u16"
            | "u32"
            | "u64"
            | "i8"
            | "i16"
            | "i32"
            | "i64"
    )
}

/// `tokens` with every token's location moved to `span` (keeping its hygiene), so that an error
/// in generated code underlines the user's expression that produced it.
fn relocate(tokens: TokenStream, span: Span) -> TokenStream {
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
fn relocate_call(tokens: TokenStream, span: Span) -> TokenStream {
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

/// An operand as an owned tensor (a slot's new value).
fn owned_tensor(o: Operand) -> TokenStream {
    let rt = rt();
    match o {
        Operand::Val(v) => {
            let v = val_ident(v);
            quote!(::core::clone::Clone::clone(#rt::as_tensor(&#v)))
        }
        Operand::Const(c) => {
            let c = const_ident(c);
            quote!(::core::clone::Clone::clone(#rt::as_tensor(&#c)))
        }
    }
}

/// How a hoisted constant is used, by id.
struct Hoists {
    usage: Vec<Use>,
}

impl Hoists {
    fn new(body: &Body) -> Self {
        let mut usage = Vec::new();
        walk(&body.stmts, &mut |s| {
            if let Stmt::Hoist { id, usage: u, .. } = s {
                if usage.len() <= id.0 {
                    usage.resize(id.0 + 1, Use::Plain);
                }
                usage[id.0] = *u;
            }
        });
        Hoists { usage }
    }

    /// The operand as written in a forward op.
    fn forward(&self, o: Operand) -> TokenStream {
        match o {
            Operand::Val(v) => {
                let i = val_ident(v);
                quote!(&#i)
            }
            Operand::Const(c) => {
                let i = const_ident(c);
                match self.usage[c.0] {
                    Use::Plain => quote!(#i),
                    Use::Borrowed => quote!(&#i),
                }
            }
        }
    }
}

/// Which pass a rule call is written for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    Tangent,
    Backward,
}

struct OpCtx<'a> {
    out: Val,
    op: &'static OpSpec,
    inputs: &'a [Operand],
    config: &'a [Const],
    turbofish: &'a Option<TokenStream>,
    /// The tensor-list index (`k`), for concat/stack VJPs.
    k: usize,
}

/// A rule call from its registry entry.
fn rule_call(rule: &Rule, ctx: &OpCtx, pass: Pass, useful: &dyn Fn(Val) -> bool) -> TokenStream {
    let name = format_ident!("{}", rule.name);
    let rt = rt();
    let list_tokens = || -> Vec<TokenStream> {
        ctx.inputs
            .iter()
            .map(|o| match o {
                Operand::Val(v) => {
                    let i = val_ident(*v);
                    quote!(&#i)
                }
                Operand::Const(c) => {
                    let i = match pass {
                        Pass::Tangent => const_ident(*c),
                        Pass::Backward => residual_ident(*c),
                    };
                    quote!(&#i)
                }
            })
            .collect()
    };
    let args: Vec<TokenStream> = rule
        .args
        .iter()
        .map(|arg| match *arg {
            RuleArg::Cotangent => quote!(&__rune_g),
            RuleArg::Output => {
                let v = val_ident(ctx.out);
                quote!(&#v)
            }
            RuleArg::Input(i) => match ctx.inputs[i] {
                Operand::Val(v) => {
                    let v = val_ident(v);
                    quote!(&#v)
                }
                Operand::Const(c) => {
                    let c = match pass {
                        Pass::Tangent => const_ident(c),
                        Pass::Backward => residual_ident(c),
                    };
                    quote!(&#c)
                }
            },
            RuleArg::Shape(i) => {
                let v = ctx.inputs[i]
                    .val()
                    .expect("shape of a differentiated input");
                let s = shape_ident(v);
                quote!(&#s)
            }
            RuleArg::Config(i) => {
                let c = ctx.config[i];
                match (pass, config_keep(ctx.op, i)) {
                    (Pass::Backward, Some(Keep::Owned)) => {
                        let k = config_ident(c);
                        quote!(&#k)
                    }
                    (Pass::Backward, _) => {
                        let k = config_ident(c);
                        quote!(#k)
                    }
                    _ => {
                        let c = const_ident(c);
                        quote!(#c)
                    }
                }
            }
            RuleArg::Tangent(i) => {
                let v = ctx.inputs[i]
                    .val()
                    .expect("tangent of a differentiated input");
                let t = tangent_ident(v);
                quote!(&#t)
            }
            RuleArg::MaybeTangent(i) => match ctx.inputs[i] {
                Operand::Val(v) if useful(v) => {
                    let t = tangent_ident(v);
                    quote!(::core::option::Option::Some(&#t))
                }
                _ => quote!(::core::option::Option::None),
            },
            RuleArg::Inputs => {
                let items = list_tokens();
                quote!(&[#(#items),*])
            }
            RuleArg::MaybeTangents => {
                let items: Vec<TokenStream> = ctx
                    .inputs
                    .iter()
                    .map(|o| match o {
                        Operand::Val(v) if useful(*v) => {
                            let t = tangent_ident(*v);
                            quote!(::core::option::Option::Some(&#t))
                        }
                        _ => quote!(::core::option::Option::None),
                    })
                    .collect();
                quote!(&[#(#items),*])
            }
            RuleArg::ListIndex => {
                let k = ctx.k;
                quote!(#k)
            }
            RuleArg::ListSizes => {
                let z = sizes_ident(ctx.out);
                quote!(&#z)
            }
            RuleArg::CastWitness => {
                let w = witness_ident(ctx.out);
                quote!(#w)
            }
        })
        .collect();
    // `cast` rules are generic over the source and target element: the target comes from the
    // user's turbofish.
    let generics = match (ctx.op.name, ctx.turbofish) {
        ("cast", Some(tf)) => {
            let target = tf.clone();
            let target: syn::AngleBracketedGenericArguments =
                syn::parse2(target).expect("turbofish parses");
            let u = target.args.first().into_token_stream();
            quote!(::<_, #u>)
        }
        _ => quote!(),
    };
    quote!(#rt::rules::#name #generics (#(#args),*))
}

/// The forward op as the user wrote it, on the generated locals.
fn forward_op(ctx: &OpCtx, hoists: &Hoists, fallible: bool) -> TokenStream {
    let rt = rt();
    let op = ctx.op;
    // `x.try_reshape(..)?`: the op's `try_` twin.
    let name = if fallible {
        format_ident!("try_{}", op.name)
    } else {
        format_ident!("{}", op.name)
    };
    let mut tensors = ctx.inputs.iter().copied();
    let mut configs = ctx.config.iter().copied();
    match op.form {
        Form::Operator => {
            let a = hoists.forward(ctx.inputs[0]);
            let b = hoists.forward(ctx.inputs[1]);
            match op.name {
                "add" => quote!(#a + #b),
                "sub" => quote!(#a - #b),
                "mul" => quote!(#a * #b),
                _ => quote!(#a / #b),
            }
        }
        Form::Negation => {
            let a = hoists.forward(ctx.inputs[0]);
            quote!(-#a)
        }
        Form::Method => {
            let recv = match tensors.next().expect("receiver") {
                Operand::Val(v) => val_ident(v).into_token_stream(),
                Operand::Const(c) => const_ident(c).into_token_stream(),
            };
            let args: Vec<TokenStream> = op
                .params
                .iter()
                .map(|p| match p {
                    Param::Tensor => hoists.forward(tensors.next().expect("tensor input")),
                    Param::Config(..) => {
                        const_ident(configs.next().expect("config")).into_token_stream()
                    }
                    Param::TensorList => unreachable!("methods take no lists"),
                })
                .collect();
            let tf = ctx.turbofish;
            quote!(#recv.#name #tf (#(#args),*))
        }
        Form::Function => {
            let args: Vec<TokenStream> = op
                .params
                .iter()
                .map(|p| match p {
                    Param::Tensor => hoists.forward(tensors.next().expect("tensor input")),
                    Param::TensorList => {
                        let items: Vec<TokenStream> =
                            tensors.by_ref().map(|o| hoists.forward(o)).collect();
                        quote!(&[#(#items),*])
                    }
                    Param::Config(..) => {
                        const_ident(configs.next().expect("config")).into_token_stream()
                    }
                })
                .collect();
            quote!(#rt::#name(#(#args),*))
        }
        Form::Constructor => {
            unreachable!("`ops::lookup` finds no constructor: none is differentiable")
        }
    }
}

/// Where a function's generated items live.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// A free function `f`: the public entry points (`f_vjp`, ..) are functions beside it, the
    /// hidden ones (`fwd`, `tangent`) associated functions of a type `f` of the same name, which
    /// `use a::f;` imports together with the function.
    Free,
    /// A method or associated function in an `impl` block: every entry point is an associated
    /// function of the same block (`Self::f_vjp`, `Self::f_fwd`).
    Impl,
}

/// The local items and trait through which a call of something that is not `#[differentiable]`
/// is one error, `message` at the call: a trait implemented by the types of every
/// `#[differentiable]` function (`DifferentiableFunction`) and nothing else.
fn check_trait(message: &str, label: &str) -> (TokenStream, Ident) {
    let rt = rt();
    let name = hidden("Differentiable");
    let f = hidden("F");
    let items = quote! {
        #[diagnostic::on_unimplemented(message = #message, label = #label)]
        trait #name {}
        #[diagnostic::do_not_recommend]
        impl<#f: ?::core::marker::Sized + #rt::DifferentiableFunction> #name for #f {}
    };
    (items, name)
}

/// A stand-in for entry point `entry` of a callee that is not `#[differentiable]`: it takes
/// the call's arguments (after `&self` for a method) and returns what a real one would, so that
/// the caller type-checks around the single error of the check. `bounds` are added to its
/// where-clause.
fn fallback_fn(
    entry: &Ident,
    args: &[CallArg],
    method: bool,
    n_outs: usize,
    mode: Mode,
    bounds: &[TokenStream],
) -> TokenStream {
    let rt = rt();
    let mut generics = Vec::new();
    let mut params = Vec::new();
    let mut slots = Vec::new();
    let mut bounds = bounds.to_vec();
    let mut elem = None;
    for (i, a) in args.iter().enumerate() {
        if method && i == 0 {
            params.push(quote!(&self));
            if let CallArg::Struct { .. } = a {
                slots.push(quote!(Self));
                bounds.push(quote!(Self: #rt::Differentiable));
                elem.get_or_insert(quote!(<Self as #rt::Differentiable>::Elem));
            } else {
                slots.push(quote!(#rt::NoGrad));
            }
            continue;
        }
        let g = hidden(&format!("A{i}"));
        let by_ref = |ty: TokenStream, borrowed: bool| {
            if borrowed {
                quote!(_: &#ty)
            } else {
                quote!(_: #ty)
            }
        };
        match a {
            CallArg::Val { borrowed, .. } => {
                generics.push(quote!(#g: #rt::Element));
                params.push(by_ref(quote!(#rt::Tensor<#g>), *borrowed));
                slots.push(quote!(#rt::Tensor<#g>));
                elem.get_or_insert(quote!(#g));
            }
            CallArg::Struct { borrowed, .. } => {
                generics.push(quote!(#g: #rt::Differentiable));
                params.push(by_ref(quote!(#g), *borrowed));
                slots.push(quote!(#g));
                elem.get_or_insert(quote!(<#g as #rt::Differentiable>::Elem));
            }
            CallArg::Const(_) => {
                generics.push(quote!(#g));
                params.push(quote!(_: #g));
                slots.push(quote!(#rt::NoGrad));
            }
        }
    }
    let elem = elem.expect("a call has a differentiated argument");
    let tensor = quote!(#rt::Tensor<#elem>);
    let (value, cotangent) = if n_outs == 1 {
        (tensor.clone(), quote!(&#tensor))
    } else {
        let values = (0..n_outs).map(|_| &tensor);
        let cotangents = (0..n_outs).map(|_| quote!(&#tensor));
        (quote!((#(#values,)*)), quote!((#(#cotangents,)*)))
    };
    let (ret, body) = match mode {
        // A function pointer is a pullback (`FnOnce + Clone`) of a type that names no bound.
        Mode::Reverse => (
            quote!((#value, fn(#cotangent) -> (#(#slots,)*))),
            quote!((::core::unreachable!(), |_| ::core::unreachable!())),
        ),
        Mode::Tangent => {
            for i in 0..args.len() {
                let t = hidden(&format!("T{i}"));
                generics.push(t.to_token_stream());
                params.push(quote!(_: #t));
            }
            (quote!((#value, #value)), quote!(::core::unreachable!()))
        }
    };
    let bounds = (!bounds.is_empty()).then(|| quote!(where #(#bounds),*));
    quote! {
        fn #entry<#(#generics),*>(#(#params),*) -> #ret #bounds { #body }
    }
}

fn call_args(args: &[CallArg], roots: &[Ident]) -> Vec<TokenStream> {
    args.iter()
        .map(|a| match a {
            CallArg::Struct {
                root,
                path,
                borrowed,
            } => {
                let p = path_tokens(&roots[*root], path);
                if *borrowed {
                    quote!(&#p)
                } else {
                    quote!(::core::clone::Clone::clone(&#p))
                }
            }
            // As the tensor, or its number where the callee takes a number.
            CallArg::Val { val, borrowed } => {
                let v = val_ident(*val);
                let rt = rt();
                if *borrowed {
                    quote!(#rt::arg(&#v))
                } else {
                    quote!(#rt::arg(::core::clone::Clone::clone(&#v)))
                }
            }
            CallArg::Const(t) => t.clone(),
        })
        .collect()
}

/// `let v = into_tensor(v);` for a call's results: a callee returning a number gives its caller
/// a 0-d tensor.
fn outs_as_tensors(idents: &[Ident]) -> TokenStream {
    let rt = rt();
    quote!(#(let #idents = #rt::into_tensor(#idents);)*)
}

fn bind_outs(outs: &[Val], tuple: bool) -> TokenStream {
    let idents: Vec<Ident> = outs.iter().map(|v| val_ident(*v)).collect();
    if tuple {
        quote!((#(#idents),*))
    } else {
        idents[0].to_token_stream()
    }
}

/// Everything the emitter needs.
pub struct Emitter<'a> {
    pub func: &'a ItemFn,
    pub sig: &'a Signature,
    pub body: &'a Body,
    pub analysis: &'a Analysis,
    pub options: &'a Options,
    /// `Some` when a dual-number twin of this concrete function is generated (`hvp` option):
    /// `f_hvp` then runs the twin's gradient.
    pub dual_twin: Option<()>,
    /// This is the twin itself: its calls go to other functions' dual entry points.
    pub is_twin: bool,
    /// Where the generated items go.
    pub host: Host,
}

/// Something the backward pass reads, saved by the forward pass right after the statement that
/// produces it: captured by the pullback at the top level, pushed on a stack inside a branch or
/// loop (and popped at the start of the same region's replay).
#[derive(Clone, Copy)]
enum Saved {
    Value(Val),
    Shape(Val),
    ConstResidual(Const),
    Config(Const),
    Sizes(Val),
    Witness(Val),
    Pullback(Val),
}

impl Saved {
    /// The local the backward pass reads it from.
    fn ident(&self) -> Ident {
        match self {
            Saved::Value(v) => val_ident(*v),
            Saved::Shape(v) => shape_ident(*v),
            Saved::ConstResidual(c) => residual_ident(*c),
            Saved::Config(c) => config_ident(*c),
            Saved::Sizes(v) => sizes_ident(*v),
            Saved::Witness(v) => witness_ident(*v),
            Saved::Pullback(v) => pullback_ident(*v),
        }
    }

    /// The stack it lives on inside regions.
    fn stack(&self) -> Ident {
        format_ident!("{}_stack", self.ident())
    }
}

/// The place `base.field[index]..` of a path in a structure's tangent (with the forward pass's
/// index constants) or gradient (mutable, with the backward pass's saved copies).
fn struct_place(base: &Ident, path: &[PathSeg], backward: bool) -> TokenStream {
    path_place(
        base.to_token_stream(),
        path,
        if backward {
            residual_ident
        } else {
            const_ident
        },
        backward,
    )
}

/// `&[&element, ..]` of a list, as `stack` and `concat` take it.
fn list_refs(ident: &Ident) -> TokenStream {
    quote!(&#ident.iter().collect::<::std::vec::Vec<_>>())
}

/// Which emission a walk produces.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `f_fwd`: the primal, saving what the backward pass reads.
    Reverse,
    /// `f_tangent`: the primal with each op followed by its tangent rule.
    Tangent,
}

impl Emitter<'_> {
    fn useful(&self, v: Val) -> bool {
        self.analysis.is_useful(v)
    }

    fn optional(&self, s: Slot) -> bool {
        self.body.output_slots.contains(&s)
    }

    /// The function's name.
    fn name(&self) -> &Ident {
        &self.func.sig.ident
    }

    /// Entry point `kind` (`fwd`, `tangent`) as this emission writes and calls it: `dual_fwd`
    /// and so on in a dual-number twin.
    fn kind(&self, kind: &str) -> String {
        if self.is_twin {
            format!("dual_{kind}")
        } else {
            kind.to_owned()
        }
    }

    /// The declared name of hidden entry point `kind` (`fwd`, `tangent`, `fwd_derived`).
    fn hidden_name(&self, kind: &str) -> Ident {
        let kind = self.kind(kind);
        match self.host {
            Host::Free => format_ident!("{}", kind),
            Host::Impl => format_ident!("{}_{}", self.name(), kind),
        }
    }

    /// The path that calls hidden entry point `kind` (see [`Self::hidden_name`]).
    fn hidden_path(&self, kind: &str) -> TokenStream {
        let item = self.hidden_name(kind);
        match self.host {
            Host::Free => {
                let name = self.name();
                quote!(#name::#item)
            }
            Host::Impl => quote!(Self::#item),
        }
    }

    /// The name of public entry point `f_suffix`.
    fn public_name(&self, suffix: &str) -> Ident {
        format_ident!("{}_{}", self.name(), suffix)
    }

    /// The path that calls public entry point `f_suffix`.
    fn public_path(&self, suffix: &str) -> TokenStream {
        let item = self.public_name(suffix);
        match self.host {
            Host::Free => quote!(#item),
            Host::Impl => quote!(Self::#item),
        }
    }

    /// The path of the function itself.
    fn original_path(&self) -> TokenStream {
        let name = self.name();
        match self.host {
            Host::Free => quote!(#name),
            Host::Impl => quote!(Self::#name),
        }
    }

    /// `let __rune_expected = ..;`: the plain function's value on the same arguments when values
    /// are checked (`CHECK_VALUES`, debug builds), for [`check_same_value`]. Nothing is checked
    /// for a function with a parameter that cannot be passed twice (`&mut`, or owned and not
    /// known to be `Clone`).
    fn expected_value(&self, turbofish: &syn::Turbofish) -> Option<TokenStream> {
        let rt = rt();
        let mut args = Vec::new();
        for p in &self.sig.params {
            let ident = &p.ident;
            let arg = match &p.ty {
                syn::Type::Reference(r) if r.mutability.is_none() => quote!(#ident),
                syn::Type::Reference(_) => return None,
                _ if p.active.is_some() => quote!(::core::clone::Clone::clone(&#ident)),
                ty if is_copy_number(ty) => quote!(#ident),
                _ => return None,
            };
            args.push(arg);
        }
        let original = self.original_path();
        Some(quote! {
            let __rune_expected = if #rt::CHECK_VALUES && ::core::cfg!(debug_assertions) {
                ::core::option::Option::Some(#original #turbofish (#(#args),*))
            } else {
                ::core::option::Option::None
            };
        })
    }

    /// Whether a call is this function calling itself: `f(..)` in a free function,
    /// `Self::f(..)` or `self.f(..)` in an `impl` block.
    fn is_recursive(&self, callee: &Callee, args: &[CallArg]) -> bool {
        let name = self.name();
        match (callee, self.host) {
            (Callee::Function { path, .. }, Host::Free) => path.is_ident(name),
            (Callee::Associated { ty, name: n, .. }, Host::Impl) => {
                ty.is_ident("Self") && n == name
            }
            (Callee::Method { name: n, .. }, Host::Impl) => {
                n == name
                    && matches!(args.first(), Some(CallArg::Struct { root, path, .. })
                        if path.is_empty() && self.body.roots[*root] == "self")
            }
            _ => false,
        }
    }

    /// The expression calling entry point `kind` (`fwd` or `tangent`) of `callee` with `values`
    /// (the arguments, then in forward mode their tangents). Unless the call is recursive, it
    /// goes through a stand-in that takes over when the callee is not `#[differentiable]`; the
    /// reverse pass then reports that as one error naming the callee.
    fn call_expr(
        &self,
        callee: &Callee,
        kind: &str,
        args: &[CallArg],
        mut values: Vec<TokenStream>,
        n_outs: usize,
        mode: Mode,
    ) -> TokenStream {
        let kind = self.kind(kind);
        let recursive = self.is_recursive(callee, args);
        let check = mode == Mode::Reverse && !self.is_twin;
        let name = callee.name();
        match callee {
            Callee::Function { path, turbofish } => {
                let entry = format_ident!("{}", kind);
                if recursive {
                    return quote!(#name::#entry #turbofish (#(#values),*));
                }
                let fallback = hidden("not_differentiable");
                let resolved = hidden("callee");
                let stand_in = fallback_fn(&entry, args, false, n_outs, mode, &[]);
                let check = check.then(|| {
                    let message = format!(
                        "`{name}` is not #[differentiable]: add #[differentiable] to it, or wrap \
                         the differentiated argument in `stop_gradient(..)`"
                    );
                    let (items, bound) = check_trait(&message, "called with differentiated values");
                    let f = hidden("F");
                    let check_fn = hidden("check");
                    quote! {
                        #items
                        fn #check_fn<#f: ?::core::marker::Sized + #bound>() {}
                        #check_fn::<#resolved>();
                    }
                });
                // The stand-in is named like the callee in an outer block; the callee's own type,
                // where it exists, shadows it in the inner one.
                quote!({
                    mod #fallback {
                        pub struct #name {}
                        impl #name {
                            pub #stand_in
                        }
                    }
                    use #fallback::#name as #resolved;
                    {
                        use #path as #resolved;
                        #check
                        #resolved::#entry #turbofish (#(#values),*)
                    }
                })
            }
            Callee::Associated { turbofish, .. } | Callee::Method { turbofish, .. } => {
                let entry = format_ident!("{}_{}", name, kind);
                let method = matches!(callee, Callee::Method { .. });
                let head = match callee {
                    Callee::Associated { ty, .. } => quote!(#ty::#entry),
                    _ => {
                        values.remove(0);
                        let receiver = match &args[0] {
                            CallArg::Struct {
                                root,
                                path,
                                borrowed,
                            } => {
                                let p = path_tokens(&self.body.roots[*root], path);
                                if *borrowed {
                                    p
                                } else {
                                    quote!(::core::clone::Clone::clone(&#p))
                                }
                            }
                            CallArg::Const(t) => quote!((#t)),
                            CallArg::Val { .. } => {
                                unreachable!("a receiver is a structure or a constant")
                            }
                        };
                        quote!(#receiver.#entry)
                    }
                };
                if recursive {
                    return quote!(#head #turbofish (#(#values),*));
                }
                // A trait in scope gives every type the entry point; the type's own (inherent)
                // one takes precedence where it exists.
                let (items, bounds) = if check {
                    let message = if method {
                        format!(
                            "`{name}` is not a #[differentiable] method of `{{Self}}`: add \
                             #[differentiable] to it or to its `impl` block"
                        )
                    } else {
                        format!(
                            "`{name}` is not a #[differentiable] associated function of \
                             `{{Self}}`: add #[differentiable] to it or to its `impl` block, or \
                             wrap the differentiated argument in `stop_gradient(..)`"
                        )
                    };
                    let (items, bound) = check_trait(&message, "called with differentiated values");
                    (items, vec![quote!(Self: #bound)])
                } else {
                    (quote!(), vec![])
                };
                let stand_in = fallback_fn(&entry, args, method, n_outs, mode, &bounds);
                let fallback = hidden("Fallback");
                let x = hidden("X");
                quote!({
                    #items
                    trait #fallback {
                        #stand_in
                    }
                    impl<#x: ?::core::marker::Sized> #fallback for #x {}
                    #head #turbofish (#(#values),*)
                })
            }
        }
    }

    /// What `stmt` saves for the backward pass.
    fn saved_by(&self, stmt: &Stmt) -> Vec<Saved> {
        let a = self.analysis;
        let mut out = Vec::new();
        let value = |v: Val, out: &mut Vec<Saved>| {
            if a.keep_value.contains(&v) {
                out.push(Saved::Value(v));
            }
            if a.keep_shape.contains(&v) {
                out.push(Saved::Shape(v));
            }
        };
        match stmt {
            Stmt::Param { out: v, .. } | Stmt::SlotRead { out: v, .. } => value(*v, &mut out),
            Stmt::Leaf { out: v, path, .. } => {
                value(*v, &mut out);
                if self.useful(*v) {
                    out.extend(path_consts(path).map(Saved::ConstResidual));
                }
            }
            Stmt::Op {
                out: v,
                inputs,
                config,
                ..
            } => {
                value(*v, &mut out);
                for input in inputs {
                    if let Operand::Const(c) = input {
                        if a.keep_const.contains(c) {
                            out.push(Saved::ConstResidual(*c));
                        }
                    }
                }
                for c in config {
                    if a.keep_config.contains(c) {
                        out.push(Saved::Config(*c));
                    }
                }
                if a.keep_sizes.contains(v) {
                    out.push(Saved::Sizes(*v));
                }
                if a.keep_witness.contains(v) {
                    out.push(Saved::Witness(*v));
                }
            }
            Stmt::ListPush { list, index, .. } if self.analysis.list_useful(*list) => {
                out.push(Saved::ConstResidual(*index));
            }
            Stmt::ListGet { out: v, index, .. } => {
                value(*v, &mut out);
                if self.useful(*v) {
                    out.push(Saved::ConstResidual(*index));
                }
            }
            Stmt::ListOp {
                out: v,
                config,
                count,
                ..
            } => {
                value(*v, &mut out);
                if self.useful(*v) {
                    out.push(Saved::ConstResidual(*count));
                    out.extend(config.iter().map(|c| Saved::Config(*c)));
                }
                if a.keep_sizes.contains(v) {
                    out.push(Saved::Sizes(*v));
                }
            }
            Stmt::Call { outs, args, .. } => {
                if outs.iter().any(|o| self.useful(*o)) {
                    out.push(Saved::Pullback(outs[0]));
                    for arg in args {
                        if let CallArg::Struct { path, .. } = arg {
                            out.extend(path_consts(path).map(Saved::ConstResidual));
                        }
                    }
                }
                for o in outs {
                    value(*o, &mut out);
                }
            }
            _ => {}
        }
        out
    }

    /// The expression computing a saved item in the forward pass.
    fn save_expr(&self, saved: &Saved, stmt: &Stmt, hoists: &Hoists) -> TokenStream {
        let rt = rt();
        match saved {
            Saved::Value(v) => {
                let v = val_ident(*v);
                quote!(::core::clone::Clone::clone(#rt::as_tensor(&#v)))
            }
            Saved::Shape(v) => {
                let v = val_ident(*v);
                quote!(#rt::shape_of(&#v))
            }
            Saved::ConstResidual(c) | Saved::Config(c) => {
                let c = const_ident(*c);
                quote!(#rt::Residual::residual(&#c))
            }
            Saved::Sizes(_) => match stmt {
                Stmt::Op { inputs, config, .. } => {
                    let list: Vec<TokenStream> =
                        inputs.iter().map(|o| hoists.forward(*o)).collect();
                    let axis = const_ident(config[0]);
                    quote!(#rt::rules::concat_sizes(&[#(#list),*], #axis))
                }
                Stmt::ListOp { list, config, .. } => {
                    let refs = list_refs(&self.body.lists[list.0]);
                    let axis = const_ident(config[0]);
                    quote!(#rt::rules::concat_sizes(#refs, #axis))
                }
                _ => unreachable!("sizes are saved by concat"),
            },
            Saved::Witness(_) => {
                let Stmt::Op { inputs, .. } = stmt else {
                    unreachable!("witnesses are saved by cast")
                };
                let input = inputs[0].val().map(val_ident).expect("cast of a value");
                quote!(#rt::witness(&#input))
            }
            Saved::Pullback(v) => pullback_ident(*v).into_token_stream(),
        }
    }

    /// For each stage, the values and shapes that an earlier stage saved and it reads, with the
    /// statement that saved them. A stage's replay in the backward pass sees only what it
    /// popped itself, so the forward pass saves these again when the stage starts.
    fn crossings<'s>(&self, stages: &'s [Vec<Stmt>]) -> Vec<Vec<(Saved, &'s Stmt)>> {
        let mut earlier: Vec<(Val, Saved, &Stmt)> = Vec::new();
        let mut out = Vec::with_capacity(stages.len());
        for stage in stages {
            let mut read = std::collections::HashSet::new();
            walk(stage, &mut |s| {
                s.read_vals(&mut |v| {
                    read.insert(v);
                })
            });
            out.push(
                earlier
                    .iter()
                    .filter(|(v, _, _)| read.contains(v))
                    .map(|&(_, saved, def)| (saved, def))
                    .collect(),
            );
            for stmt in stage {
                for saved in self.saved_by(stmt) {
                    if let Saved::Value(v) | Saved::Shape(v) = saved {
                        earlier.push((v, saved, stmt));
                    }
                }
            }
        }
        out
    }

    /// Every saved item inside a branch or loop (each gets a stack).
    fn stacked(&self) -> Vec<Saved> {
        let mut out = Vec::new();
        fn go(e: &Emitter, stmts: &[Stmt], depth: usize, out: &mut Vec<Saved>) {
            for s in stmts {
                if depth > 0 {
                    out.extend(e.saved_by(s));
                }
                match s {
                    Stmt::Branch { arms, .. } => {
                        for arm in arms {
                            go(e, arm, depth + 1, out);
                        }
                    }
                    Stmt::Stages { stages, .. } => {
                        for stage in stages {
                            go(e, stage, depth + 1, out);
                        }
                    }
                    Stmt::Loop { body, .. } => go(e, body, depth + 1, out),
                    _ => {}
                }
            }
        }
        go(self, &self.body.stmts, 0, &mut out);
        out
    }

    /// The primal statements of one region, in `mode`.
    fn forward_block(
        &self,
        stmts: &[Stmt],
        depth: usize,
        mode: Mode,
        hoists: &Hoists,
    ) -> TokenStream {
        let rt = rt();
        let mut out = Vec::new();
        for stmt in stmts {
            out.push(self.forward_stmt(stmt, depth, mode, hoists));
            if mode == Mode::Reverse {
                for saved in self.saved_by(stmt) {
                    let value = self.save_expr(&saved, stmt, hoists);
                    let ident = saved.ident();
                    let stack = saved.stack();
                    match (depth, &saved) {
                        (0, Saved::Value(_) | Saved::Pullback(_)) => {}
                        (0, _) => out.push(quote!(let #ident = #value;)),
                        _ => out.push(quote!(#stack.push(#value);)),
                    }
                }
            }
            if mode == Mode::Tangent {
                out.push(self.tangent_of(stmt));
            }
        }
        let _ = rt;
        quote!(#(#out)*)
    }

    fn forward_stmt(&self, stmt: &Stmt, depth: usize, mode: Mode, hoists: &Hoists) -> TokenStream {
        let rt = rt();
        match stmt {
            Stmt::Verbatim(t) => t.clone(),
            Stmt::Hoist { id, expr, ty, .. } => {
                let c = const_ident(*id);
                // The annotation comes from the op table; a mismatch is the user's argument's.
                let at = expr
                    .clone()
                    .into_iter()
                    .next()
                    .map_or_else(Span::call_site, |t| t.span());
                let ty = ty.as_ref().map(|t| relocate(quote!(: #t), at));
                quote!(let #c #ty = #expr;)
            }
            Stmt::Param {
                out,
                ident,
                borrowed,
                scalar,
            } => {
                let v = val_ident(*out);
                if *scalar {
                    let value = if *borrowed {
                        quote!(*#ident)
                    } else {
                        quote!(#ident)
                    };
                    quote!(let #v = #rt::Tensor::scalar(#value);)
                } else if *borrowed {
                    quote!(let #v = ::core::clone::Clone::clone(#ident);)
                } else {
                    quote!(let #v = #ident;)
                }
            }
            Stmt::Op {
                out,
                op,
                inputs,
                config,
                turbofish,
                span,
                fallible,
                ..
            } => {
                let ctx = OpCtx {
                    out: *out,
                    op,
                    inputs,
                    config,
                    turbofish,
                    k: 0,
                };
                let v = val_ident(*out);
                let e = forward_op(&ctx, hoists, *fallible);
                let question = fallible.then(|| quote!(?));
                relocate_call(quote!(let #v = #e #question;), *span)
            }
            Stmt::StructParam {
                root,
                ident,
                borrowed,
            } => {
                let reference = if *borrowed {
                    quote!(#ident)
                } else {
                    quote!(&#ident)
                };
                // A slice (`&[Layer]`) or an optional reference (`Option<&Tensor<T>>`) enters as
                // the owned `Differentiable` value it copies into.
                let entry = self
                    .sig
                    .params
                    .iter()
                    .find(|p| p.ident == *ident)
                    .and_then(|p| p.active.as_ref())
                    .map_or(Entry::AsIs, |a| a.entry);
                let as_vec = match entry {
                    Entry::SliceToVec => {
                        Some(quote!(let #ident: &::std::vec::Vec<_> = &<[_]>::to_vec(#ident);))
                    }
                    Entry::OptionCloned => Some(quote!(let #ident = #ident.cloned();)),
                    Entry::AsIs => None,
                };
                match mode {
                    Mode::Reverse => {
                        let tpl = template_ident(*root);
                        quote!(#as_vec let #tpl = #rt::template_of(#reference);)
                    }
                    Mode::Tangent => {
                        let index = self
                            .sig
                            .params
                            .iter()
                            .position(|p| p.ident == *ident)
                            .expect("a parameter");
                        let slot = format_ident!("__rune_tangent_{}", index);
                        let ts = struct_tangent_ident(*root);
                        quote!(#as_vec let #ts = #rt::StructTangentSlot::tangent_or_zeros(#slot, #reference);)
                    }
                }
            }
            Stmt::Leaf {
                out,
                root,
                path,
                span,
            } => {
                // Borrowed unless the backward pass keeps it (no copy of a whole `Vec` field
                // that is only looped over). `parameter_part` says what to write where it is a
                // `#[nodiff]` field that is not a tensor.
                let v = val_ident(*out);
                let p = path_tokens(&self.body.roots[*root], path);
                let part = if path.is_empty() {
                    quote!(&#p)
                } else {
                    relocate(quote!(#rt::parameter_part(&#p)), *span)
                };
                if self.analysis.keep_value.contains(out) {
                    quote!(let #v = ::core::clone::Clone::clone(#part);)
                } else {
                    quote!(let #v = #part;)
                }
            }
            Stmt::Call {
                outs,
                tuple,
                callee,
                args,
                span,
                fallible,
            } => {
                let question = fallible.then(|| quote!(?));
                let bound = bind_outs(outs, *tuple);
                let recursive = self.is_recursive(callee, args);
                match mode {
                    Mode::Reverse => {
                        let values = call_args(args, &self.body.roots);
                        let call = self.call_expr(callee, "fwd", args, values, outs.len(), mode);
                        let pb = pullback_ident(outs[0]);
                        let call = if recursive {
                            // A pullback that holds its own type: boxed, behind a reference count
                            // so that it stays `Clone`.
                            let raw = hidden("pullback_raw");
                            let cot = self.sig.cotangent_type();
                            let slots = self.sig.slot_types();
                            quote! {
                                let (#bound, #raw) = #call #question;
                                let #pb: ::std::rc::Rc<dyn ::core::ops::Fn(#cot) -> (#(#slots,)*)> =
                                    ::std::rc::Rc::new(move |__rune_c: #cot| ::core::clone::Clone::clone(&#raw)(__rune_c));
                            }
                        } else {
                            quote!(let (#bound, #pb) = #call #question;)
                        };
                        let values: Vec<Ident> = outs.iter().map(|v| val_ident(*v)).collect();
                        let values = outs_as_tensors(&values);
                        relocate(quote!(#call #values), *span)
                    }
                    Mode::Tangent => {
                        let mut all = call_args(args, &self.body.roots);
                        for a in args {
                            all.push(match a {
                                CallArg::Val { val, .. } if self.useful(*val) => {
                                    let t = tangent_ident(*val);
                                    quote!(&#t)
                                }
                                CallArg::Struct { root, path, .. } => {
                                    let ts = struct_tangent_ident(*root);
                                    let p = struct_place(&ts, path, false);
                                    quote!(&#p)
                                }
                                _ => quote!(#rt::NoTangent),
                            });
                        }
                        let call = self.call_expr(callee, "tangent", args, all, outs.len(), mode);
                        let tangents: Vec<Ident> = outs.iter().map(|v| tangent_ident(*v)).collect();
                        let tbound = if *tuple {
                            quote!((#(#tangents),*))
                        } else {
                            tangents[0].to_token_stream()
                        };
                        let values: Vec<Ident> = outs.iter().map(|v| val_ident(*v)).collect();
                        let values = outs_as_tensors(&values);
                        let tangents = outs_as_tensors(&tangents);
                        relocate(
                            quote!(let (#bound, #tbound) = #call #question; #values #tangents),
                            *span,
                        )
                    }
                }
            }
            Stmt::SlotInit { slot, init } => {
                let m = slot_ident(*slot);
                let value = owned_tensor(*init);
                quote!(let mut #m = #value;)
            }
            Stmt::ListNew { ident, init, .. } => quote!(let mut #ident = #init;),
            Stmt::ListPush { list, val, .. } => {
                let ident = &self.body.lists[list.0];
                let value = match val {
                    Operand::Val(_) => owned_tensor(*val),
                    Operand::Const(c) => const_ident(*c).into_token_stream(),
                };
                quote!(#ident.push(#value);)
            }
            Stmt::ListGet { out, list, index } => {
                let ident = &self.body.lists[list.0];
                let (v, i) = (val_ident(*out), const_ident(*index));
                quote!(let #v = ::core::clone::Clone::clone(&#ident[#i]);)
            }
            Stmt::ListOp {
                out,
                op,
                list,
                config,
                span,
                ..
            } => {
                let refs = list_refs(&self.body.lists[list.0]);
                let name = format_ident!("{}", op.name);
                let v = val_ident(*out);
                let config = config.iter().map(|c| const_ident(*c));
                relocate_call(quote!(let #v = #rt::#name(#refs, #(#config),*);), *span)
            }
            Stmt::SlotRead { out, slot } => {
                let m = slot_ident(*slot);
                let v = val_ident(*out);
                if self.optional(*slot) {
                    quote!(let #v = ::core::clone::Clone::clone(::core::option::Option::as_ref(&#m).expect("rune-ad: a branch or return left no value"));)
                } else {
                    quote!(let #v = ::core::clone::Clone::clone(&#m);)
                }
            }
            Stmt::SlotWrite { slot, val } => {
                let m = slot_ident(*slot);
                let value = owned_tensor(*val);
                if self.optional(*slot) {
                    quote!(#m = ::core::option::Option::Some(#value);)
                } else {
                    quote!(#m = #value;)
                }
            }
            Stmt::Branch { id, head, arms } => {
                let bodies: Vec<TokenStream> = arms
                    .iter()
                    .map(|arm| self.forward_block(arm, depth + 1, mode, hoists))
                    .collect();
                // Each arm records itself as it ends, so the arms nest no deeper than the user's
                // branch (rustc's parser limits the depth).
                let stack = arm_stack_ident(*id);
                let indexed: Vec<TokenStream> = bodies
                    .iter()
                    .enumerate()
                    .map(|(i, b)| match mode {
                        Mode::Reverse => quote!({ #b #stack.push(#i); }),
                        Mode::Tangent => quote!({ #b }),
                    })
                    .collect();
                match head {
                    BranchHead::If(cond) => {
                        let (a, b) = (&indexed[0], &indexed[1]);
                        quote!(if #cond #a else #b)
                    }
                    BranchHead::Match {
                        scrutinee,
                        patterns,
                    } => quote!(match #scrutinee { #(#patterns => #indexed)* }),
                }
            }
            Stmt::Stages { id, guard, stages } => {
                let label = stages_label(*id);
                let reached = reached_ident(*id);
                let crossings = match mode {
                    Mode::Reverse => self.crossings(stages),
                    Mode::Tangent => Vec::new(),
                };
                let bodies = stages.iter().enumerate().map(|(k, stage)| {
                    let body = self.forward_block(stage, depth + 1, mode, hoists);
                    let count = (mode == Mode::Reverse).then(|| {
                        let n = k + 1;
                        let again = crossings[k].iter().map(|(saved, def)| {
                            let stack = saved.stack();
                            let value = self.save_expr(saved, def, hoists);
                            quote!(#stack.push(#value);)
                        });
                        quote!(#reached = #n; #(#again)*)
                    });
                    quote!(if !(#guard) { break #label; } #count #body)
                });
                match mode {
                    Mode::Reverse => {
                        let stack = reached_stack_ident(*id);
                        quote! {
                            let mut #reached = 0usize;
                            #label: { #(#bodies)* }
                            #stack.push(#reached);
                        }
                    }
                    Mode::Tangent => quote!(#label: { #(#bodies)* }),
                }
            }
            Stmt::Loop { id, head, body } => {
                let inner = self.forward_block(body, depth + 1, mode, hoists);
                let trips = trips_ident(*id);
                let stack = trips_stack_ident(*id);
                let (count, push, tick) = match mode {
                    Mode::Reverse => (
                        quote!(let mut #trips = 0usize;),
                        quote!(#stack.push(#trips);),
                        quote!(#trips += 1;),
                    ),
                    Mode::Tangent => (quote!(), quote!(), quote!()),
                };
                let looped = match head {
                    LoopHead::For { pattern, iter } => {
                        quote!(for #pattern in #iter { #tick #inner })
                    }
                    LoopHead::Loop => quote!(loop { #tick #inner }),
                };
                quote!(#count #looped #push)
            }
        }
    }

    /// The tangent rule after `stmt` (forward mode).
    fn tangent_of(&self, stmt: &Stmt) -> TokenStream {
        let rt = rt();
        match stmt {
            Stmt::Param { out: v, .. } if self.useful(*v) => {
                let index = self
                    .param_vals()
                    .iter()
                    .position(|pv| *pv == Some(*v))
                    .expect("a parameter value");
                let slot = format_ident!("__rune_tangent_{}", index);
                let t = tangent_ident(*v);
                let vi = val_ident(*v);
                quote!(let #t = #rt::TangentSlot::tangent_or_zeros(#slot, &#vi);)
            }
            Stmt::Op {
                out: v,
                op,
                inputs,
                config,
                turbofish,
                span,
                ..
            } if self.useful(*v) => {
                let ctx = OpCtx {
                    out: *v,
                    op,
                    inputs,
                    config,
                    turbofish,
                    k: 0,
                };
                let call = rule_call(&ops::rules(op).jvp, &ctx, Pass::Tangent, &|v| {
                    self.useful(v)
                });
                let t = tangent_ident(*v);
                relocate(quote!(let #t = #call;), *span)
            }
            Stmt::Leaf {
                out, root, path, ..
            } if self.useful(*out) => {
                let t = tangent_ident(*out);
                let ts = struct_tangent_ident(*root);
                let p = struct_place(&ts, path, false);
                quote!(let #t = ::core::clone::Clone::clone(&#p);)
            }
            Stmt::ListNew { list, .. } if self.analysis.list_useful(*list) => {
                let tl = list_tangent_ident(*list);
                quote!(let mut #tl = ::std::vec::Vec::new();)
            }
            Stmt::ListPush { list, val, index } if self.analysis.list_useful(*list) => {
                let tl = list_tangent_ident(*list);
                let ident = &self.body.lists[list.0];
                let i = const_ident(*index);
                let tangent = match val {
                    Operand::Val(v) if self.useful(*v) => {
                        let t = tangent_ident(*v);
                        quote!(::core::clone::Clone::clone(&#t))
                    }
                    _ => quote!(#rt::Tensor::zeros(#ident[#i].shape())),
                };
                quote!(#tl.push(#tangent);)
            }
            Stmt::ListGet { out, list, index } if self.useful(*out) => {
                let tl = list_tangent_ident(*list);
                let (t, i) = (tangent_ident(*out), const_ident(*index));
                quote!(let #t = ::core::clone::Clone::clone(&#tl[#i]);)
            }
            Stmt::ListOp {
                out,
                op,
                list,
                config,
                span,
                ..
            } if self.useful(*out) => {
                let tl = list_tangent_ident(*list);
                let refs = list_refs(&self.body.lists[list.0]);
                let rule = format_ident!("{}_jvp", op.name);
                let t = tangent_ident(*out);
                let axis = const_ident(config[0]);
                relocate(
                    quote! {
                        let #t = #rt::rules::#rule(
                            #refs,
                            #axis,
                            &#tl.iter().map(::core::option::Option::Some).collect::<::std::vec::Vec<_>>(),
                        );
                    },
                    *span,
                )
            }
            Stmt::SlotInit { slot, init } if self.analysis.slot_useful(*slot) => {
                let tm = slot_tangent_ident(*slot);
                let m = slot_ident(*slot);
                let value = self.tangent_operand(*init, &m);
                quote!(let mut #tm = #value;)
            }
            Stmt::SlotRead { out, slot } if self.useful(*out) => {
                let tm = slot_tangent_ident(*slot);
                let t = tangent_ident(*out);
                if self.optional(*slot) {
                    quote!(let #t = ::core::clone::Clone::clone(::core::option::Option::as_ref(&#tm).expect("rune-ad: a branch or return left no tangent"));)
                } else {
                    quote!(let #t = ::core::clone::Clone::clone(&#tm);)
                }
            }
            Stmt::SlotWrite { slot, val } if self.analysis.slot_useful(*slot) => {
                let tm = slot_tangent_ident(*slot);
                let m = slot_ident(*slot);
                let m_value = if self.optional(*slot) {
                    quote!(::core::option::Option::as_ref(&#m).expect("written"))
                } else {
                    quote!(&#m)
                };
                let value = match val {
                    Operand::Val(v) if self.useful(*v) => {
                        let t = tangent_ident(*v);
                        quote!(::core::clone::Clone::clone(&#t))
                    }
                    _ => quote!(#rt::Tensor::zeros((#m_value).shape())),
                };
                if self.optional(*slot) {
                    quote!(#tm = ::core::option::Option::Some(#value);)
                } else {
                    quote!(#tm = #value;)
                }
            }
            _ => quote!(),
        }
    }

    /// The tangent of a slot's initial value (zeros for a constant).
    fn tangent_operand(&self, o: Operand, m: &Ident) -> TokenStream {
        let rt = rt();
        match o {
            Operand::Val(v) if self.useful(v) => {
                let t = tangent_ident(v);
                quote!(::core::clone::Clone::clone(&#t))
            }
            _ => quote!(#rt::Tensor::zeros(#m.shape())),
        }
    }

    /// The backward replay of one region: pops what it saved, then each statement reversed.
    fn backward_block(&self, stmts: &[Stmt], depth: usize) -> TokenStream {
        let mut out = Vec::new();
        if depth > 0 {
            for stmt in stmts {
                for saved in self.saved_by(stmt) {
                    let ident = saved.ident();
                    let stack = saved.stack();
                    out.push(quote!(let #ident = ::core::option::Option::unwrap(#stack.pop());));
                }
            }
        }
        for stmt in stmts.iter().rev() {
            out.push(self.backward_stmt(stmt, depth));
        }
        quote!(#(#out)*)
    }

    fn backward_stmt(&self, stmt: &Stmt, depth: usize) -> TokenStream {
        let rt = rt();
        match stmt {
            Stmt::Op {
                out,
                op,
                inputs,
                config,
                turbofish,
                span,
                ..
            } if self.useful(*out) => {
                let adj = adjoint_ident(*out);
                let list = op.params.contains(&Param::TensorList);
                let mut contributions = Vec::new();
                for (i, input) in inputs.iter().enumerate() {
                    let Operand::Val(v) = input else { continue };
                    let ctx = OpCtx {
                        out: *out,
                        op,
                        inputs,
                        config,
                        turbofish,
                        k: i,
                    };
                    let rules = ops::rules(op);
                    let rule = if list { &rules.vjp[0] } else { &rules.vjp[i] };
                    let call = rule_call(rule, &ctx, Pass::Backward, &|v| self.useful(v));
                    let target = adjoint_ident(*v);
                    contributions.push(relocate(
                        quote!(#rt::accumulate(&mut #target, #call);),
                        *span,
                    ));
                }
                quote! {
                    if let ::core::option::Option::Some(__rune_g) = #adj.take() {
                        #(#contributions)*
                    }
                }
            }
            Stmt::Call {
                outs, args, span, ..
            } if outs.iter().any(|o| self.useful(*o)) => {
                let pb = pullback_ident(outs[0]);
                let cts: Vec<TokenStream> = outs
                    .iter()
                    .map(|o| {
                        let adj = adjoint_ident(*o);
                        let s = shape_ident(*o);
                        // As the tensor, or its number for a callee returning a number.
                        if self.useful(*o) {
                            quote!(&#rt::arg(#rt::adjoint_or_zeros(#adj.take(), &#s)))
                        } else {
                            quote!(&#rt::arg(#rt::adjoint_or_zeros(::core::option::Option::None, &#s)))
                        }
                    })
                    .collect();
                let ct = if outs.len() == 1 {
                    cts[0].clone()
                } else {
                    quote!((#(#cts),*))
                };
                let slots: Vec<TokenStream> = args
                    .iter()
                    .enumerate()
                    .filter_map(|(i, arg)| match arg {
                        CallArg::Val { val, .. } if self.useful(*val) => {
                            let target = adjoint_ident(*val);
                            let index = syn::Index::from(i);
                            Some(quote!(#rt::accumulate_slot(&mut #target, __rune_slots.#index);))
                        }
                        CallArg::Struct { root, path, .. } => {
                            let g = struct_grad_ident(*root);
                            let p = struct_place(&g, path, true);
                            let index = syn::Index::from(i);
                            Some(quote!(#rt::accumulate_struct_slot(&mut #p, __rune_slots.#index);))
                        }
                        _ => None,
                    })
                    .collect();
                relocate(
                    quote! {
                        let __rune_slots = #pb(#ct);
                        #(#slots)*
                    },
                    *span,
                )
            }
            Stmt::ListNew { list, .. } if self.analysis.list_useful(*list) => {
                // Every element's adjoint has been handed on; the list may be made again by an
                // earlier iteration.
                let al = list_adjoint_ident(*list);
                quote!(#al.clear();)
            }
            Stmt::ListPush {
                list,
                val: Operand::Val(v),
                index,
            } if self.analysis.list_useful(*list) && self.useful(*v) => {
                let al = list_adjoint_ident(*list);
                let (a, i) = (adjoint_ident(*v), residual_ident(*index));
                quote!(#rt::accumulate_option(&mut #a, #rt::list_take(&mut #al, #i));)
            }
            Stmt::ListGet { out, list, index } if self.useful(*out) => {
                let al = list_adjoint_ident(*list);
                let (a, i) = (adjoint_ident(*out), residual_ident(*index));
                quote!(#rt::accumulate_option(#rt::list_slot(&mut #al, #i), #a.take());)
            }
            Stmt::ListOp {
                out,
                op,
                list,
                config,
                count,
                span,
            } if self.useful(*out) => {
                let al = list_adjoint_ident(*list);
                let a = adjoint_ident(*out);
                let n = residual_ident(*count);
                let axis = config_ident(config[0]);
                let contribution = if op.name == "concat" {
                    let z = sizes_ident(*out);
                    quote!(#rt::rules::concat_vjp(&__rune_g, __rune_k, &#z, #axis))
                } else {
                    quote!(#rt::rules::stack_vjp(&__rune_g, __rune_k, #axis))
                };
                relocate(
                    quote! {
                        if let ::core::option::Option::Some(__rune_g) = #a.take() {
                            for __rune_k in 0..#n {
                                #rt::accumulate(#rt::list_slot(&mut #al, __rune_k), #contribution);
                            }
                        }
                    },
                    *span,
                )
            }
            Stmt::SlotRead { out, slot } if self.useful(*out) => {
                let am = slot_adjoint_ident(*slot);
                let a = adjoint_ident(*out);
                quote!(#rt::accumulate_option(&mut #am, #a.take());)
            }
            Stmt::Leaf {
                out, root, path, ..
            } if self.useful(*out) => {
                let a = adjoint_ident(*out);
                let g = struct_grad_ident(*root);
                let p = struct_place(&g, path, true);
                quote! {
                    if let ::core::option::Option::Some(__rune_g) = #a.take() {
                        #rt::accumulate_leaf(&mut #p, __rune_g);
                    }
                }
            }
            Stmt::SlotWrite { slot, val } | Stmt::SlotInit { slot, init: val }
                if self.analysis.slot_useful(*slot) =>
            {
                let am = slot_adjoint_ident(*slot);
                match val {
                    Operand::Val(v) if self.useful(*v) => {
                        let a = adjoint_ident(*v);
                        quote!(#rt::accumulate_option(&mut #a, #am.take());)
                    }
                    _ => quote!(#am = ::core::option::Option::None;),
                }
            }
            Stmt::Branch { id, arms, .. } => {
                // One flat `if` an arm with a backward pass, no deeper than the user's branch.
                let stack = arm_stack_ident(*id);
                let taken = arm_ident(*id);
                let replays: Vec<TokenStream> = arms
                    .iter()
                    .enumerate()
                    .map(|(i, arm)| (i, self.backward_block(arm, depth + 1)))
                    .filter(|(_, b)| !b.is_empty())
                    .map(|(i, b)| quote!(if #taken == #i { #b }))
                    .collect();
                quote! {
                    let #taken = ::core::option::Option::unwrap(#stack.pop());
                    #(#replays)*
                }
            }
            Stmt::Stages { id, stages, .. } => {
                let reached = reached_ident(*id);
                let stack = reached_stack_ident(*id);
                let crossings = self.crossings(stages);
                let replays = stages.iter().enumerate().rev().map(|(k, stage)| {
                    let again = crossings[k].iter().map(|(saved, _)| {
                        let ident = saved.ident();
                        let stack = saved.stack();
                        quote!(let #ident = ::core::option::Option::unwrap(#stack.pop());)
                    });
                    let b = self.backward_block(stage, depth + 1);
                    quote!(if #reached > #k { #(#again)* #b })
                });
                quote! {
                    let #reached = ::core::option::Option::unwrap(#stack.pop());
                    #(#replays)*
                }
            }
            Stmt::Loop { id, body, .. } => {
                let stack = trips_stack_ident(*id);
                let b = self.backward_block(body, depth + 1);
                quote! {
                    for _ in 0..::core::option::Option::unwrap(#stack.pop()) {
                        #b
                    }
                }
            }
            _ => quote!(),
        }
    }

    /// Stacks for everything saved inside regions, trip counts and arms taken.
    fn stack_decls(&self) -> TokenStream {
        let mut names: Vec<Ident> = self.stacked().iter().map(Saved::stack).collect();
        names.sort_by_key(|i| i.to_string());
        names.dedup_by_key(|i| i.to_string());
        let mut decls: Vec<TokenStream> = names
            .iter()
            .map(|stack| quote!(let mut #stack = ::std::vec::Vec::new();))
            .collect();
        walk(&self.body.stmts, &mut |s| match s {
            Stmt::Branch { id, .. } => {
                let stack = arm_stack_ident(*id);
                decls
                    .push(quote!(let mut #stack: ::std::vec::Vec<usize> = ::std::vec::Vec::new();));
            }
            Stmt::Stages { id, .. } => {
                let stack = reached_stack_ident(*id);
                decls
                    .push(quote!(let mut #stack: ::std::vec::Vec<usize> = ::std::vec::Vec::new();));
            }
            Stmt::Loop { id, .. } => {
                let stack = trips_stack_ident(*id);
                decls
                    .push(quote!(let mut #stack: ::std::vec::Vec<usize> = ::std::vec::Vec::new();));
            }
            _ => {}
        });
        quote!(#(#decls)*)
    }

    /// Output slots and branch results start empty.
    fn optional_decls(&self, tangents: bool) -> TokenStream {
        let decls = self.body.output_slots.iter().map(|s| {
            let m = slot_ident(*s);
            let tm = slot_tangent_ident(*s);
            let t = (tangents && self.analysis.slot_useful(*s))
                .then(|| quote!(let mut #tm = ::core::option::Option::None;));
            quote!(let mut #m = ::core::option::Option::None; #t)
        });
        quote!(#(#decls)*)
    }

    /// The body of `f_fwd`: forward statements with residuals saved, then the pullback.
    /// `Ok(result)` for a function returning a `Result`, else `result`.
    fn ok(&self, result: TokenStream) -> TokenStream {
        match self.sig.fallible {
            Some(_) => quote!(::core::result::Result::Ok(#result)),
            None => result,
        }
    }

    /// `?` after a call of a generated function of a function returning a `Result`.
    fn question(&self) -> Option<TokenStream> {
        self.sig.fallible.as_ref().map(|_| quote!(?))
    }

    /// `ty`, or `Result<ty, E>` for a function returning a `Result`.
    fn fallible_type(&self, ty: TokenStream) -> TokenStream {
        match &self.sig.fallible {
            Some(e) => quote!(::core::result::Result<#ty, #e>),
            None => ty,
        }
    }

    fn reverse_body(&self) -> TokenStream {
        let rt = rt();
        let hoists = Hoists::new(self.body);
        let stacks = self.stack_decls();
        let optionals = self.optional_decls(false);
        let fwd = self.forward_block(&self.body.stmts, 0, Mode::Reverse, &hoists);

        // Adjoints and slot adjoints are declared where first named (see `declare_before_use`).
        let mut adjoints = Vec::new();
        for v in (0..self.body.values).map(Val).filter(|v| self.useful(*v)) {
            let adj = adjoint_ident(v);
            adjoints.push((
                adj.clone(),
                quote!(let mut #adj = ::core::option::Option::None;),
            ));
        }
        let mut bwd = Vec::new();
        for root in 0..self.body.roots.len() {
            let g = struct_grad_ident(root);
            let tpl = template_ident(root);
            bwd.push(quote!(let mut #g = #rt::struct_grad_start(&#tpl);));
        }
        for l in (0..self.body.lists.len()).map(List) {
            if self.analysis.list_useful(l) {
                let al = list_adjoint_ident(l);
                bwd.push(quote!(let mut #al = ::std::vec::Vec::new();));
            }
        }
        for s in (0..self.body.slots).map(Slot) {
            if self.analysis.slot_useful(s) {
                let am = slot_adjoint_ident(s);
                adjoints.push((
                    am.clone(),
                    quote!(let mut #am = ::core::option::Option::None;),
                ));
            }
        }
        for (i, out) in self.body.outputs.iter().enumerate() {
            if let OutputElem::Val(v) = out {
                let adj = adjoint_ident(*v);
                let ct = if self.sig.outputs() == 1 {
                    quote!(__rune_cotangent)
                } else {
                    let index = syn::Index::from(i);
                    quote!(__rune_cotangent.#index)
                };
                bwd.push(
                    quote!(#rt::accumulate(&mut #adj, #rt::IntoCotangent::into_cotangent(#ct));),
                );
            }
        }
        bwd.extend(
            self.body
                .stmts
                .iter()
                .rev()
                .map(|stmt| self.backward_stmt(stmt, 0)),
        );
        let slots: Vec<TokenStream> = self
            .sig
            .params
            .iter()
            .zip(self.param_vals())
            .map(|(p, v)| match (p.active.as_ref(), v) {
                (Some(a), _) if a.structure => {
                    let root = self
                        .body
                        .roots
                        .iter()
                        .position(|r| *r == p.ident)
                        .expect("a structure root");
                    let g = struct_grad_ident(root);
                    let tpl = template_ident(root);
                    quote!(#rt::struct_grad_finish(#g, &#tpl))
                }
                (Some(a), Some(v)) => {
                    let adj = adjoint_ident(v);
                    let s = shape_ident(v);
                    let grad = if self.useful(v) {
                        quote!(#rt::finish_grad(#adj, &#s))
                    } else {
                        quote!(#rt::finish_grad(::core::option::Option::None, &#s))
                    };
                    if a.scalar {
                        quote!(#grad.item())
                    } else {
                        grad
                    }
                }
                _ => quote!(#rt::NoGrad),
            })
            .collect();

        let value = self.output_value();
        let cot_ty = self.sig.cotangent_type();
        bwd.push(quote!((#(#slots,)*)));
        let bwd = declare_before_use(adjoints, bwd);
        let bwd = gather_lets(quote!(#(#bwd)*));
        let result = self.ok(quote! {
            (__rune_value, move |__rune_cotangent: #cot_ty| {
                #bwd
            })
        });
        gather_lets(quote! {
            #stacks
            #optionals
            #fwd
            let __rune_value = #value;
            #result
        })
    }

    /// The value of each active parameter, in parameter order (`None` for constants).
    fn param_vals(&self) -> Vec<Option<Val>> {
        let mut vals = self.body.stmts.iter().filter_map(|s| match s {
            Stmt::Param { out, .. } => Some(*out),
            _ => None,
        });
        self.sig
            .params
            .iter()
            .map(|p| {
                p.active
                    .as_ref()
                    .filter(|a| !a.structure)
                    .and_then(|_| vals.next())
            })
            .collect()
    }

    /// The function's return value built from the output locals (cloned: the pullback may keep
    /// the same tensors).
    fn output_value(&self) -> TokenStream {
        let rt = rt();
        let elems: Vec<TokenStream> = self
            .body
            .outputs
            .iter()
            .map(|o| match o {
                // A function returning a number: its 0-d tensor's number.
                OutputElem::Val(v) if self.sig.scalar_out => {
                    let v = val_ident(*v);
                    quote!(#rt::as_tensor(&#v).item())
                }
                OutputElem::Val(v) => {
                    let v = val_ident(*v);
                    quote!(::core::clone::Clone::clone(#rt::as_tensor(&#v)))
                }
                OutputElem::Const(c) => const_ident(*c).into_token_stream(),
            })
            .collect();
        let value = if self.sig.outputs() == 1 {
            elems
                .first()
                .cloned()
                .unwrap_or_else(|| quote!(::core::unreachable!()))
        } else {
            quote!((#(#elems,)*))
        };
        match (&self.sig.returns, &self.body.aux) {
            (Returns::Aux { .. }, Some(OutputAux::Expr(e))) => quote!((#value, #e)),
            _ => value,
        }
    }

    /// The body of `f_tangent`.
    fn tangent_body(&self) -> TokenStream {
        let rt = rt();
        let hoists = Hoists::new(self.body);
        let optionals = self.optional_decls(true);
        let fwd = self.forward_block(&self.body.stmts, 0, Mode::Tangent, &hoists);
        let value = self.output_value();
        let tangents: Vec<TokenStream> = self
            .body
            .outputs
            .iter()
            .map(|o| match o {
                OutputElem::Val(v) if self.useful(*v) && self.sig.scalar_out => {
                    let t = tangent_ident(*v);
                    quote!(#t.item())
                }
                OutputElem::Val(_) | OutputElem::Const(_) if self.sig.scalar_out => {
                    quote!(::core::default::Default::default())
                }
                OutputElem::Val(v) if self.useful(*v) => tangent_ident(*v).into_token_stream(),
                OutputElem::Val(v) => {
                    let v = val_ident(*v);
                    quote!(#rt::Tensor::zeros(#v.shape()))
                }
                OutputElem::Const(c) => {
                    let c = const_ident(*c);
                    quote!(#rt::Tensor::zeros(#c.shape()))
                }
            })
            .collect();
        let tangent = if self.sig.outputs() == 1 {
            tangents
                .first()
                .cloned()
                .unwrap_or_else(|| quote!(::core::unreachable!()))
        } else {
            quote!((#(#tangents,)*))
        };
        let result = self.ok(quote!((#value, __rune_tangent_out)));
        gather_lets(quote! {
            #optionals
            #fwd
            let __rune_tangent_out = #tangent;
            #result
        })
    }

    /// How each parameter is passed on to a function taking the same parameters, from owned
    /// copies named `copies`.
    fn pass_copies(&self, copies: &[Ident]) -> Vec<TokenStream> {
        self.sig
            .params
            .iter()
            .zip(copies)
            .map(|(p, c)| match &p.ty {
                syn::Type::Reference(_) => quote!(&#c),
                _ => quote!(::core::clone::Clone::clone(&#c)),
            })
            .collect()
    }

    /// Owned copies of every parameter (cheap for tensors), kept by a pullback.
    fn copy_params(&self) -> (Vec<Ident>, TokenStream) {
        let copies: Vec<Ident> = (0..self.sig.params.len())
            .map(|i| hidden(&format!("param{i}")))
            .collect();
        let stmts: Vec<TokenStream> = self
            .sig
            .params
            .iter()
            .zip(&copies)
            .map(|(p, c)| {
                let ident = &p.ident;
                match &p.ty {
                    syn::Type::Reference(_) => {
                        quote!(let #c = ::core::clone::Clone::clone(#ident);)
                    }
                    _ => quote!(let #c = ::core::clone::Clone::clone(&#ident);),
                }
            })
            .collect();
        (copies, quote!(#(#stmts)*))
    }

    /// The value from the original function, the parameters kept for the pullback.
    fn value_and_copies(&self) -> (Vec<Ident>, TokenStream) {
        let name = self.original_path();
        let (_, ty_generics, _) = self.func.sig.generics.split_for_impl();
        let turbofish = ty_generics.as_turbofish();
        let (copies, stmts) = self.copy_params();
        let args = self.pass_copies(&copies);
        (
            copies,
            quote! {
                #stmts
                let __rune_value = #name #turbofish (#(#args),*);
            },
        )
    }

    /// Slots of the pullback's result from a rule's gradients (in active-parameter order).
    fn slots_from_grads(&self, grads: &Ident) -> TokenStream {
        let rt = rt();
        let n_active = self.sig.active().count();
        let mut k = 0;
        let slots = self.sig.params.iter().map(|p| match p.active {
            Some(_) => {
                let index = syn::Index::from(k);
                k += 1;
                if n_active == 1 {
                    quote!(#grads)
                } else {
                    quote!(#grads.#index)
                }
            }
            None => quote!(#rt::NoGrad),
        });
        let slots: Vec<TokenStream> = slots.collect();
        quote!((#(#slots,)*))
    }

    /// `f_fwd` under `custom_vjp = rule`: the value from the original function, and a pullback
    /// that calls `rule(params.., cotangent)`.
    fn custom_pullback_body(&self, rule: &syn::Path) -> TokenStream {
        let (copies, head) = self.value_and_copies();
        let args = self.pass_copies(&copies);
        let cot_ty = self.sig.cotangent_type();
        let grads = hidden("rule_grads");
        let slots = self.slots_from_grads(&grads);
        quote! {
            #head
            (__rune_value, move |__rune_cotangent: #cot_ty| {
                let #grads = #rule(#(#args,)* __rune_cotangent);
                #slots
            })
        }
    }

    /// `f_fwd` under `checkpoint`: the value from the original function, and a pullback that
    /// keeps only the parameters and reruns the saving forward pass when called.
    fn checkpoint_body(&self, saving: &TokenStream) -> TokenStream {
        let (_, ty_generics, _) = self.func.sig.generics.split_for_impl();
        let turbofish = ty_generics.as_turbofish();
        let (copies, head) = self.value_and_copies();
        let args = self.pass_copies(&copies);
        let cot_ty = self.sig.cotangent_type();
        quote! {
            #head
            (__rune_value, move |__rune_cotangent: #cot_ty| {
                let (_, __rune_pullback) = #saving #turbofish (#(#args),*);
                __rune_pullback(__rune_cotangent)
            })
        }
    }

    /// `f_tangent` under `custom_jvp = rule`: the value from the original function and the
    /// tangent from `rule(params.., tangents..)`.
    fn custom_tangent_body(&self, rule: &syn::Path) -> TokenStream {
        let rt = rt();
        let (copies, head) = self.value_and_copies();
        let args = self.pass_copies(&copies);
        let mut tangents = Vec::new();
        let mut resolve = Vec::new();
        for (i, (p, c)) in self.sig.params.iter().zip(&copies).enumerate() {
            let Some(a) = &p.active else { continue };
            let slot = format_ident!("__rune_tangent_{}", i);
            let t = hidden(&format!("rule_tangent{i}"));
            let via = if a.structure {
                quote!(#rt::StructTangentSlot::tangent_or_zeros(#slot, &#c))
            } else {
                quote!(#rt::TangentSlot::tangent_or_zeros(#slot, &#c))
            };
            resolve.push(quote!(let #t = #via;));
            tangents.push(quote!(&#t));
        }
        quote! {
            #head
            #(#resolve)*
            let __rune_tangent_out = #rule(#(#args,)* #(#tangents),*);
            (__rune_value, __rune_tangent_out)
        }
    }

    /// `f_hvp` (forward over reverse): `f_grad` run on dual numbers whose tangents are the
    /// directions. Written for functions generic over their element type; a function on a
    /// concrete element type gets it through its generic twin.
    fn hvp(&self, lints: &TokenStream) -> TokenStream {
        let rt = rt();
        if !matches!(self.sig.returns, Returns::Single(_)) {
            return quote!();
        }
        if self.sig.active().any(|(_, a)| a.structure) {
            return quote!();
        }
        let Some((_, first)) = self.sig.active().next() else {
            return quote!();
        };
        let elem = &first.elem;
        let elem_name = elem.to_token_stream().to_string();
        let generics = &self.func.sig.generics;
        let generic = generics.type_params().any(|t| t.ident == elem_name);
        if self.is_twin || (!generic && self.dual_twin.is_none()) {
            return quote!();
        }
        let name = self.name();
        let vis = &self.func.vis;
        let (_, ty_generics, where_clause) = generics.split_for_impl();
        // A concrete function's gradient on dual numbers is its twin's.
        let grad_path = match (generic, self.host) {
            (true, _) => self.public_path("grad"),
            (false, Host::Free) => quote!(#name::dual_grad),
            (false, Host::Impl) => {
                let item = format_ident!("{}_dual_grad", name);
                quote!(Self::#item)
            }
        };
        let hvp_name = self.public_name("hvp");
        // The turbofish instantiating the element type with its dual numbers.
        let args: Vec<TokenStream> = generics
            .params
            .iter()
            .filter_map(|g| match g {
                syn::GenericParam::Type(t) if t.ident == elem_name => {
                    Some(quote!(#rt::Dual<#elem>))
                }
                syn::GenericParam::Type(t) => Some(t.ident.to_token_stream()),
                syn::GenericParam::Const(c) => Some(c.ident.to_token_stream()),
                syn::GenericParam::Lifetime(_) => None,
            })
            .collect();
        // Generic: every parameter whose type names the element type is lifted. Concrete: the
        // twin takes `Tensor<Dual<E>>` where the function takes `Tensor<E>`, and plain scalars.
        let tensor_of_elem = format!("Tensor < {elem_name} >");
        let mentions_elem = |ty: &syn::Type| {
            let text = ty.to_token_stream().to_string();
            if generic {
                ty.to_token_stream()
                    .into_iter()
                    .any(|t| matches!(&t, TokenTree::Ident(i) if *i == elem_name))
                    || text.contains(&format!("< {elem_name} >"))
            } else {
                text.contains(&tensor_of_elem)
            }
        };
        let is_elem = |ty: &syn::Type| {
            let ty = match ty {
                syn::Type::Reference(r) => &*r.elem,
                ty => ty,
            };
            matches!(ty, syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident(elem_name.as_str()))
        };
        let mut lifts = Vec::new();
        let mut call_args = Vec::new();
        let mut directions = Vec::new();
        for (i, p) in self.sig.params.iter().enumerate() {
            let ident = &p.ident;
            let lifted = hidden(&format!("dual{i}"));
            let (borrowed, reference) = match &p.ty {
                syn::Type::Reference(_) => (true, quote!(#ident)),
                _ => (false, quote!(&#ident)),
            };
            match &p.active {
                Some(_) => {
                    let d = format_ident!("{}_direction", ident, span = Span::mixed_site());
                    let ty = Signature::grad_type(p);
                    directions.push(quote!(#d: &#ty));
                    lifts.push(quote!(let #lifted = #rt::dual_tensor(#reference, #d);));
                }
                // A scalar of a generic element type is a dual constant; any other type that
                // names the element (a tensor of it, a concrete scalar) lifts by `Lift`.
                None if generic && is_elem(&p.ty) => {
                    lifts.push(quote!(let #lifted = #rt::lift_element(#reference);));
                }
                None if mentions_elem(&p.ty) => {
                    lifts.push(quote!(let #lifted = #rt::Lift::lift(#reference);));
                }
                None => {
                    call_args.push(quote!(#ident));
                    continue;
                }
            }
            call_args.push(if borrowed {
                quote!(&#lifted)
            } else {
                quote!(#lifted)
            });
        }
        let call_turbofish = if generic {
            quote!(::<#(#args),*>)
        } else {
            ty_generics.as_turbofish().to_token_stream()
        };
        let n_active = self.sig.active().count();
        let (grads_out, hvps_out) = if n_active == 1 {
            (
                quote!(#rt::dual_primal(&__rune_dual_grads)),
                quote!(#rt::dual_tangent(&__rune_dual_grads)),
            )
        } else {
            let idx: Vec<syn::Index> = (0..n_active).map(syn::Index::from).collect();
            (
                quote!((#(#rt::dual_primal(&__rune_dual_grads.#idx),)*)),
                quote!((#(#rt::dual_tangent(&__rune_dual_grads.#idx),)*)),
            )
        };
        let grads_ty = self.sig.grads_type();
        let params_plain: Vec<TokenStream> = self
            .sig
            .params
            .iter()
            .map(|p| {
                let (ident, ty) = (&p.ident, &p.ty);
                quote!(#ident: #ty)
            })
            .collect();
        let link = self.link();
        let doc = format!(" The gradient of {link} and its Hessian times the given directions (forward over reverse: the reverse pass run on dual numbers).");
        quote! {
            #[doc = #doc]
            #lints
            #[track_caller]
            #vis fn #hvp_name #generics (#(#params_plain,)* #(#directions),*) -> (#grads_ty, #grads_ty) #where_clause {
                #(#lifts)*
                let __rune_dual_grads = #grad_path #call_turbofish (#(#call_args),*);
                (#grads_out, #hvps_out)
            }
        }
    }

    /// An intra-doc link to the function.
    fn link(&self) -> String {
        match self.host {
            Host::Free => format!("[`{}`]", self.name()),
            Host::Impl => format!("[`Self::{}`]", self.name()),
        }
    }

    /// All generated items: the hidden entry points (for a free function, the items of the
    /// type of its name), then the public ones.
    pub fn emit(&self) -> Generated {
        let rt = rt();
        let f = self.func;
        let vis = &f.vis;
        let name = self.name();
        let generics = &f.sig.generics;
        let (_, ty_generics, where_clause) = generics.split_for_impl();
        let turbofish = ty_generics.as_turbofish();
        let name_str = name.to_string();

        // Parameters as declared (without `#[nodiff]`), keeping `mut` only where the body may
        // need it (constants); wrappers pass every parameter through unchanged.
        let params_decl: Vec<TokenStream> = self
            .sig
            .params
            .iter()
            .map(|p| {
                let (ident, ty) = (&p.ident, &p.ty);
                let m = (p.mutable && p.active.is_none()).then(|| quote!(mut));
                quote!(#m #ident: #ty)
            })
            .collect();
        let params_plain: Vec<TokenStream> = self
            .sig
            .params
            .iter()
            .map(|p| {
                let (ident, ty) = (&p.ident, &p.ty);
                quote!(#ident: #ty)
            })
            .collect();
        let names: Vec<&Ident> = self.sig.params.iter().map(|p| &p.ident).collect();
        let ret = self.sig.return_type();
        let cot_ty = self.sig.cotangent_type();
        let slot_types = self.sig.slot_types();
        let grads_ty = self.sig.grads_type();
        let value_ty = self.sig.value_type();
        let tangent_ty = value_ty.clone();

        let active_indices: Vec<syn::Index> = self
            .sig
            .params
            .iter()
            .enumerate()
            .filter(|(_, p)| p.active.is_some())
            .map(|(i, _)| syn::Index::from(i))
            .collect();
        let grads_from_slots = if active_indices.len() == 1 {
            let i = &active_indices[0];
            quote!(__rune_slots.#i)
        } else {
            quote!((#(__rune_slots.#active_indices,)*))
        };

        // Tangent slots: differentiated parameters take `&Tensor` or `NoTangent`; others ignore
        // theirs.
        let tangent_slots: Vec<TokenStream> = self
            .sig
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let slot = format_ident!("__rune_tangent_{}", i);
                match &p.active {
                    Some(a) if a.structure => {
                        let ty = Signature::grad_type(p);
                        quote!(#slot: impl #rt::StructTangentSlot<#ty>)
                    }
                    Some(a) => {
                        let e = &a.elem;
                        quote!(#slot: impl #rt::TangentSlot<#e>)
                    }
                    None => quote!(#slot: impl #rt::IgnoredTangent),
                }
            })
            .collect();
        let tangent_params: Vec<TokenStream> = self
            .sig
            .active()
            .map(|(p, _)| {
                let t = format_ident!("{}_tangent", p.ident, span = Span::mixed_site());
                let ty = Signature::grad_type(p);
                quote!(#t: &#ty)
            })
            .collect();
        let tangent_args: Vec<TokenStream> = self
            .sig
            .params
            .iter()
            .map(|p| match p.active {
                Some(_) => format_ident!("{}_tangent", p.ident, span = Span::mixed_site())
                    .into_token_stream(),
                None => quote!(#rt::NoTangent),
            })
            .collect();

        let lints = lints();
        let cotangent = Ident::new("cotangent", Span::mixed_site());
        let reverse = self.reverse_body();
        let tangent = match &self.options.custom_jvp {
            Some(rule) => self.custom_tangent_body(rule),
            None => self.tangent_body(),
        };
        let fwd_name = self.hidden_name("fwd");
        let tangent_name = self.hidden_name("tangent");
        let tangent_path = self.hidden_path("tangent");
        // With a custom VJP or a checkpoint, callers reach this function through `fwd`, whose
        // pullback runs the rule or recomputes; its own entry points use the derived pass.
        let derived = if self.options.checkpoint || self.options.custom_vjp.is_some() {
            "fwd_derived"
        } else {
            "fwd"
        };
        let derived_fwd = self.hidden_name(derived);
        let derived_path = self.hidden_path(derived);
        let entry_fwd = if self.options.custom_vjp.is_some() {
            self.hidden_path("fwd")
        } else {
            derived_path.clone()
        };
        let pullback_ty =
            quote!(impl ::core::ops::FnOnce(#cot_ty) -> (#(#slot_types,)*) + ::core::clone::Clone);
        // A function returning `Result<value, E>`: every generated function returns a `Result`.
        let fwd_ret = self.fallible_type(quote!((#ret, #pullback_ty)));
        let tangent_ret = self.fallible_type(quote!((#ret, #tangent_ty)));
        let question = self.question();
        let outer_fwd = match (&self.options.custom_vjp, self.options.checkpoint) {
            (Some(rule), _) => Some(self.custom_pullback_body(rule)),
            (None, true) => Some(self.checkpoint_body(&derived_path)),
            (None, false) => None,
        }
        .map(|body| {
            quote! {
                #[doc(hidden)]
                #lints
                #vis fn #fwd_name #generics (#(#params_decl),*) -> #fwd_ret #where_clause {
                    #body
                }
            }
        });
        // A function generic over its element type serves dual-number twins of its callers
        // directly: its dual entry points are its own.
        let generic_elem = self.sig.active().next().is_some_and(|(_, a)| {
            let e = a.elem.to_token_stream().to_string();
            generics.type_params().any(|t| t.ident == e)
        });
        let dual_aliases = (generic_elem && !self.is_twin).then(|| {
            let (dual_fwd, dual_tangent) = match self.host {
                Host::Free => (format_ident!("dual_fwd"), format_ident!("dual_tangent")),
                Host::Impl => (
                    format_ident!("{}_dual_fwd", name),
                    format_ident!("{}_dual_tangent", name),
                ),
            };
            let fwd_path = self.hidden_path("fwd");
            let tangent_slots = tangent_slots.clone();
            let slot_names: Vec<Ident> = (0..self.sig.params.len())
                .map(|i| format_ident!("__rune_tangent_{}", i))
                .collect();
            quote! {
                #[doc(hidden)]
                #lints
                #vis fn #dual_fwd #generics (#(#params_plain),*) -> #fwd_ret #where_clause {
                    #fwd_path #turbofish (#(#names),*)
                }
                #[doc(hidden)]
                #lints
                #vis fn #dual_tangent #generics (#(#params_plain,)* #(#tangent_slots),*)
                    -> #tangent_ret #where_clause
                {
                    #tangent_path #turbofish (#(#names,)* #(#slot_names),*)
                }
            }
        });
        // The derivatives stand for the original: it counts as used (a twin has none).
        let uses_original = (!self.is_twin).then(|| {
            let original = self.original_path();
            quote!(let _ = #original #turbofish;)
        });
        let has_aux = matches!(self.sig.returns, Returns::Aux { .. });
        let value_of = if has_aux {
            quote!(&__rune_value.0)
        } else {
            quote!(&__rune_value)
        };
        let aux_ty = match &self.sig.returns {
            Returns::Aux { aux, .. } => Some(aux),
            _ => None,
        };
        let grad_ret = match aux_ty {
            Some(aux) => quote!((#grads_ty, #aux)),
            None => grads_ty.clone(),
        };
        let link = self.link();

        let hidden = quote! {
            #[doc(hidden)]
            #lints
            #vis fn #derived_fwd #generics (#(#params_decl),*) -> #fwd_ret #where_clause
            {
                #uses_original
                #reverse
            }

            #outer_fwd

            #dual_aliases

            #[doc(hidden)]
            #lints
            #vis fn #tangent_name #generics (#(#params_decl,)* #(#tangent_slots),*)
                -> #tangent_ret #where_clause
            {
                #uses_original
                #tangent
            }
        };

        // With the `check-values` feature, in debug builds, each public entry point also runs the
        // plain function and checks that it returns exactly its value.
        // A dual-number twin has no plain function of its own to compare with.
        let expected = (!self.is_twin)
            .then(|| self.expected_value(&turbofish))
            .flatten();
        let checks = expected.is_some();
        let check = |variant: &str, value: TokenStream| {
            if !checks {
                return quote!();
            }
            let value = if has_aux {
                quote!(&(#value).0)
            } else {
                quote!(&#value)
            };
            // The plain function's value: inside `Ok` for a function returning a `Result` (an
            // error there is not compared), without the aux.
            let plain = if self.sig.fallible.is_some() {
                quote!(__rune_expected
                    .as_ref()
                    .and_then(|__rune_r| ::core::result::Result::as_ref(__rune_r).ok()))
            } else {
                quote!(__rune_expected.as_ref())
            };
            let expected = if has_aux {
                quote!(#plain.map(|__rune_e| &__rune_e.0))
            } else {
                plain
            };
            quote!(#rt::check_same_value(#name_str, #variant, #expected, #value);)
        };
        let check_vag = check("value_and_grad", quote!(__rune_value));
        let check_vjp = check("vjp", quote!(__rune_value));
        let check_pullback = check("pullback", quote!(__rune_value));
        let check_jvp = check("jvp", quote!(__rune_out.0));
        // The value and the gradients, `(__rune_value, __rune_grads)`.
        let value_and_grads = quote! {
            #expected
            let (__rune_value, __rune_pullback) = #entry_fwd #turbofish (#(#names),*) #question;
            #check_vag
            let __rune_seed = #rt::scalar_seed(#name_str, #value_of);
            let __rune_slots = __rune_pullback(&__rune_seed);
            let __rune_grads = #grads_from_slots;
        };
        let grad_out = self.ok(if has_aux {
            quote!((__rune_grads, __rune_value.1))
        } else {
            quote!(__rune_grads)
        });
        let grad_ret = self.fallible_type(grad_ret);
        let vag_ret = self.fallible_type(quote!((#ret, #grads_ty)));
        let vag_out = self.ok(quote!((__rune_value, __rune_grads)));
        let pullback_ret =
            self.fallible_type(quote!((#ret, impl ::core::ops::Fn(#cot_ty) -> #grads_ty)));
        let vjp_ret = self.fallible_type(quote!((#ret, #grads_ty)));
        let pullback_out = self.ok(quote! {
            (__rune_value, move |#cotangent: #cot_ty| {
                let __rune_slots = ::core::clone::Clone::clone(&__rune_pullback)(#cotangent);
                #grads_from_slots
            })
        });
        let vjp_out = self.ok(quote!((__rune_value, #grads_from_slots)));
        let jvp_out = self.ok(quote!(__rune_out));
        // A twin has only what `f_hvp` runs: its gradient, hidden.
        if self.is_twin {
            let grad_name = self.hidden_name("grad");
            return Generated {
                hidden: quote! {
                    #hidden

                    #[doc(hidden)]
                    #lints
                    #vis fn #grad_name #generics (#(#params_plain),*) -> #grad_ret #where_clause {
                        #value_and_grads
                        #grad_out
                    }
                },
                public: quote!(),
            };
        }

        // Gradients need a one-element value: tuple-valued functions get `f_vjp` and `f_jvp` only.
        let vag_name = self.public_name("value_and_grad");
        let grad_name = self.public_name("grad");
        let doc_vag =
            format!(" The value of {link} and its gradient (the value must have one element).");
        let doc_grad = format!(" The gradient of {link} (whose value must have one element).");
        let scalar_entry_points = (!matches!(self.sig.returns, Returns::Tuple(_))).then(|| {
            quote! {
                #[doc = #doc_vag]
                #lints
                #[track_caller]
                #vis fn #vag_name #generics (#(#params_plain),*) -> #vag_ret #where_clause {
                    #value_and_grads
                    #vag_out
                }

                #[doc = #doc_grad]
                #lints
                #[track_caller]
                #vis fn #grad_name #generics (#(#params_plain),*) -> #grad_ret #where_clause {
                    #value_and_grads
                    #grad_out
                }
            }
        });

        let hvp = self.hvp(&lints);
        let pullback_name = self.public_name("pullback");
        let vjp_name = self.public_name("vjp");
        let jvp_name = self.public_name("jvp");
        let doc_pullback = format!(" The value of {link} and its pullback: a function that takes a cotangent of the value's shape and returns the gradients, callable many times (the forward pass runs once).");
        let doc_vjp = format!(" Reverse mode of {link}: its value and the cotangent pulled back to each differentiated parameter.");
        let doc_jvp = format!(" Forward mode of {link}: its value and the directional derivative along the given tangents.");
        let public = quote! {
            #hvp

            #[doc = #doc_pullback]
            #lints
            #vis fn #pullback_name #generics (#(#params_plain),*)
                -> #pullback_ret #where_clause
            {
                #expected
                let (__rune_value, __rune_pullback) = #entry_fwd #turbofish (#(#names),*) #question;
                #check_pullback
                #pullback_out
            }

            #[doc = #doc_vjp]
            #lints
            #[track_caller]
            #vis fn #vjp_name #generics (#(#params_plain,)* #cotangent: #cot_ty)
                -> #vjp_ret #where_clause
            {
                #expected
                let (__rune_value, __rune_pullback) = #entry_fwd #turbofish (#(#names),*) #question;
                #check_vjp
                #rt::check_cotangent(#name_str, #value_of, &#cotangent);
                let __rune_slots = __rune_pullback(#cotangent);
                #vjp_out
            }

            #[doc = #doc_jvp]
            #lints
            #vis fn #jvp_name #generics (#(#params_plain,)* #(#tangent_params),*)
                -> #tangent_ret #where_clause
            {
                #expected
                let __rune_out = #tangent_path #turbofish (#(#names,)* #(#tangent_args),*) #question;
                #check_jvp
                #jvp_out
            }

            #scalar_entry_points
        };
        Generated { hidden, public }
    }

    /// Signatures with `unreachable!()` bodies, emitted beside the errors so that callers do not
    /// see a cascade of missing-function errors.
    pub fn stubs(func: &ItemFn, sig: &Signature, host: Host) -> Generated {
        let rt = rt();
        let vis = &func.vis;
        let name = &func.sig.ident;
        let generics = &func.sig.generics;
        let where_clause = &generics.where_clause;
        let params: Vec<TokenStream> = sig
            .params
            .iter()
            .map(|p| {
                let (i, t) = (&p.ident, &p.ty);
                quote!(#i: #t)
            })
            .collect();
        let ret = sig.return_type();
        let cot = sig.cotangent_type();
        let slots = sig.slot_types();
        let grads = sig.grads_type();
        let value_ty = sig.value_type();
        let tangent_params: Vec<TokenStream> = sig
            .active()
            .map(|(p, _)| {
                let t = format_ident!("{}_tangent", p.ident);
                let ty = Signature::grad_type(p);
                quote!(#t: &#ty)
            })
            .collect();
        let tangent_slots: Vec<TokenStream> = sig
            .params
            .iter()
            .enumerate()
            .map(|(i, _)| {
                let slot = format_ident!("__rune_tangent_{}", i);
                quote!(#slot: impl #rt::IgnoredTangent)
            })
            .collect();
        let public = |suffix: &str| format_ident!("{}_{}", name, suffix);
        let hidden = |kind: &str| match host {
            Host::Free => format_ident!("{}", kind),
            Host::Impl => format_ident!("{}_{}", name, kind),
        };
        let (fwd, tan, vjp, jvp, grad, vag, pullback) = (
            hidden("fwd"),
            hidden("tangent"),
            public("vjp"),
            public("jvp"),
            public("grad"),
            public("value_and_grad"),
            public("pullback"),
        );
        let grad_ret = match &sig.returns {
            Returns::Aux { aux, .. } => quote!((#grads, #aux)),
            _ => grads.clone(),
        };
        let lints = quote!(#[allow(unused, unreachable_code, clippy::all)]);
        // The same types as the real items, `Result`s for a function returning one.
        let wrap = |ty: TokenStream| match &sig.fallible {
            Some(e) => quote!(::core::result::Result<#ty, #e>),
            None => ty,
        };
        let ok = |e: TokenStream| match &sig.fallible {
            Some(_) => quote!(::core::result::Result::Ok(#e)),
            None => e,
        };
        let fwd_ret = wrap(
            quote!((#ret, impl ::core::ops::FnOnce(#cot) -> (#(#slots,)*) + ::core::clone::Clone)),
        );
        let fwd_body = ok(quote!((::core::unreachable!(), |_: #cot| ::core::unreachable!())));
        let tangent_ret = wrap(quote!((#ret, #value_ty)));
        let grads_ret = wrap(quote!((#ret, #grads)));
        let grad_ret = wrap(grad_ret);
        let pullback_ret = wrap(quote!((#ret, impl ::core::ops::Fn(#cot) -> #grads)));
        let pullback_body = ok(quote!((::core::unreachable!(), |_: #cot| ::core::unreachable!())));
        Generated {
            hidden: quote! {
                #[doc(hidden)] #lints
                #vis fn #fwd #generics (#(#params),*) -> #fwd_ret #where_clause {
                    #fwd_body
                }
                #[doc(hidden)] #lints
                #vis fn #tan #generics (#(#params,)* #(#tangent_slots),*) -> #tangent_ret #where_clause { ::core::unreachable!() }
            },
            public: quote! {
                #lints
                #vis fn #vjp #generics (#(#params,)* cotangent: #cot) -> #grads_ret #where_clause { ::core::unreachable!() }
                #lints
                #vis fn #jvp #generics (#(#params,)* #(#tangent_params),*) -> #tangent_ret #where_clause { ::core::unreachable!() }
                #lints
                #vis fn #vag #generics (#(#params),*) -> #grads_ret #where_clause { ::core::unreachable!() }
                #lints
                #vis fn #grad #generics (#(#params),*) -> #grad_ret #where_clause { ::core::unreachable!() }
                #lints
                #vis fn #pullback #generics (#(#params),*) -> #pullback_ret #where_clause {
                    #pullback_body
                }
            },
        }
    }
}

/// The lints generated functions allow.
fn lints() -> TokenStream {
    quote!(#[allow(unused, non_camel_case_types, clippy::all, clippy::pedantic, clippy::nursery)])
}

/// The items written for one function.
pub struct Generated {
    /// The hidden entry points (`fwd`, `tangent`, ..).
    pub hidden: TokenStream,
    /// The public entry points (`f_vjp`, `f_grad`, ..).
    pub public: TokenStream,
}

/// `generated` in place beside `func`: in an `impl` block, as its items; beside a free
/// function `f`, the public entry points as functions and the hidden ones as associated
/// functions of a type named `f` (which names live in the type namespace, so `use a::f;`
/// imports it with the function).
pub fn place(func: &ItemFn, host: Host, generated: Vec<Generated>) -> TokenStream {
    let (hidden, public): (Vec<_>, Vec<_>) =
        generated.into_iter().map(|g| (g.hidden, g.public)).unzip();
    match host {
        Host::Impl => quote!(#(#hidden)* #(#public)*),
        Host::Free => {
            let rt = rt();
            let vis = &func.vis;
            let name = &func.sig.ident;
            quote! {
                #[doc(hidden)]
                #[allow(non_camel_case_types, dead_code, missing_docs, missing_debug_implementations)]
                #vis struct #name {}
                impl #rt::DifferentiableFunction for #name {}
                impl #name {
                    #(#hidden)*
                }
                #(#public)*
            }
        }
    }
}
