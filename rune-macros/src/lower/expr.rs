//! Expressions: an expression lowered to a differentiated value or to constant code, one
//! expected to give several values (a tuple), and the aux output of `has_aux`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{BinOp, Expr, UnOp};

use crate::ir::{Operand, OutShape, PathSeg, Stmt, Taint, Use};
use crate::names::val_ident;
use crate::ops::{self, Form};

use super::flat::ITER_USES;
use super::syntax::{contains_exit, is_constructor, strip};
use super::{Binding, Lowered, Lowerer};

impl Lowerer<'_> {
    /// Lowers a call whose results a nested tuple pattern binds (`let (loss, (gw, gb)) =
    /// fit_value_and_grad(w, b);`): its values, in order; anything else is an error there.
    pub(super) fn expr_shaped(&mut self, e: &Expr, shape: OutShape) -> Vec<Lowered> {
        match strip(e) {
            Expr::Call(c) if self.is_differentiable_call(c) => self.shaped_call(c, shape),
            Expr::MethodCall(mc) if self.differentiated_method_call(mc) => {
                let receiver = self.expr(&mc.receiver);
                self.structure_method(mc, &receiver, shape)
                    .unwrap_or_else(|| self.nested_pattern_error(e))
            }
            other => self.nested_pattern_error(other),
        }
    }

    /// Whether `mc` calls a method outside the op table with a differentiated receiver or
    /// argument (a `#[differentiable]` method, [`Self::structure_method`]).
    fn differentiated_method_call(&self, mc: &syn::ExprMethodCall) -> bool {
        Self::calls_method(mc)
            && std::iter::once(&*mc.receiver)
                .chain(&mc.args)
                .any(|e| self.mentions_active(e))
    }

    fn nested_pattern_error(&mut self, e: &Expr) -> Vec<Lowered> {
        self.errors.at(
            e,
            "a tuple pattern holding tuples takes the results of a call \
             (`let (loss, (gw, gb)) = fit_value_and_grad(w, b);`); bind a tuple expression \
             one level at a time",
        );
        vec![]
    }

    /// Lowers an expression expected to produce `n` results (a tuple pattern or tuple output).
    pub(super) fn expr_multi(&mut self, e: &Expr, n: usize) -> Vec<Lowered> {
        match strip(e) {
            Expr::Tuple(t) if t.elems.len() == n => t.elems.iter().map(|e| self.expr(e)).collect(),
            // A function returning an array of numbers ends with one.
            Expr::Array(a) if a.elems.len() == n => a.elems.iter().map(|e| self.expr(e)).collect(),
            Expr::Call(c) if self.is_differentiable_call(c) => self.call(c, n),
            Expr::MethodCall(mc)
                if mc.args.is_empty()
                    && ops::tuple_parts(&mc.method.to_string()).is_some_and(|p| p.len() == n)
                    && self.mentions_active(&mc.receiver) =>
            {
                self.tuple_method(mc)
            }
            Expr::MethodCall(mc) if self.differentiated_method_call(mc) => {
                let receiver = self.expr(&mc.receiver);
                self.structure_method(mc, &receiver, OutShape::flat(n)).unwrap_or_else(|| {
                    self.errors.at(
                        mc,
                        format!("expected {n} values here (a tuple expression or a call returning a tuple)"),
                    );
                    vec![]
                })
            }
            Expr::Block(b) if b.label.is_none() => self.in_block(&b.block, |l, tail| match tail {
                Some(t) => l.expr_multi(t, n),
                None => {
                    l.errors
                        .at(b, "this block must end with a tuple expression");
                    vec![]
                }
            }),
            other => match self.expr(other) {
                Lowered::Const { tokens, taint, .. } => (0..n)
                    .map(|i| {
                        let index = syn::Index::from(i);
                        Lowered::Const {
                            tokens: quote!((#tokens).#index),
                            taint,
                            is_ref: false,
                        }
                    })
                    .collect(),
                Lowered::Val(_) => {
                    self.errors.at(
                        other,
                        format!("expected {n} values here (a tuple expression or a call returning a tuple)"),
                    );
                    vec![]
                }
            },
        }
    }

    /// A method returning a tuple of ops' results (`let (q, r) = a.qr();`): the receiver lowered
    /// once and bound to a hidden name, then each part's op called on it (`a.qr_q()`,
    /// `a.qr_r()`).
    fn tuple_method(&mut self, mc: &syn::ExprMethodCall) -> Vec<Lowered> {
        let parts = ops::tuple_parts(&mc.method.to_string()).unwrap_or_default();
        let span = mc.method.span();
        let hidden = crate::names::tuple_receiver(span);
        let receiver = self.expr(&mc.receiver);
        self.bind_lowered(&hidden, false, None, receiver, None);
        parts
            .iter()
            .map(|part| {
                let mut one = mc.clone();
                *one.receiver = syn::parse_quote_spanned!(span=> #hidden);
                one.method = syn::Ident::new(part, span);
                self.method_call(&one)
            })
            .collect()
    }

    pub(super) fn expr(&mut self, e: &Expr) -> Lowered {
        // Code that reads no differentiated value is printed from its syntax tree as written
        // (parentheses, casts, receivers and all), only with bindings renamed.
        if !self.mentions_active(e) && !contains_exit(e) {
            return self.rewrite(e);
        }
        match e {
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Group(g) => self.expr(&g.expr),
            Expr::Reference(r) => {
                let inner = self.expr(&r.expr);
                match inner {
                    Lowered::Val(v) => {
                        if r.mutability.is_some() {
                            self.errors
                                .at(r, "a differentiated tensor cannot be borrowed mutably");
                        }
                        Lowered::Val(v)
                    }
                    Lowered::Const { tokens, taint, .. } => {
                        let and = &r.and_token;
                        let m = &r.mutability;
                        Lowered::Const {
                            tokens: quote!(#and #m (#tokens)),
                            taint,
                            is_ref: true,
                        }
                    }
                }
            }
            Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                let ident = p.path.get_ident().expect("checked");
                match self.lookup(&ident.to_string()).cloned() {
                    Some(Binding::Active(v, _)) => Lowered::Val(v),
                    Some(Binding::Slot(slot)) => {
                        let out = self.new_val();
                        self.stmts.push(Stmt::SlotRead { out, slot });
                        Lowered::Val(out)
                    }
                    Some(Binding::Const {
                        ident: renamed,
                        taint,
                    }) => {
                        let mut renamed = renamed.clone();
                        renamed.set_span(renamed.span().located_at(ident.span()));
                        Lowered::Const {
                            tokens: renamed.into_token_stream(),
                            taint,
                            is_ref: false,
                        }
                    }
                    Some(Binding::Closure(index)) => self.closure_value(index, ident),
                    Some(Binding::List(list)) => {
                        self.errors.at(ident, self.list_uses(list));
                        Lowered::constant(quote!(::core::unreachable!()))
                    }
                    Some(Binding::Iter(_)) => {
                        self.errors.at(ident, ITER_USES);
                        Lowered::constant(quote!(::core::unreachable!()))
                    }
                    Some(Binding::Pullback(_)) => {
                        self.errors.at(ident, super::call::PULLBACK_USES);
                        Lowered::constant(quote!(::core::unreachable!()))
                    }
                    Some(Binding::Local) | None => Lowered::constant(e.to_token_stream()),
                }
            }
            Expr::Lit(_) => Lowered::constant(e.to_token_stream()),
            Expr::MethodCall(mc) => self.method_call(mc),
            Expr::Call(c) if is_constructor(c) => {
                self.errors.at(
                    c,
                    "a differentiated tensor cannot be stored in an enum variant or a tuple \
                     struct here (its gradient would be lost); keep it in a variable, a `Vec`, \
                     or a `Differentiable` structure parameter",
                );
                Lowered::constant(quote!(::core::unreachable!()))
            }
            Expr::Call(c) => match self.tensor_of_numbers(c) {
                Some(l) => l,
                None => self.call_expr(c),
            },
            Expr::Binary(b) => {
                let op = match b.op {
                    BinOp::Add(_) => Some("add"),
                    BinOp::Sub(_) => Some("sub"),
                    BinOp::Mul(_) => Some("mul"),
                    BinOp::Div(_) => Some("div"),
                    _ => None,
                };
                let lhs = self.expr(&b.left);
                let rhs = self.expr(&b.right);
                match (op, &lhs, &rhs) {
                    (_, Lowered::Const { .. }, Lowered::Const { .. }) => {
                        let taint = Self::taint_of(&[&lhs, &rhs]);
                        let (l, r, o) = (self.const_tokens(&lhs), self.const_tokens(&rhs), b.op);
                        Lowered::Const {
                            tokens: quote!((#l) #o (#r)),
                            taint,
                            is_ref: false,
                        }
                    }
                    (Some(op), _, _) => {
                        let spec = ops::lookup(op, Form::Operator).expect("in the table");
                        self.binary_op(spec, lhs, rhs, b.op.span())
                    }
                    // A comparison of numbers in a function of numbers (`if x > 1.0`): a
                    // constant `bool`, whose derivative is zero wherever it has one.
                    (None, _, _) if self.scalar_out && is_comparison(&b.op) => {
                        let side = |l: &Lowered| match l {
                            Lowered::Val(v) => {
                                let v = val_ident(*v);
                                quote!(::rune_ad::__private::number_of(&#v))
                            }
                            c => self.const_tokens(c),
                        };
                        let consts: Vec<&Lowered> = [&lhs, &rhs]
                            .into_iter()
                            .filter(|l| matches!(l, Lowered::Const { .. }))
                            .collect();
                        let (l, r, o) = (side(&lhs), side(&rhs), b.op);
                        Lowered::Const {
                            tokens: quote!((#l) #o (#r)),
                            taint: Self::taint_of(&consts),
                            is_ref: false,
                        }
                    }
                    (None, _, _) => {
                        self.errors.at(
                            b.op,
                            "this operator cannot take a differentiated tensor; supported: \
                             `+ - * /` (comparisons are methods: `lt gt le ge eq ne`)",
                        );
                        Lowered::constant(quote!(::core::unreachable!()))
                    }
                }
            }
            Expr::Unary(u) => {
                let inner = self.expr(&u.expr);
                match (&u.op, inner) {
                    // `*v` of a number parameter taken by reference (`v: &f64`) is its value.
                    (UnOp::Deref(_), Lowered::Val(v)) if self.scalar_out => Lowered::Val(v),
                    (UnOp::Neg(_), Lowered::Val(v)) => {
                        let spec = ops::lookup("neg", Form::Negation).expect("in the table");
                        self.push_op(spec, vec![Operand::Val(v)], vec![], None, u.span(), None)
                    }
                    (op, Lowered::Const { tokens, taint, .. }) => Lowered::Const {
                        tokens: quote!(#op (#tokens)),
                        taint,
                        is_ref: false,
                    },
                    (op, Lowered::Val(_)) => {
                        self.errors.at(
                            op,
                            "this operator cannot take a differentiated tensor; supported: unary `-`",
                        );
                        Lowered::constant(quote!(::core::unreachable!()))
                    }
                }
            }
            Expr::Block(b) if b.label.is_none() => self.in_block(&b.block, |l, tail| match tail {
                Some(t) => l.expr(t),
                None => Lowered::constant(quote!(())),
            }),
            Expr::Index(ix) if self.list_of(&ix.expr).is_some() => {
                let list = self.list_of(&ix.expr).expect("checked");
                let index = match self.expr(&ix.index) {
                    Lowered::Const { tokens, .. } => tokens,
                    Lowered::Val(_) => {
                        self.errors.at(&ix.index, "an index must be a constant");
                        quote!(0)
                    }
                };
                let index = self.hoist(index, Some(quote!(usize)), Use::Plain);
                self.list_get(list, index)
            }
            Expr::Index(ix) => {
                let base = self.expr(&ix.expr);
                if let Some(l) = self.part_at(ix.span(), &base, &ix.index) {
                    return l;
                }
                if let Lowered::Val(v) = base {
                    if let Some(callee) = self.call_values.iter().find(|(c, _)| *c == v) {
                        let callee = callee.1.clone();
                        self.errors.at(
                            ix,
                            format!(
                                "this indexes the value of `{callee}(..)`: a #[differentiable] \
                                 function returning an array or a tuple gives its elements to a \
                                 pattern, `let [a, b] = {callee}(..);` or `let (a, b) = \
                                 {callee}(..);`"
                            ),
                        );
                        return Lowered::constant(quote!(::core::unreachable!()));
                    }
                }
                let index = self.expr(&ix.index);
                let taint = match &base {
                    Lowered::Val(_) => Some(Taint::of(ix)),
                    _ => Self::taint_of(&[&base, &index]),
                };
                let (b, i) = (self.const_tokens(&base), self.const_tokens(&index));
                Lowered::Const {
                    tokens: quote!((#b)[#i]),
                    taint,
                    is_ref: false,
                }
            }
            Expr::Cast(c) => {
                let inner = self.expr(&c.expr);
                match inner {
                    Lowered::Const { tokens, taint, .. } => {
                        let ty = &c.ty;
                        Lowered::Const {
                            tokens: quote!((#tokens) as #ty),
                            taint,
                            is_ref: false,
                        }
                    }
                    // A number made an integer (`n as usize`), as `.item()` reads one: a constant
                    // for control flow, which the result may not depend on otherwise.
                    Lowered::Val(v) if self.scalar_out && is_integer_type(&c.ty) => {
                        let (v, ty) = (val_ident(v), &c.ty);
                        Lowered::Const {
                            tokens: quote!((::rune_ad::__private::real_of(&#v)) as #ty),
                            taint: Some(Taint::of(c)),
                            is_ref: false,
                        }
                    }
                    Lowered::Val(_) => {
                        self.errors.at(
                            c,
                            "`as` cannot convert a tensor; use `.cast::<U>()` (a number may be made \
                             an integer with `as`, for control flow)",
                        );
                        Lowered::constant(quote!(::core::unreachable!()))
                    }
                }
            }
            Expr::Field(f) => {
                if let (Expr::Call(c), syn::Member::Unnamed(_)) = (strip(&f.base), &f.member) {
                    if self.is_differentiable_call(c) {
                        self.errors.at(
                            f,
                            "take the results of a differentiable function that returns a tuple \
                             with `let (a, b) = f(..);`",
                        );
                        return Lowered::constant(quote!(::core::unreachable!()));
                    }
                }
                let base = self.expr(&f.base);
                // A call's result whose field is read is a structure (`g.w`).
                if let Lowered::Val(v) = base {
                    if !self.paths.contains_key(&v) {
                        self.call_root(v);
                    }
                }
                if let Some(l) =
                    self.extend_path(f.span(), &base, |_| PathSeg::Field(f.member.clone()))
                {
                    return l;
                }
                match base {
                    Lowered::Const { tokens, taint, .. } => {
                        let member = &f.member;
                        Lowered::Const {
                            tokens: quote!((#tokens).#member),
                            taint,
                            is_ref: false,
                        }
                    }
                    Lowered::Val(_) => {
                        self.errors.at(
                            f,
                            "a tensor has no fields (fields are read from `Differentiable` \
                             structure parameters, and from the structures that calls of \
                             differentiable functions return)",
                        );
                        Lowered::constant(quote!(::core::unreachable!()))
                    }
                }
            }
            Expr::Tuple(t) => {
                let items: Vec<Lowered> = t.elems.iter().map(|e| self.expr(e)).collect();
                if let Some(pos) = items.iter().position(|l| matches!(l, Lowered::Val(_))) {
                    self.errors.at(
                        &t.elems[pos],
                        "a tuple holding a differentiated tensor can only be returned or \
                         destructured with `let (a, b) = ...`",
                    );
                }
                let refs: Vec<&Lowered> = items.iter().collect();
                let taint = Self::taint_of(&refs);
                let tokens: Vec<TokenStream> = items.iter().map(|l| self.const_tokens(l)).collect();
                Lowered::Const {
                    tokens: quote!((#(#tokens,)*)),
                    taint,
                    is_ref: false,
                }
            }
            Expr::Macro(m) if m.mac.path.is_ident("dbg") => {
                // `dbg!(e)` is `e`, printed on the way (in the forward pass).
                let Ok(inner) = m.mac.parse_body::<Expr>() else {
                    self.errors
                        .at(m, "`dbg!` of a differentiated value takes one expression");
                    return Lowered::constant(quote!(::core::unreachable!()));
                };
                let l = self.expr(&inner);
                if let Lowered::Val(v) = &l {
                    let v = val_ident(*v);
                    let text = inner.to_token_stream().to_string();
                    let at = m.mac.path.span();
                    self.stmts.push(Stmt::Verbatim(
                        quote_spanned! {at=>
                            ::std::eprintln!(
                                "[{}:{}:{}] {} = {:#?}",
                                ::core::file!(), ::core::line!(), ::core::column!(), #text, &#v
                            );
                        }
                        .into(),
                    ));
                }
                l
            }
            Expr::Macro(m) => {
                let (tokens, taint) = self.rewrite_macro(m.mac.tokens.clone(), &m.mac);
                let path = &m.mac.path;
                let bang = &m.mac.bang_token;
                let tokens = match &m.mac.delimiter {
                    syn::MacroDelimiter::Paren(_) => quote!(#path #bang (#tokens)),
                    syn::MacroDelimiter::Brace(_) => quote!(#path #bang {#tokens}),
                    syn::MacroDelimiter::Bracket(_) => quote!(#path #bang [#tokens]),
                };
                Lowered::Const {
                    tokens,
                    taint,
                    is_ref: false,
                }
            }
            Expr::Array(a) => {
                let items: Vec<Lowered> = a.elems.iter().map(|e| self.expr(e)).collect();
                if let Some(pos) = items.iter().position(|l| matches!(l, Lowered::Val(_))) {
                    self.errors.at(
                        &a.elems[pos],
                        "an array of differentiated tensors can only be written as the list \
                         argument of `concat` or `stack` (`concat(&[&a, &b], axis)`)",
                    );
                    return Lowered::constant(quote!(::core::unreachable!()));
                }
                let refs: Vec<&Lowered> = items.iter().collect();
                let taint = Self::taint_of(&refs);
                let tokens: Vec<TokenStream> = items.iter().map(|l| self.const_tokens(l)).collect();
                Lowered::Const {
                    tokens: quote!([#(#tokens),*]),
                    taint,
                    is_ref: false,
                }
            }
            Expr::Closure(_) => self.unsupported(e, "closures"),
            Expr::Unsafe(_) => self.unsupported(e, "`unsafe` blocks"),
            Expr::Async(_) => self.unsupported(e, "`async` blocks"),
            Expr::Await(_) => self.unsupported(e, "`.await`"),
            Expr::Try(t) if self.fallible => self.try_expr(t),
            Expr::Try(_) => self.unsupported(
                e,
                "the `?` operator in a function that does not return a `Result`",
            ),
            Expr::TryBlock(_) => self.unsupported(e, "`try` blocks"),
            Expr::Yield(_) => self.unsupported(e, "`yield`"),
            Expr::If(_) | Expr::Match(_) => self.branch_expr(e, true),
            Expr::ForLoop(_)
            | Expr::While(_)
            | Expr::Loop(_)
            | Expr::Break(_)
            | Expr::Continue(_)
            | Expr::Return(_) => {
                self.control(e);
                Lowered::constant(quote!(()))
            }
            _ => self.rewrite(e),
        }
    }

    pub(super) fn unsupported(&mut self, e: &Expr, what: &str) -> Lowered {
        self.errors.at(
            e,
            format!(
                "#[differentiable] functions do not support {what}; the crate documentation \
                 (\"What the body may contain\") lists what they do"
            ),
        );
        Lowered::constant(quote!(::core::unreachable!()))
    }

    /// The aux of `has_aux`: any expression, tuples of differentiated values included (passed
    /// through as values).
    pub(super) fn aux(&mut self, e: &Expr) -> TokenStream {
        match strip(e) {
            Expr::Tuple(t) => {
                let items: Vec<TokenStream> = t.elems.iter().map(|e| self.aux(e)).collect();
                quote!((#(#items,)*))
            }
            other => match self.expr(other) {
                Lowered::Val(v) => {
                    let v = val_ident(v);
                    quote!(::core::clone::Clone::clone(&#v))
                }
                Lowered::Const { tokens, .. } => tokens,
            },
        }
    }
}

/// Whether `op` compares (`< <= > >= == !=`).
fn is_comparison(op: &BinOp) -> bool {
    matches!(
        op,
        BinOp::Lt(_) | BinOp::Le(_) | BinOp::Gt(_) | BinOp::Ge(_) | BinOp::Eq(_) | BinOp::Ne(_)
    )
}

impl Lowerer<'_> {
    /// A tensor made from differentiated numbers in a function of numbers, which holds them as
    /// 0-d tensors: `Tensor::scalar(a)` is `a`, `Tensor::from([a, b])` their `stack`, and
    /// `Tensor::from_vec(vec![a, b, ..], &shape)` their `stack` reshaped. `None` for any other
    /// call.
    fn tensor_of_numbers(&mut self, c: &syn::ExprCall) -> Option<Lowered> {
        let (ty, f) = super::syntax::associated_fn(c)?;
        if !self.scalar_out || ty != "Tensor" {
            return None;
        }
        if !c.args.iter().any(|a| self.mentions_active(a)) {
            return None;
        }
        let stacked = |elems: &[Expr]| -> Expr {
            syn::parse_quote!(stack(&[#(&::rune_ad::Tensor::scalar(#elems)),*], 0))
        };
        let rewritten: Expr = match (f.as_str(), c.args.len()) {
            ("scalar", 1) => return Some(self.expr(&c.args[0])),
            ("from", 1) => match strip(&c.args[0]) {
                Expr::Array(a) => stacked(&a.elems.iter().cloned().collect::<Vec<_>>()),
                _ => return None,
            },
            ("from_vec", 2) => {
                let elems = super::syntax::new_vec(&c.args[0])?;
                let shape = &c.args[1];
                let s = stacked(&elems);
                syn::parse_quote!(#s.reshape(#shape))
            }
            _ => return None,
        };
        Some(self.expr(&rewritten))
    }
}

/// Whether `ty` is a primitive integer type (`usize`, `i32`, ..).
pub(super) fn is_integer_type(ty: &syn::Type) -> bool {
    const INTEGERS: &[&str] = &[
        "usize", "isize", "u8", "u16", "u32", "u64", "u128", "i8", "i16", "i32", "i64", "i128",
    ];
    match ty {
        syn::Type::Path(p) => p
            .path
            .get_ident()
            .is_some_and(|i| INTEGERS.contains(&i.to_string().as_str())),
        syn::Type::Group(g) => is_integer_type(&g.elem),
        syn::Type::Paren(p) => is_integer_type(&p.elem),
        _ => false,
    }
}
