//! Calls: a call expression sent to a closure, `stop_gradient` or a function op; calls of other
//! `#[differentiable]` functions and methods; and closures bound in the body, inlined where they
//! are called with differentiated values.

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::{Expr, Ident, Pat, Stmt as SynStmt};

use crate::ir::{CallArg, Callee, List, OutShape, Stmt, Taint, Val};
use crate::names::val_ident;
use crate::ops::{self, Form};

use super::iter::Item;
use super::syntax::{contains_try, exits, path_is_param, strip, Within};
use super::{Binding, ClosureDef, Lowered, Lowerer};

/// What a pullback bound inside a differentiated function may be used for.
pub(super) const PULLBACK_USES: &str = "a pullback bound from `g_pullback(..)` inside a \
     #[differentiable] function can only be called, `pb(&cotangent)` (a call of `g_vjp` with \
     the same arguments); to pass it on or keep it, call `g_pullback` outside the function";

impl Lowerer<'_> {
    /// `let (y, pb) = g_pullback(args);` calling a differentiable `g`: `y` is `g(args)`, and `pb`
    /// a pullback each call of which, `pb(&c)`, is a call of `g_vjp(args, &c)` (its value
    /// unread), the arguments as they were here (constants held in locals, as the pullback
    /// holds them). `false` when `init` is no such call.
    pub(super) fn bind_pullback(&mut self, pat: &syn::PatTuple, init: &Expr) -> bool {
        let [value_pat, Pat::Ident(pb)] = pat.elems.iter().collect::<Vec<_>>()[..] else {
            return false;
        };
        if pb.by_ref.is_some() || pb.subpat.is_some() {
            return false;
        }
        let base_of = |name: &Ident| {
            let name = name.to_string();
            name.strip_suffix("_pullback")
                .filter(|b| !b.is_empty())
                .map(str::to_owned)
        };
        // The callees of the value and of `g_vjp`, the receiver of a method, and the
        // arguments.
        let (value_callee, vjp, receiver, syn_args, span) = match strip(init) {
            Expr::Call(c) => {
                let Expr::Path(p) = strip(&c.func) else {
                    return false;
                };
                let Some(last) = p.path.segments.last() else {
                    return false;
                };
                let Some(base) = base_of(&last.ident) else {
                    return false;
                };
                if !self.is_differentiable_call(c) {
                    return false;
                }
                let renamed = |suffix: &str| {
                    let mut path = p.path.clone();
                    let last = path.segments.last_mut().expect("a path has a segment");
                    last.ident = Ident::new(&format!("{base}{suffix}"), last.ident.span());
                    path
                };
                let (Some(value_callee), Some(vjp)) =
                    (self.callee(&renamed("")), self.callee(&renamed("_vjp")))
                else {
                    return true;
                };
                (value_callee, vjp, None, &c.args, c.span())
            }
            // `self.score_pullback(x)`, `model.critic.score_pullback(x)`: a method of a
            // structure parameter (or its part).
            Expr::MethodCall(mc) if self.structure_source(&mc.receiver) => {
                let Some(base) = base_of(&mc.method) else {
                    return false;
                };
                let Lowered::Val(v) = self.expr(&mc.receiver) else {
                    return false;
                };
                let Some((root, path)) = self.paths.get(&v).cloned() else {
                    return false;
                };
                let method = |suffix: &str| Callee::Method {
                    name: Ident::new(&format!("{base}{suffix}"), mc.method.span()),
                    turbofish: mc.turbofish.as_ref().map(|t| t.to_token_stream()),
                };
                let receiver = CallArg::Struct {
                    root,
                    path,
                    borrowed: true,
                };
                (
                    method(""),
                    method("_vjp"),
                    Some(receiver),
                    &mc.args,
                    mc.method.span(),
                )
            }
            _ => return false,
        };
        let (args, arrays) = self.lower_args(syn_args);
        let refs: Vec<&Lowered> = args.iter().collect();
        let taint = Self::taint_of(&refs);
        let lowered: Vec<CallArg> = args
            .into_iter()
            .zip(syn_args)
            .zip(arrays)
            .map(
                |((l, syn_arg), array)| match self.call_arg(l, syn_arg, array) {
                    CallArg::Const(code) => {
                        let id = self.hoist(code.tokens().clone(), None, crate::ir::Use::Plain);
                        CallArg::Const(crate::names::const_ident(id).to_token_stream().into())
                    }
                    other => other,
                },
            )
            .collect();
        let args: Vec<CallArg> = receiver.into_iter().chain(lowered).collect();
        let value = self.push_call(value_callee, args.clone(), taint, OutShape::One, span);
        let value = value.into_iter().next().expect("one value");
        self.bind_item(value_pat, super::iter::Item::Value(value, false));
        self.pullbacks.push(super::PullbackDef { vjp, args, taint });
        let index = self.pullbacks.len() - 1;
        self.bind(&pb.ident.to_string(), Binding::Pullback(index));
        true
    }

    /// `pb(&c)` of a pullback bound by [`Self::bind_pullback`]: the gradients of `g_vjp`, as
    /// `shape` binds them.
    fn call_pullback(&mut self, index: usize, c: &syn::ExprCall, shape: OutShape) -> Vec<Lowered> {
        let def = self.pullbacks[index].clone();
        if c.args.len() != 1 {
            self.errors
                .at(c, "a pullback takes one argument, the cotangent: `pb(&c)`");
            return vec![];
        }
        let (mut cot, mut arrays) = self.lower_args(&c.args);
        let taint = def.taint.or(Self::taint_of(&[&cot[0]]));
        let cot = self.call_arg(cot.remove(0), &c.args[0], arrays.remove(0));
        let mut args = def.args;
        args.push(cot);
        let shape = OutShape::Tuple(vec![OutShape::One, shape]);
        let mut outs = self.push_call(def.vjp, args, taint, shape, c.span());
        if let Lowered::Val(v) = outs.remove(0) {
            self.discarded.insert(v);
        }
        outs
    }

    pub(super) fn function_op_name(c: &syn::ExprCall) -> Option<String> {
        match strip(&c.func) {
            Expr::Path(p) if p.qself.is_none() => {
                p.path.segments.last().map(|s| s.ident.to_string())
            }
            _ => None,
        }
    }

    /// The pullback `c` calls, if it calls one bound by [`Self::bind_pullback`].
    fn pullback_called(&self, c: &syn::ExprCall) -> Option<usize> {
        let Expr::Path(p) = strip(&c.func) else {
            return None;
        };
        match self.lookup(&p.path.get_ident()?.to_string()) {
            Some(Binding::Pullback(index)) => Some(*index),
            _ => None,
        }
    }

    pub(super) fn is_differentiable_call(&self, c: &syn::ExprCall) -> bool {
        if self.pullback_called(c).is_some() {
            return true;
        }
        let name = Self::function_op_name(c);
        let is_op = name
            .as_deref()
            .is_some_and(|n| n == "stop_gradient" || ops::lookup(n, Form::Function).is_some());
        !is_op && c.args.iter().any(|a| self.mentions_active(a))
    }

    pub(super) fn call_expr(&mut self, c: &syn::ExprCall) -> Lowered {
        if let Expr::Path(p) = strip(&c.func) {
            if let Some(ident) = p.path.get_ident() {
                match self.lookup(&ident.to_string()).cloned() {
                    Some(Binding::Closure(index)) => return self.inline_closure(index, c),
                    Some(Binding::Pullback(index)) => {
                        return self
                            .call_pullback(index, c, OutShape::One)
                            .pop()
                            .unwrap_or_else(|| Lowered::constant(quote!(::core::unreachable!())));
                    }
                    _ => {}
                }
            }
        }
        if let Some(mc) = self.number_method(c) {
            return self.method_call(&mc);
        }
        let name = Self::function_op_name(c);
        if name.as_deref() == Some("stop_gradient") && c.args.len() == 1 {
            // A part of a structure parameter read as a constant (a `#[nodiff]` field that
            // is not a tensor, too): the place as written, no leaf.
            if self.structure_source(&c.args[0]) {
                return self.rewrite(&Expr::Call(c.clone()));
            }
            let inner = self.expr(&c.args[0]);
            return match inner {
                Lowered::Val(v) => {
                    let ident = val_ident(v);
                    Lowered::constant(quote!(::rune_ad::__private::detach(&#ident)))
                }
                other => other,
            };
        }
        if let Some(spec) = name.as_deref().and_then(|n| ops::lookup(n, Form::Function)) {
            return self.function_op(c, spec);
        }
        let mut out = self.call(c, 1);
        out.pop()
            .unwrap_or_else(|| Lowered::constant(quote!(::core::unreachable!())))
    }

    /// `f64::sin(x)`, `f32::max(x, y)` with a differentiated argument: the method call
    /// `x.sin()`, `x.max(y)` it names.
    fn number_method(&self, c: &syn::ExprCall) -> Option<syn::ExprMethodCall> {
        let Expr::Path(p) = strip(&c.func) else {
            return None;
        };
        let [ty, method] = [p.path.segments.first()?, p.path.segments.last()?];
        let number_type = p.qself.is_none()
            && p.path.segments.len() == 2
            && (ty.ident == "f64" || ty.ident == "f32")
            && ty.arguments.is_empty();
        if !number_type || c.args.iter().all(|a| !self.mentions_active(a)) {
            return None;
        }
        let mut args = c.args.iter();
        Some(syn::ExprMethodCall {
            attrs: Vec::new(),
            receiver: Box::new(args.next()?.clone()),
            dot_token: Default::default(),
            method: method.ident.clone(),
            turbofish: None,
            paren_token: c.paren_token,
            args: args.cloned().collect(),
        })
    }

    /// A call of another `#[differentiable]` function returning `n` values.
    pub(super) fn call(&mut self, c: &syn::ExprCall, n: usize) -> Vec<Lowered> {
        self.shaped_call(c, OutShape::flat(n))
    }

    /// A call of another `#[differentiable]` function whose results nest as `shape`: its
    /// values, in order.
    pub(super) fn shaped_call(&mut self, c: &syn::ExprCall, shape: OutShape) -> Vec<Lowered> {
        if let Some(index) = self.pullback_called(c) {
            return self.call_pullback(index, c, shape);
        }
        let (args, arrays) = self.lower_args(&c.args);
        let refs: Vec<&Lowered> = args.iter().collect();
        let taint = Self::taint_of(&refs);
        if !args.iter().any(|a| matches!(a, Lowered::Val(_))) && arrays.iter().all(Option::is_none)
        {
            let func = &c.func;
            let tokens: Vec<TokenStream> = args.iter().map(|a| self.const_tokens(a)).collect();
            let whole = quote!(#func(#(#tokens),*));
            return shape
                .paths()
                .into_iter()
                .map(|path| {
                    let path = path.into_iter().map(syn::Index::from);
                    Lowered::Const {
                        tokens: quote!((#whole)#(.#path)*),
                        taint,
                        is_ref: false,
                    }
                })
                .collect();
        }
        let callee = match strip(&c.func) {
            Expr::Path(p) if p.qself.is_none() => self.callee(&p.path),
            other => {
                self.errors.at(
                    other,
                    "only functions named by a path can be called with differentiated tensors",
                );
                None
            }
        };
        let Some(callee) = callee else {
            return vec![];
        };
        let args = args
            .into_iter()
            .zip(&c.args)
            .zip(arrays)
            .map(|((l, syn_arg), array)| self.call_arg(l, syn_arg, array))
            .collect();
        self.push_call(callee, args, taint, shape, c.span())
    }

    /// What a call of `path` calls: an associated function when the segment before the name is
    /// a type (`Self`, a capitalised name, or one with generic arguments), a function otherwise.
    /// `None`, with an error, for a local value (a closure or function pointer).
    fn callee(&mut self, path: &syn::Path) -> Option<Callee> {
        if let Some(ident) = path.get_ident() {
            if self.lookup(&ident.to_string()).is_some() {
                self.errors.at(
                    ident,
                    format!(
                        "`{ident}` is a local value; only #[differentiable] functions and methods \
                         can be called with differentiated tensors"
                    ),
                );
                return None;
            }
        }
        let last = path.segments.last().expect("a path has a segment");
        let turbofish = match &last.arguments {
            syn::PathArguments::None => None,
            args => Some(args.to_token_stream()),
        };
        let n = path.segments.len();
        let owner: syn::punctuated::Punctuated<syn::PathSegment, syn::Token![::]> =
            path.segments.iter().take(n - 1).cloned().collect();
        let is_type = owner.last().is_some_and(|s| {
            s.ident == "Self"
                || !s.arguments.is_none()
                || s.ident.to_string().starts_with(char::is_uppercase)
        });
        Some(if is_type {
            Callee::Associated {
                ty: syn::Path {
                    leading_colon: path.leading_colon,
                    segments: owner,
                },
                name: last.ident.clone(),
                turbofish,
            }
        } else {
            let mut path = path.clone();
            if let Some(last) = path.segments.last_mut() {
                last.arguments = syn::PathArguments::None;
            }
            Callee::Function { path, turbofish }
        })
    }

    /// A call's arguments lowered, and for each the array parameter it passes whole (whose
    /// lowered form is the argument as written).
    fn lower_args<'e>(
        &mut self,
        exprs: impl IntoIterator<Item = &'e Expr>,
    ) -> (Vec<Lowered>, Vec<Option<List>>) {
        exprs
            .into_iter()
            .map(|a| match self.array_arg(a) {
                Some(list) => (Lowered::constant(a.to_token_stream()), Some(list)),
                None => match self.literal_array_arg(a) {
                    Some((tokens, list)) => (Lowered::constant(tokens), Some(list)),
                    None => (self.expr(a), None),
                },
            })
            .unzip()
    }

    /// An array of differentiated numbers written in a call (`f([x, y, z])`, `f(&[x, y])`):
    /// a list of its elements, passed as the array the callee takes.
    fn literal_array_arg(&mut self, e: &Expr) -> Option<(TokenStream, List)> {
        let (array, borrowed) = match strip(e) {
            Expr::Reference(r) if r.mutability.is_none() => (strip(&r.expr), true),
            other => (other, false),
        };
        let Expr::Array(a) = array else { return None };
        if !self.scalar_out || !self.mentions_active(array) {
            return None;
        }
        let list = List(self.lists.len());
        let ident = self.fresh_const_ident("array_arg");
        self.lists.push(ident.clone());
        self.stmts.push(Stmt::ListNew {
            list,
            ident: ident.clone(),
            init: quote!(::std::vec::Vec::new()).into(),
        });
        for elem in &a.elems {
            let value = self.expr(elem);
            self.list_push(list, value);
        }
        let value = quote!(::rune_ad::__private::list_number_array(&#ident));
        Some((if borrowed { quote!(&#value) } else { value }, list))
    }

    /// The array parameter an argument passes whole (`x`, `&x`, `*x`).
    fn array_arg(&self, e: &Expr) -> Option<List> {
        let place = match strip(e) {
            Expr::Reference(r) if r.mutability.is_none() => strip(&r.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => strip(&u.expr),
            other => other,
        };
        let Expr::Path(p) = place else { return None };
        match self.lookup(&p.path.get_ident()?.to_string()) {
            Some(Binding::List(l)) if self.array_param(*l).is_some() => Some(*l),
            _ => None,
        }
    }

    /// The argument a lowered expression `syn_arg` passes to a call (`array`: the array
    /// parameter it passes whole).
    fn call_arg(&self, l: Lowered, syn_arg: &Expr, array: Option<List>) -> CallArg {
        if let Some(list) = array {
            return CallArg::Array {
                list,
                tokens: self.const_tokens(&l).into(),
                borrowed: matches!(strip(syn_arg), Expr::Reference(_)),
            };
        }
        match l {
            Lowered::Val(val) if self.paths.contains_key(&val) => {
                let (root, path) = self.paths[&val].clone();
                CallArg::Struct {
                    root,
                    path,
                    borrowed: self.ref_binding(Some(syn_arg)) || !path_is_param(syn_arg),
                }
            }
            Lowered::Val(val) => CallArg::Val {
                val,
                borrowed: self.ref_binding(Some(syn_arg)),
            },
            Lowered::Const { tokens, .. } => CallArg::Const(tokens.into()),
        }
    }

    /// Records a call of `callee`, returning its results, which nest as `shape`.
    fn push_call(
        &mut self,
        callee: Callee,
        args: Vec<CallArg>,
        taint: Option<Taint>,
        shape: OutShape,
        span: Span,
    ) -> Vec<Lowered> {
        let n = shape.leaves();
        if let Some(t) = taint {
            self.errors.push(t.error(
                "this value is read out of a differentiated tensor, so no gradient can flow \
                 through it into this call; use `stop_gradient` to cut the gradient on purpose",
            ));
        }
        let outs: Vec<Val> = (0..n).map(|_| self.new_val()).collect();
        self.call_outs.extend(&outs);
        if n == 1 {
            let name = callee.name().to_string();
            self.call_values.push((outs[0], name));
        }
        self.stmts.push(Stmt::Call {
            outs: outs.clone(),
            shape,
            callee,
            args,
            span,
            fallible: false,
        });
        outs.into_iter().map(Lowered::Val).collect()
    }

    /// Whether `mc` calls a method outside the op table (a `#[differentiable]` method, when its
    /// receiver is a structure or its arguments are differentiated).
    pub(super) fn calls_method(mc: &syn::ExprMethodCall) -> bool {
        let method = mc.method.to_string();
        let m = method.as_str();
        ops::lookup(m, Form::Method).is_none()
            && !ops::is_metadata(m)
            && !ops::NONDIFF.contains(&m)
            && !ops::CONCRETIZING.contains(&m)
            && !matches!(m, "clone" | "iter")
    }

    /// A call of a `#[differentiable]` method whose values nest as `shape`: on (a part of) a structure
    /// parameter (`self.l1.forward(&h)`, `layer.forward(&h)` in a loop over `self.layers`), or on
    /// a constant with differentiated arguments. The receiver is the call's first argument; `None`
    /// when `mc` is not such a call.
    pub(super) fn structure_method(
        &mut self,
        mc: &syn::ExprMethodCall,
        receiver: &Lowered,
        shape: OutShape,
    ) -> Option<Vec<Lowered>> {
        if !Self::calls_method(mc) {
            return None;
        }
        match receiver {
            Lowered::Val(v) if !self.paths.contains_key(v) => return None,
            Lowered::Const { .. } if !mc.args.iter().any(|a| self.mentions_active(a)) => {
                return None
            }
            _ => {}
        }
        let (args, arrays) = self.lower_args(&mc.args);
        let mut refs: Vec<&Lowered> = args.iter().collect();
        refs.push(receiver);
        let taint = Self::taint_of(&refs);
        // The receiver is the place it names (which the method borrows), or a copy of it when
        // the user cloned it.
        let receiver = match receiver {
            Lowered::Val(v) => {
                let (root, path) = self.paths[v].clone();
                let cloned = matches!(
                    strip(&mc.receiver),
                    Expr::MethodCall(c) if c.method == "clone" && c.args.is_empty()
                );
                CallArg::Struct {
                    root,
                    path,
                    borrowed: !cloned,
                }
            }
            Lowered::Const { tokens, .. } => CallArg::Const(tokens.clone().into()),
        };
        let args = std::iter::once(receiver)
            .chain(
                args.into_iter()
                    .zip(&mc.args)
                    .zip(arrays)
                    .map(|((l, syn_arg), array)| self.call_arg(l, syn_arg, array)),
            )
            .collect();
        let callee = Callee::Method {
            name: mc.method.clone(),
            turbofish: mc.turbofish.as_ref().map(|t| t.to_token_stream()),
        };
        Some(self.push_call(callee, args, taint, shape, mc.method.span()))
    }

    /// `let name = |params| body;`: recorded for inlining where it is called with
    /// differentiated values, and emitted as a constant closure when it reads none.
    pub(super) fn define_closure(
        &mut self,
        name: &Ident,
        c: &syn::ExprClosure,
        ty: Option<&syn::Type>,
    ) {
        if exits(&SynStmt::Expr((*c.body).clone(), None), Within::Function) || contains_try(&c.body)
        {
            self.errors.at(
                c,
                "a closure in a #[differentiable] function is inlined where it is called: \
                 `return` and `?` inside it are not supported (end it with the value instead)",
            );
            return;
        }
        let scopes = self.scopes.clone();
        let constant = if self.mentions_active(&c.body) {
            None
        } else {
            let closure = self.rewrite(&Expr::Closure(c.clone()));
            let tokens = self.const_tokens(&closure);
            let new = self.fresh_const_ident(&name.to_string());
            let ty = ty.map(|t| quote!(: #t));
            self.stmts
                .push(Stmt::Verbatim(quote!(let #new #ty = #tokens;).into()));
            Some(new)
        };
        self.closures.push(ClosureDef {
            closure: c.clone(),
            scopes,
            constant,
        });
        self.bind(&name.to_string(), Binding::Closure(self.closures.len() - 1));
    }

    /// A call of closure `index` with `args`: its body lowered in the bindings it captured, with
    /// its parameters bound to the arguments.
    fn inline_closure(&mut self, index: usize, c: &syn::ExprCall) -> Lowered {
        let def = self.closures[index].clone();
        if def.closure.inputs.len() != c.args.len() {
            self.errors.at(
                c,
                format!(
                    "this closure takes {} argument(s)",
                    def.closure.inputs.len()
                ),
            );
            return Lowered::constant(quote!(::core::unreachable!()));
        }
        let args: Vec<Lowered> = c.args.iter().map(|a| self.expr(a)).collect();
        let outer = std::mem::replace(&mut self.scopes, def.scopes);
        let floor = std::mem::replace(&mut self.region_floor, self.scopes.len());
        self.scopes.push(HashMap::new());
        for (pat, (arg, syn_arg)) in def.closure.inputs.iter().zip(args.into_iter().zip(&c.args)) {
            let (pat, ty) = match pat {
                Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
                other => (other, None),
            };
            match pat {
                Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                    let ty = ty.filter(|_| matches!(arg, Lowered::Const { .. }));
                    self.bind_lowered(&pi.ident, pi.mutability.is_some(), ty, arg, Some(syn_arg));
                }
                Pat::Wild(_) => {}
                other => self.errors.at(
                    other,
                    "a closure called with differentiated values takes plain names as parameters",
                ),
            }
        }
        let out = self.expr(&def.closure.body);
        self.scopes = outer;
        self.region_floor = floor;
        out
    }

    /// A closure used as a value (not called): its constant, if it reads no differentiated
    /// value.
    pub(super) fn closure_value(&mut self, index: usize, ident: &Ident) -> Lowered {
        match &self.closures[index].constant {
            Some(c) => {
                let mut c = c.clone();
                c.set_span(c.span().located_at(ident.span()));
                Lowered::constant(c.into_token_stream())
            }
            None => {
                self.errors.at(
                    ident,
                    format!(
                        "the closure `{ident}` reads differentiated values, so it can only be \
                         called directly (`{ident}(..)`), where it is inlined"
                    ),
                );
                Lowered::constant(quote!(::core::unreachable!()))
            }
        }
    }

    /// `f(args..)` for a closure `f` written in place or bound to a name, inlined.
    pub(super) fn apply_fn(&mut self, f: &Expr, args: Vec<Item>) -> Item {
        let (closure, scopes) = match strip(f) {
            Expr::Closure(c) => (c.clone(), None),
            Expr::Path(p) => match p
                .path
                .get_ident()
                .and_then(|i| self.lookup(&i.to_string()).cloned())
            {
                Some(Binding::Closure(index)) => {
                    let def = self.closures[index].clone();
                    (def.closure, Some(def.scopes))
                }
                _ => {
                    self.errors.at(
                        f,
                        "pass a closure here (`|x| ...`) when the elements are differentiated",
                    );
                    return Item::Value(Lowered::constant(quote!(::core::unreachable!())), false);
                }
            },
            other => {
                self.errors.at(
                    other,
                    "pass a closure here (`|x| ...`) when the elements are differentiated",
                );
                return Item::Value(Lowered::constant(quote!(::core::unreachable!())), false);
            }
        };
        if exits(
            &SynStmt::Expr((*closure.body).clone(), None),
            Within::Function,
        ) || contains_try(&closure.body)
        {
            self.errors.at(
                &closure,
                "a closure over differentiated values is inlined: `return` and `?` inside it are \
                 not supported (end it with the value instead)",
            );
        }
        if closure.inputs.len() != args.len() {
            self.errors.at(
                &closure,
                format!(
                    "this closure is called with {} argument(s) here",
                    args.len()
                ),
            );
            return Item::Value(Lowered::constant(quote!(::core::unreachable!())), false);
        }
        let outer = scopes.map(|s| std::mem::replace(&mut self.scopes, s));
        let floor = std::mem::replace(&mut self.region_floor, self.scopes.len());
        self.scopes.push(HashMap::new());
        for (pat, arg) in closure.inputs.iter().zip(args) {
            self.bind_item(pat, arg);
        }
        // A closure handing on a reference it was given (`|(_, l)| l`) gives a reference.
        let result = match strip(&closure.body) {
            Expr::Tuple(t) => Item::Tuple(
                t.elems
                    .iter()
                    .map(|e| {
                        let by_ref = self.ref_binding(Some(e));
                        Item::Value(self.expr(e), by_ref)
                    })
                    .collect(),
            ),
            body => {
                let by_ref = self.ref_binding(Some(body));
                Item::Value(self.expr(body), by_ref)
            }
        };
        self.scopes.pop();
        self.region_floor = floor;
        if let Some(outer) = outer {
            self.scopes = outer;
        }
        result
    }
}
