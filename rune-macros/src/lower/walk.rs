//! Walking an iterator chain (`iter::Chain`): the element at a position of its last sequence,
//! read back through each adaptor to its sources; loops over the chain (`for`, `fold`, `sum`,
//! `product`, `collect`); and the elements `chain`, `windows` and `chunks` make, which come
//! first in a chain.
//!
//! An element of `a.chain(b)` is `a`'s or `b`'s, by its position: a loop lowers its body once
//! for each side, in a branch, so that the element is read in place (it may be a structure's,
//! which no slot can hold); one element read alone (`last`, `nth`, ..) is chosen into a slot.
//! A window of a structure's `Vec` is a list whose elements are read in place too
//! (`Lowerer::windows`); a window of other elements a list holding them.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::{Expr, Ident};

use crate::ir::{BranchHead, Const, List, LoopHead, PathSeg, Stmt, Use};
use crate::names::{const_ident, hidden};
use crate::ops::{self, Form};

use super::iter::{Chain, ChainStep, Item, Keeping, Slicing, Source, ZipTree};
use super::syntax::strip;
use super::{path_tokens, Lowered, Lowerer};

impl Lowerer<'_> {
    /// The element at `position` of a chain's last sequence.
    pub(super) fn chain_item_at(&mut self, chain: &Chain, position: Const) -> Item {
        let positions = self.chain_positions(chain, position);
        let first = match chain.steps.first() {
            Some(ChainStep::Chain(k)) => self.chained(chain, *k, positions[0]),
            Some(ChainStep::Slices(slicing, _)) => self.slice_list(chain, *slicing, positions[0]),
            _ => self.chain_element(chain, 0, positions[0]),
        };
        self.chain_item_after(chain, &positions, first)
    }

    /// Lowers `body` on the element of trip `trip` of a chain's loop. The elements of
    /// `a.chain(b)` are read in place (they may be a structure's), by a branch around the body
    /// on the side the trip is on: `body` is lowered once for each.
    pub(super) fn chain_body(
        &mut self,
        chain: &Chain,
        trip: &Ident,
        mut body: impl FnMut(&mut Self, Item),
    ) {
        let position = self.hoist(quote!(#trip), Some(quote!(usize)), Use::Plain);
        let Some(&ChainStep::Chain(k)) = chain.steps.first() else {
            let item = self.chain_item_at(chain, position);
            return body(self, item);
        };
        let positions = self.chain_positions(chain, position);
        let (p, n) = (const_ident(positions[0]), const_ident(chain.lengths[0]));
        let first = self.region(|l| {
            let element = l.chain_element(chain, 0, positions[0]);
            let item = l.chain_item_after(chain, &positions, element);
            body(l, item);
        });
        let second = self.region(|l| {
            let at = l.hoist(quote!(#p - #n), Some(quote!(usize)), Use::Plain);
            let element = l.chain_element(chain, k, at);
            let item = l.chain_item_after(chain, &positions, element);
            body(l, item);
        });
        let head = BranchHead::If(quote!(#p < #n).into());
        self.finish_branch((head, vec![first, second]), None);
    }

    /// The position in each step's sequence of the element at `position` of the last one.
    fn chain_positions(&mut self, chain: &Chain, mut position: Const) -> Vec<Const> {
        let steps = chain.steps.len();
        let mut positions = vec![position; steps + 1];
        for (j, step) in chain.steps.iter().enumerate().rev() {
            let p = const_ident(position);
            let arg = || const_ident(chain.args[j].expect("a step with an argument"));
            let before = match step {
                ChainStep::Rev => {
                    let n = const_ident(chain.lengths[j]);
                    Some(quote!(#n - 1 - #p))
                }
                ChainStep::Skip(_) | ChainStep::Keep(Keeping::SkipWhile, ..) => {
                    let k = arg();
                    Some(quote!(#p + #k))
                }
                ChainStep::StepBy(_) => {
                    let k = arg();
                    Some(quote!(#p * #k))
                }
                ChainStep::Keep(Keeping::Filter, ..) => {
                    let kept = arg();
                    Some(quote!(#kept[#p]))
                }
                _ => None,
            };
            if let Some(before) = before {
                position = self.hoist(before, Some(quote!(usize)), Use::Plain);
            }
            positions[j] = position;
        }
        positions
    }

    /// The element of a chain from `first`, the element its first step makes (a source's,
    /// or `chain`'s, `windows`' or `chunks`'), through the steps after.
    fn chain_item_after(&mut self, chain: &Chain, positions: &[Const], first: Item) -> Item {
        let mut item = first;
        let made = usize::from(matches!(
            chain.steps.first(),
            Some(ChainStep::Chain(_) | ChainStep::Slices(..))
        ));
        for (j, step) in chain.steps.iter().enumerate().skip(made) {
            item = match step {
                ChainStep::Zip(tree) => {
                    Item::Tuple(vec![item, self.zipped(chain, tree, positions[j])])
                }
                ChainStep::Enumerate => {
                    let i = const_ident(positions[j]);
                    Item::Tuple(vec![
                        Item::Value(Lowered::constant(quote!(#i)), false),
                        item,
                    ])
                }
                ChainStep::Map(f) => self.apply_fn(f, vec![item]),
                ChainStep::Rev
                | ChainStep::Skip(_)
                | ChainStep::Take(_)
                | ChainStep::StepBy(_)
                | ChainStep::Keep(..) => item,
                ChainStep::Chain(_) | ChainStep::Slices(..) => {
                    unreachable!("`chain_syntax` puts these first")
                }
            };
        }
        item
    }

    /// Element `position` of `a.chain(b)`, `b` source `k`: `a`'s element there, or `b`'s
    /// after `a`'s length, chosen by a branch.
    fn chained(&mut self, chain: &Chain, k: usize, position: Const) -> Item {
        let (p, n) = (const_ident(position), const_ident(chain.lengths[0]));
        let result = self.new_optional_slot();
        let mut by_ref = true;
        let mut arm = |l: &mut Self, k: usize, index: TokenStream| {
            l.region(|l| {
                let index = l.hoist(index, Some(quote!(usize)), Use::Plain);
                match l.chain_element(chain, k, index) {
                    Item::Value(v, r) => {
                        by_ref &= r;
                        let val = l.operand(v, Use::Plain);
                        l.stmts.push(Stmt::SlotWrite { slot: result, val });
                    }
                    _ => unreachable!("a source's element is one value"),
                }
            })
        };
        let first = arm(self, 0, quote!(#p));
        let second = arm(self, k, quote!(#p - #n));
        let head = BranchHead::If(quote!(#p < #n).into());
        let value = self.finish_branch((head, vec![first, second]), Some(result));
        Item::Value(value, by_ref)
    }

    /// Element `position` of `windows(k)` or `chunks(k)` of the first source: a new list of
    /// the source's elements it covers.
    fn slice_list(&mut self, chain: &Chain, slicing: Slicing, position: Const) -> Item {
        let (p, k) = (
            const_ident(position),
            const_ident(chain.args[0].expect("a size")),
        );
        let n = const_ident(chain.lengths[0]);
        let (start, end) = match slicing {
            Slicing::Windows => (quote!(#p), quote!(#p + #k)),
            Slicing::Chunks => (quote!(#p * #k), quote!(::core::cmp::min(#p * #k + #k, #n))),
        };
        let first = self.hoist(start, Some(quote!(usize)), Use::Plain);
        let end = self.hoist(end, Some(quote!(usize)), Use::Plain);
        let (start, end) = (const_ident(first), const_ident(end));
        let list = List(self.lists.len());
        let ident = self.fresh_const_ident("window");
        self.lists.push(ident.clone());
        // A window of a structure's `Vec` reads its elements in place, as the loop over the
        // `Vec` does (they may be structures); the list holds references to them, for constant
        // code (`w.len()`).
        if let Source::Structure(root, path) = &chain.sources[0] {
            let base = path_tokens(&self.roots[*root], path);
            self.stmts.push(Stmt::ListNew {
                list,
                ident,
                init: quote!((&#base)[#start..#end].iter().collect::<::std::vec::Vec<_>>()).into(),
            });
            self.windows.push((list, *root, path.clone(), first));
            return Item::List(list);
        }
        self.stmts.push(Stmt::ListNew {
            list,
            ident,
            init: quote!(::std::vec::Vec::new()).into(),
        });
        let range = quote!(#start..#end);
        let id = self.new_region();
        let trip = hidden(&format!("item{id}"));
        let body = self.region(|l| {
            let index = l.hoist(quote!(#trip), Some(quote!(usize)), Use::Plain);
            if let Item::Value(v, _) = l.chain_element(chain, 0, index) {
                l.list_push(list, v);
            }
        });
        self.stmts.push(Stmt::Loop {
            id,
            head: LoopHead::For {
                pattern: trip.into_token_stream().into(),
                iter: range.into(),
            },
            body,
        });
        Item::List(list)
    }

    /// Element `index` of source `k` of a chain.
    fn chain_element(&mut self, chain: &Chain, k: usize, index: Const) -> Item {
        let by_ref = !matches!(chain.sources[k], Source::Const(_));
        let value = match &chain.sources[k] {
            Source::Structure(root, path) => {
                let mut path = path.clone();
                path.push(PathSeg::Index(index));
                Lowered::Val(self.leaf(*root, path))
            }
            Source::Map {
                root,
                path,
                keys,
                values_only,
            } => {
                let i = const_ident(index);
                let key = self.hoist(quote!(#keys[#i]), None, Use::Plain);
                let mut path = path.clone();
                path.push(PathSeg::Key(key));
                let part = Item::Value(Lowered::Val(self.leaf(*root, path)), true);
                if *values_only {
                    return part;
                }
                let key = const_ident(key);
                return Item::Tuple(vec![
                    Item::Value(Lowered::constant(quote!(#key)), false),
                    part,
                ]);
            }
            Source::List(list) => self.list_get(*list, index),
            Source::Const(ident) => {
                let i = const_ident(index);
                Lowered::constant(quote!(::core::clone::Clone::clone(&#ident[#i])))
            }
        };
        Item::Value(value, by_ref)
    }

    /// The elements `index` of the sources a `zip` adds, in its pairs.
    fn zipped(&mut self, chain: &Chain, tree: &ZipTree, index: Const) -> Item {
        match tree {
            ZipTree::Source(k) => self.chain_element(chain, *k, index),
            ZipTree::Pair(a, b) => Item::Tuple(vec![
                self.zipped(chain, a, index),
                self.zipped(chain, b, index),
            ]),
        }
    }

    /// `chain.fold(init, f)` (`f` is `Ok`), `chain.sum()` and `chain.product()` (`Err` of the
    /// operator's op, `add` or `mul`) over differentiated elements: a loop carrying the
    /// accumulator in a slot.
    pub(super) fn fold_chain(
        &mut self,
        chain: Chain,
        init: Lowered,
        f: Result<&Expr, &'static str>,
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
                Ok(f) => match l.apply_fn(f, vec![Item::Value(acc, false), item]) {
                    Item::Value(v, _) => v,
                    Item::Tuple(_) | Item::List(_) => {
                        l.errors
                            .at(f, "the accumulator of `fold` here must be one tensor");
                        return;
                    }
                },
                Err(op) => match item {
                    Item::Value(v, _) => {
                        let op = ops::lookup(op, Form::Operator).expect("in the table");
                        l.binary_op(op, acc, v, span)
                    }
                    Item::Tuple(_) | Item::List(_) => {
                        l.errors.at(
                            quote_spanned!(span=> sum),
                            "`sum` and `product` need one tensor per element; `map` the tuple \
                             or window to one first",
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
            Item::Tuple(_) | Item::List(_) => l.errors.at(
                at,
                "only a `Vec` of tensors can be collected here; `map` the tuple or window to one \
                 tensor",
            ),
        });
    }

    /// A loop over a chain's elements whose body `body` lowers from each element (for `fold`,
    /// `sum` and `collect`, which neither `break` nor `continue`).
    fn chain_loop(&mut self, chain: &Chain, body: impl FnMut(&mut Self, Item)) {
        let id = self.new_region();
        let trip = hidden(&format!("item{id}"));
        let n = const_ident(chain.count);
        let stmts = self.region(|l| l.chain_body(chain, &trip, body));
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
        if let Some(inlined) = self.inline_iter(e) {
            return self.collected_list(&inlined, name);
        }
        let Expr::MethodCall(mc) = strip(e) else {
            return None;
        };
        if mc.method != "collect" || !mc.args.is_empty() || !Self::is_iterator(&mc.receiver) {
            return None;
        }
        let flat = if self.mentions_active(&mc.receiver) {
            self.flat(&mc.receiver)
        } else {
            None
        };
        let chain = match flat {
            Some(_) => None,
            None => Some(self.chain(&mc.receiver)?),
        };
        let list = List(self.lists.len());
        let ident = self.fresh_const_ident(name);
        self.lists.push(ident.clone());
        self.stmts.push(Stmt::ListNew {
            list,
            ident,
            init: quote!(::std::vec::Vec::new()).into(),
        });
        match (chain, flat) {
            (Some(chain), _) => self.collect_chain(chain, list, e),
            (None, Some(Ok(flat))) => self.flat_collect(&flat, list),
            // Refused, and reported.
            (None, Some(Err(_))) => {}
            (None, None) => unreachable!("one of the two"),
        }
        Some(list)
    }
}
