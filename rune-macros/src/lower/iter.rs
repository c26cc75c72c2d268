//! Sequences: local `Vec`s of differentiated tensors (lists), and iterator chains over them or
//! over a structure parameter's `Vec`s (`iter`, `zip`, `enumerate`, `rev`, `map`), walked by
//! `for` loops, `fold`, `sum` and `collect`.

use proc_macro2::Span;
use quote::{quote, quote_spanned, ToTokens};
use syn::{Expr, Ident};

use crate::ir::{Const, List, LoopHead, Operand, PathSeg, Stmt, Use};
use crate::names::{const_ident, hidden};
use crate::ops::{self, Form};

use super::syntax::strip;
use super::{path_tokens, Binding, Lowered, Lowerer};

/// Methods that make an iterator from a sequence or adapt one.
const ITERATOR_METHODS: &[&str] = &[
    "iter",
    "into_iter",
    "zip",
    "rev",
    "enumerate",
    "map",
    "cloned",
    "copied",
];

/// What a local `Vec` of differentiated tensors supports.
const LIST_USES: &str = "a `Vec` of differentiated tensors supports `push`, `len`, indexing \
    (`outs[i]`), `for` loops over it (`for h in &outs`), and `stack`/`concat` of it as a whole \
    (`stack(&outs, 0)`)";

/// What a differentiated array parameter supports.
const ARRAY_USES: &str = "a differentiated array of numbers supports `len`, reading its \
    elements by index (`x[i]`), `for` loops over it (`for v in &x`) and iterator chains \
    (`x.iter().map(..).sum()`), and passing it whole to another #[differentiable] function \
    (`norm(&x)`); it cannot be changed or used as a whole otherwise";

/// An iterator chain over sequences (`xs.iter().zip(ys.iter()).enumerate().map(f)`), as
/// written: its sources and its adaptors, innermost first.
struct ChainSyntax {
    /// The sequences walked side by side (one, or more with `zip`).
    sources: Vec<Expr>,
    steps: Vec<ChainStep>,
}

#[derive(Clone)]
enum ChainStep {
    /// `.zip(source k)`.
    Zip(usize),
    Rev,
    Enumerate,
    /// `.map(f)`, `f` a closure or the name of one.
    Map(Expr),
}

/// Where a chain's elements come from, once evaluated.
enum Source {
    /// A `Vec` or array of a structure parameter.
    Structure(usize, Vec<PathSeg>),
    List(List),
    /// Constants, collected before the loop into the local named.
    Const(Ident),
}

/// A chain ready to loop over: `0..count` trips.
pub(super) struct Chain {
    sources: Vec<Source>,
    steps: Vec<ChainStep>,
    pub(super) count: Const,
}

/// One element of a chain: a value, or a tuple of them (`zip`, `enumerate`).
pub(super) enum Item {
    /// A value; `true` when it is a reference to an element (`iter()` yields references),
    /// which decides how it is passed to other differentiable functions.
    Value(Lowered, bool),
    Tuple(Vec<Item>),
}

impl Lowerer<'_> {
    /// What list `list` supports, for an error at a use it does not.
    pub(super) fn list_uses(&self, list: List) -> &'static str {
        if self.arrays.contains(&list) {
            ARRAY_USES
        } else {
            LIST_USES
        }
    }

    /// `let mut name = Vec::new();` (or `vec![..]`) for a `Vec` that receives differentiated
    /// tensors.
    pub(super) fn define_list(&mut self, name: &Ident, init: &Expr, elems: Vec<Expr>) {
        let list = List(self.lists.len());
        let ident = self.fresh_const_ident(&name.to_string());
        self.lists.push(ident.clone());
        let init = match strip(init) {
            Expr::Macro(_) => quote!(::std::vec::Vec::new()),
            other => {
                let l = self.rewrite(other);
                self.const_tokens(&l)
            }
        };
        self.stmts.push(Stmt::ListNew {
            list,
            ident,
            init: init.into(),
        });
        self.bind(&name.to_string(), Binding::List(list));
        for e in &elems {
            let l = self.expr(e);
            self.list_push(list, l);
        }
    }

    pub(super) fn list_push(&mut self, list: List, value: Lowered) {
        let ident = &self.lists[list.0];
        let index = self.hoist(quote!(#ident.len()), Some(quote!(usize)), Use::Plain);
        let val = match value {
            Lowered::Val(v) => Operand::Val(v),
            Lowered::Const { tokens, .. } => Operand::Const(self.hoist(tokens, None, Use::Plain)),
        };
        self.stmts.push(Stmt::ListPush { list, val, index });
    }

    /// `list[index]` as a differentiated value.
    pub(super) fn list_get(&mut self, list: List, index: Const) -> Lowered {
        let out = self.new_val();
        self.stmts.push(Stmt::ListGet { out, list, index });
        Lowered::Val(out)
    }

    /// The list an expression stands for as a whole: `outs`, `&outs`, `outs.iter()`,
    /// `outs.iter().collect::<Vec<_>>()`, `outs.as_slice()`, `&outs[..]`.
    pub(super) fn list_of(&self, e: &Expr) -> Option<List> {
        match strip(e) {
            Expr::Reference(r) => self.list_of(&r.expr),
            Expr::Path(p) => match self.lookup(&p.path.get_ident()?.to_string()) {
                Some(Binding::List(l)) => Some(*l),
                _ => None,
            },
            Expr::MethodCall(mc)
                if mc.args.is_empty()
                    && ["iter", "into_iter", "collect", "as_slice", "cloned"]
                        .contains(&mc.method.to_string().as_str()) =>
            {
                self.list_of(&mc.receiver)
            }
            Expr::Index(ix) if matches!(strip(&ix.index), Expr::Range(r) if r.start.is_none() && r.end.is_none()) => {
                self.list_of(&ix.expr)
            }
            _ => None,
        }
    }

    /// `e` as an iterator chain over sequences, when it is one.
    fn chain_syntax(e: &Expr) -> Option<ChainSyntax> {
        let mut steps = Vec::new();
        let mut sources = Vec::new();
        let mut current = e;
        loop {
            match strip(current) {
                Expr::MethodCall(mc) => {
                    let method = mc.method.to_string();
                    match (method.as_str(), mc.args.len()) {
                        ("iter" | "into_iter" | "cloned" | "copied", 0) => {}
                        ("rev", 0) => steps.push(ChainStep::Rev),
                        ("enumerate", 0) => steps.push(ChainStep::Enumerate),
                        ("map", 1) => steps.push(ChainStep::Map(mc.args[0].clone())),
                        ("zip", 1) => {
                            let other = Self::chain_syntax(&mc.args[0])?;
                            if other.sources.len() != 1 || !other.steps.is_empty() {
                                return None;
                            }
                            sources.push(other.sources.into_iter().next()?);
                            steps.push(ChainStep::Zip(0));
                        }
                        _ => return None,
                    }
                    current = &mc.receiver;
                }
                Expr::Reference(r) => {
                    current = &r.expr;
                }
                other => {
                    sources.push(other.clone());
                    break;
                }
            }
        }
        // Collected outermost first: the base source is the last one found.
        sources.reverse();
        steps.reverse();
        let mut zips = 0;
        for step in &mut steps {
            if let ChainStep::Zip(k) = step {
                zips += 1;
                *k = zips;
            }
        }
        Some(ChainSyntax { sources, steps })
    }

    /// Whether `e` ends in an iterator method (`xs.iter()`, `.zip(..)`, `.map(..)`): what
    /// `fold`, `sum` and `collect` are called on.
    pub(super) fn is_iterator(e: &Expr) -> bool {
        matches!(strip(e), Expr::MethodCall(mc) if ITERATOR_METHODS.contains(&mc.method.to_string().as_str()))
    }

    /// The chain `e` walks, evaluated where the loop starts, when it walks differentiated
    /// values (a structure's `Vec`, a list) or maps with a closure that reads them; `None` for
    /// constant iteration.
    pub(super) fn chain(&mut self, e: &Expr) -> Option<Chain> {
        let syntax = Self::chain_syntax(e)?;
        let walks_active = syntax.sources.iter().any(|s| {
            self.list_of(s).is_some() || (self.mentions_active(s) && self.structure_source(s))
        }) || syntax.steps.iter().any(|s| match s {
            ChainStep::Map(f) => self.mentions_active(f),
            _ => false,
        });
        if !walks_active {
            return None;
        }
        let mut sources = Vec::new();
        let mut lengths = Vec::new();
        for src in &syntax.sources {
            if let Some(list) = self.list_of(src) {
                let ident = &self.lists[list.0];
                lengths.push(quote!(#ident.len()));
                sources.push(Source::List(list));
                continue;
            }
            match self.expr(src) {
                Lowered::Val(v) if self.paths.contains_key(&v) => {
                    let (root, path) = self.paths[&v].clone();
                    let base = path_tokens(&self.roots[root], &path);
                    lengths.push(quote!((&#base).len()));
                    sources.push(Source::Structure(root, path));
                }
                Lowered::Val(_) => {
                    self.errors.at(
                        src,
                        "a loop cannot iterate over a differentiated tensor; loop over indices \
                         (`for i in 0..n`) and select with ops such as `shrink` or `gather`",
                    );
                    return None;
                }
                Lowered::Const { tokens, .. } => {
                    let ident = self.fresh_const_ident("elements");
                    self.stmts.push(Stmt::Verbatim(
                        quote! {
                            let #ident: ::std::vec::Vec<_> =
                                ::core::iter::IntoIterator::into_iter(#tokens).collect();
                        }
                        .into(),
                    ));
                    lengths.push(quote!(#ident.len()));
                    sources.push(Source::Const(ident));
                }
            }
        }
        let count = lengths
            .into_iter()
            .reduce(|a, b| quote!(::core::cmp::min(#a, #b)))
            .expect("a chain has a source");
        let count = self.hoist(count, Some(quote!(usize)), Use::Plain);
        Some(Chain {
            sources,
            steps: syntax.steps,
            count,
        })
    }

    /// Whether a chain's source names (part of) a structure parameter.
    pub(super) fn structure_source(&self, e: &Expr) -> bool {
        let mut base = strip(e);
        loop {
            match base {
                Expr::Field(f) => base = strip(&f.base),
                Expr::Index(ix) => base = strip(&ix.expr),
                Expr::Reference(r) => base = strip(&r.expr),
                Expr::Path(p) => {
                    return p.path.get_ident().is_some_and(|i| {
                        self.roots.iter().any(|r| r == i)
                            || matches!(
                                self.lookup(&i.to_string()),
                                Some(Binding::Active(v, _)) if self.paths.contains_key(v)
                            )
                    })
                }
                _ => return false,
            }
        }
    }

    /// The element of trip `trip` of a chain's loop (inside its body).
    pub(super) fn chain_item(&mut self, chain: &Chain, trip: &Ident) -> Item {
        let n = const_ident(chain.count);
        let reversed = chain
            .steps
            .iter()
            .filter(|s| matches!(s, ChainStep::Rev))
            .count()
            % 2
            == 1;
        let index = if reversed {
            quote!(#n - 1 - #trip)
        } else {
            quote!(#trip)
        };
        let index = self.hoist(index, Some(quote!(usize)), Use::Plain);
        let element = |l: &mut Self, k: usize| -> Item {
            let by_ref = !matches!(chain.sources[k], Source::Const(_));
            let value = match &chain.sources[k] {
                Source::Structure(root, path) => {
                    let mut path = path.clone();
                    path.push(PathSeg::Index(index));
                    Lowered::Val(l.leaf(*root, path))
                }
                Source::List(list) => l.list_get(*list, index),
                Source::Const(ident) => {
                    let i = const_ident(index);
                    Lowered::constant(quote!(::core::clone::Clone::clone(&#ident[#i])))
                }
            };
            Item::Value(value, by_ref)
        };
        let mut item = element(self, 0);
        let mut reversed_here = false;
        for step in &chain.steps {
            item = match step {
                ChainStep::Zip(k) => Item::Tuple(vec![item, element(self, *k)]),
                ChainStep::Rev => {
                    reversed_here = !reversed_here;
                    item
                }
                ChainStep::Enumerate => {
                    let i = const_ident(index);
                    let position = if reversed_here {
                        quote!(#n - 1 - #i)
                    } else {
                        quote!(#i)
                    };
                    Item::Tuple(vec![Item::Value(Lowered::constant(position), false), item])
                }
                ChainStep::Map(f) => self.apply_fn(f, vec![item]),
            };
        }
        item
    }

    /// `chain.fold(init, f)` and `chain.sum()` over differentiated elements: a loop carrying
    /// the accumulator in a slot.
    pub(super) fn fold_chain(
        &mut self,
        chain: Chain,
        init: Lowered,
        f: Option<&Expr>,
        span: Span,
    ) -> Lowered {
        let slot = self.new_slot();
        let init = self.operand(init, Use::Plain);
        self.stmts.push(Stmt::SlotInit { slot, init });
        self.chain_loop(&chain, |l, item| {
            let out = l.new_val();
            l.stmts.push(Stmt::SlotRead { out, slot });
            let acc = Lowered::Val(out);
            let next = match f {
                Some(f) => match l.apply_fn(f, vec![Item::Value(acc, false), item]) {
                    Item::Value(v, _) => v,
                    Item::Tuple(_) => {
                        l.errors
                            .at(f, "the accumulator of `fold` here must be one tensor");
                        return;
                    }
                },
                None => match item {
                    Item::Value(v, _) => {
                        let add = ops::lookup("add", Form::Operator).expect("in the table");
                        l.binary_op(add, acc, v, span)
                    }
                    Item::Tuple(_) => {
                        l.errors.at(
                            quote_spanned!(span=> sum),
                            "`sum` needs one tensor per element; `map` the tuple to one first",
                        );
                        return;
                    }
                },
            };
            let val = l.operand(next, Use::Plain);
            l.stmts.push(Stmt::SlotWrite { slot, val });
        });
        let out = self.new_val();
        self.stmts.push(Stmt::SlotRead { out, slot });
        Lowered::Val(out)
    }

    /// `chain.collect::<Vec<_>>()` of differentiated elements into the list `list`.
    fn collect_chain(&mut self, chain: Chain, list: List, at: &Expr) {
        self.chain_loop(&chain, |l, item| match item {
            Item::Value(v, _) => l.list_push(list, v),
            Item::Tuple(_) => l.errors.at(
                at,
                "only a `Vec` of tensors can be collected here; `map` the tuple to one tensor",
            ),
        });
    }

    /// A loop over a chain's elements whose body `body` lowers from each element (for `fold`,
    /// `sum` and `collect`, which neither `break` nor `continue`).
    fn chain_loop(&mut self, chain: &Chain, body: impl FnOnce(&mut Self, Item)) {
        let id = self.new_region();
        let trip = hidden(&format!("item{id}"));
        let n = const_ident(chain.count);
        let stmts = self.region(|l| {
            let item = l.chain_item(chain, &trip);
            body(l, item);
        });
        self.stmts.push(Stmt::Loop {
            id,
            head: LoopHead::For {
                pattern: trip.into_token_stream().into(),
                iter: quote!(0..#n).into(),
            },
            body: stmts,
        });
    }

    /// A new list holding what `e` (an iterator chain ending in `.collect()`) collects, when
    /// its elements are differentiated.
    pub(super) fn collected_list(&mut self, e: &Expr, name: &str) -> Option<List> {
        let Expr::MethodCall(mc) = strip(e) else {
            return None;
        };
        if mc.method != "collect" || !mc.args.is_empty() || !Self::is_iterator(&mc.receiver) {
            return None;
        }
        let chain = self.chain(&mc.receiver)?;
        let list = List(self.lists.len());
        let ident = self.fresh_const_ident(name);
        self.lists.push(ident.clone());
        self.stmts.push(Stmt::ListNew {
            list,
            ident,
            init: quote!(::std::vec::Vec::new()).into(),
        });
        self.collect_chain(chain, list, e);
        Some(list)
    }
}
