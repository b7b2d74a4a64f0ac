//! The corpus of input types the differential test runs (`differential.rs`): one `#[tool]` per
//! `#[input]` struct, each answering with its arguments serialized again, and a proptest
//! strategy per type that reaches every variant and every optional field both ways.
//!
//! What it covers: `#[serde(flatten)]` of an enum tagged every way (external, internal with
//! `tag`, adjacent with `tag` + `content`, untagged), of two enums at once, of an `Option` of
//! an enum, of a struct and of a map; tagged and untagged enums as fields and in a `Vec`;
//! `Option` (nested, with `#[serde(default)]`, with `skip_serializing_if`); maps; nested
//! structs; tuples; a recursive type; `#[serde(default)]`, `rename_all` (on structs and enums),
//! `rename`, `skip`; documented unit enums; newtypes; `char`, `i8`, `u16`, `u32`, `i64`, `f64`.

use std::collections::BTreeMap;

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate::tool;

use crate::support::short_text;

/// Where the corpus tools are registered.
pub(crate) const MODULE: &str = module_path!();

fn text() -> impl Strategy<Value = String> {
    short_text()
}

/// Numbers with a short exact decimal form (quarters), so that reading one back gives the
/// same `f64` (serde_json parses long decimals to the nearest float only with its
/// `float_roundtrip` feature).
fn finite() -> impl Strategy<Value = f64> {
    (-4_000_000i32..4_000_000).prop_map(|n| f64::from(n) / 4.0)
}

/// A nested struct.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Inner {
    /// A flag.
    pub(crate) z: bool,
    /// An optional count.
    #[serde(default)]
    pub(crate) w: Option<u32>,
}

fn inner() -> impl Strategy<Value = Inner> {
    (any::<bool>(), proptest::option::of(0u32..5000)).prop_map(|(z, w)| Inner { z, w })
}

/// Externally tagged (serde's default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) enum Ext {
    /// A circle.
    Circle {
        /// Its radius.
        r: f64,
    },
    /// A square.
    Square(u8),
    /// Nothing.
    Unit,
}

fn ext() -> impl Strategy<Value = Ext> {
    prop_oneof![
        finite().prop_map(|r| Ext::Circle { r }),
        any::<u8>().prop_map(Ext::Square),
        Just(Ext::Unit),
    ]
}

/// Internally tagged, variants renamed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Op {
    /// Adds.
    AddUp {
        /// Left.
        a: i32,
        /// Right.
        b: i32,
    },
    /// Negates.
    Neg {
        /// The operand.
        a: i32,
    },
    /// Does nothing.
    Noop,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (any::<i32>(), any::<i32>()).prop_map(|(a, b)| Op::AddUp { a, b }),
        any::<i32>().prop_map(|a| Op::Neg { a }),
        Just(Op::Noop),
    ]
}

/// Adjacently tagged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "t", content = "c")]
pub(crate) enum Adj {
    /// A number.
    Num(u8),
    /// A text.
    Text(String),
    /// Nothing.
    Nothing,
}

fn adj() -> impl Strategy<Value = Adj> {
    prop_oneof![
        any::<u8>().prop_map(Adj::Num),
        text().prop_map(Adj::Text),
        Just(Adj::Nothing),
    ]
}

/// Untagged scalars.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum Id {
    /// A number.
    Num(u32),
    /// A name.
    Text(String),
}

fn id() -> impl Strategy<Value = Id> {
    prop_oneof![(0u32..100_000).prop_map(Id::Num), text().prop_map(Id::Text)]
}

/// Untagged structs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum By {
    /// By name.
    Name {
        /// The name.
        name: String,
    },
    /// By code.
    Code {
        /// The code.
        code: u32,
    },
}

fn by() -> impl Strategy<Value = By> {
    prop_oneof![
        text().prop_map(|name| By::Name { name }),
        (0u32..100_000).prop_map(|code| By::Code { code }),
    ]
}

/// A documented unit enum, renamed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Level {
    /// Only errors.
    ErrorsOnly,
    /// Everything.
    All,
}

/// A newtype around a number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Meters(pub(crate) f64);

/// A recursive type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Tree {
    /// The node's label.
    pub(crate) label: String,
    /// Its children.
    pub(crate) children: Vec<Tree>,
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = text().prop_map(|label| Tree {
        label,
        children: Vec::new(),
    });
    leaf.prop_recursive(3, 12, 3, |inner| {
        (text(), prop::collection::vec(inner, 0..3))
            .prop_map(|(label, children)| Tree { label, children })
    })
}

// ---------------------------------------------------------------- the #[input] structs

/// Scalars, a nested struct, `rename_all`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Plain {
    /// A name.
    pub(crate) first_name: String,
    /// A count.
    pub(crate) count: u32,
    /// A ratio.
    pub(crate) ratio: f64,
    /// A flag.
    pub(crate) flag: bool,
    /// Tags.
    pub(crate) tags: Vec<String>,
    /// Nested.
    pub(crate) nested: Inner,
    /// One character.
    pub(crate) initial: char,
    /// A small signed number.
    pub(crate) small: i8,
    /// A large one.
    pub(crate) big: i64,
    /// A newtype.
    pub(crate) length: Meters,
}

pub(crate) fn plain() -> impl Strategy<Value = Plain> {
    (
        text(),
        0u32..1_000_000,
        finite(),
        any::<bool>(),
        prop::collection::vec(text(), 0..3),
        inner(),
        any::<char>(),
        any::<i8>(),
        any::<i64>(),
        finite(),
    )
        .prop_map(
            |(first_name, count, ratio, flag, tags, nested, initial, small, big, m)| Plain {
                first_name,
                count,
                ratio,
                flag,
                tags,
                nested,
                initial,
                small,
                big,
                length: Meters(m),
            },
        )
}

/// Optional fields every way: `Option`, nested, `#[serde(default)]`, `skip`,
/// `skip_serializing_if`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Optional {
    /// Maybe a text.
    pub(crate) a: Option<String>,
    /// Defaults to 0.
    #[serde(default)]
    pub(crate) b: u16,
    /// Never read from the input.
    #[serde(skip)]
    pub(crate) c: u8,
    /// Maybe a struct.
    pub(crate) d: Option<Inner>,
    /// Maybe a list of maybe numbers.
    pub(crate) e: Option<Vec<Option<i32>>>,
    /// Left out when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) f: Option<bool>,
}

pub(crate) fn optional() -> impl Strategy<Value = Optional> {
    (
        proptest::option::of(text()),
        any::<u16>(),
        proptest::option::of(inner()),
        proptest::option::of(prop::collection::vec(
            proptest::option::of(any::<i32>()),
            0..3,
        )),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(|(a, b, d, e, f)| Optional {
            a,
            b,
            c: 0,
            d,
            e,
            f,
        })
}

/// Enums as fields, tagged every way, and in a list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Tagged {
    /// Externally tagged.
    pub(crate) ext: Ext,
    /// Internally tagged.
    pub(crate) op: Op,
    /// Adjacently tagged.
    pub(crate) adj: Adj,
    /// Untagged.
    pub(crate) id: Id,
    /// A list of them.
    pub(crate) ops: Vec<Op>,
    /// A documented unit enum.
    pub(crate) level: Level,
}

pub(crate) fn tagged() -> impl Strategy<Value = Tagged> {
    (
        ext(),
        op(),
        adj(),
        id(),
        prop::collection::vec(op(), 0..3),
        prop_oneof![Just(Level::ErrorsOnly), Just(Level::All)],
    )
        .prop_map(|(ext, op, adj, id, ops, level)| Tagged {
            ext,
            op,
            adj,
            id,
            ops,
            level,
        })
}

/// A flattened externally tagged enum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct FlatExt {
    /// A query.
    pub(crate) q: String,
    /// The shape.
    #[serde(flatten)]
    pub(crate) shape: Ext,
}

pub(crate) fn flat_ext() -> impl Strategy<Value = FlatExt> {
    (text(), ext()).prop_map(|(q, shape)| FlatExt { q, shape })
}

/// A flattened internally tagged enum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct FlatInt {
    /// A query.
    pub(crate) q: String,
    /// The operation.
    #[serde(flatten)]
    pub(crate) op: Op,
}

pub(crate) fn flat_int() -> impl Strategy<Value = FlatInt> {
    (text(), op()).prop_map(|(q, op)| FlatInt { q, op })
}

/// A flattened adjacently tagged enum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct FlatAdj {
    /// A query.
    pub(crate) q: String,
    /// The value.
    #[serde(flatten)]
    pub(crate) value: Adj,
}

pub(crate) fn flat_adj() -> impl Strategy<Value = FlatAdj> {
    (text(), adj()).prop_map(|(q, value)| FlatAdj { q, value })
}

/// A flattened untagged enum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct FlatUnt {
    /// A query.
    pub(crate) q: u8,
    /// How to find it.
    #[serde(flatten)]
    pub(crate) by: By,
}

pub(crate) fn flat_unt() -> impl Strategy<Value = FlatUnt> {
    (any::<u8>(), by()).prop_map(|(q, by)| FlatUnt { q, by })
}

/// Two flattened enums at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct FlatTwo {
    /// A query.
    pub(crate) q: String,
    /// The operation.
    #[serde(flatten)]
    pub(crate) op: Op,
    /// The value.
    #[serde(flatten)]
    pub(crate) value: Adj,
}

pub(crate) fn flat_two() -> impl Strategy<Value = FlatTwo> {
    (text(), op(), adj()).prop_map(|(q, op, value)| FlatTwo { q, op, value })
}

/// A flattened optional enum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct FlatOpt {
    /// A query.
    pub(crate) q: String,
    /// Maybe a shape.
    #[serde(flatten)]
    pub(crate) shape: Option<Ext>,
}

pub(crate) fn flat_opt() -> impl Strategy<Value = FlatOpt> {
    (text(), proptest::option::of(ext())).prop_map(|(q, shape)| FlatOpt { q, shape })
}

/// A flattened struct and a flattened map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct FlatStruct {
    /// A query.
    pub(crate) q: String,
    /// Merged in.
    #[serde(flatten)]
    pub(crate) inner: Inner,
    /// Everything else.
    #[serde(flatten)]
    pub(crate) extra: BTreeMap<String, String>,
}

pub(crate) fn flat_struct() -> impl Strategy<Value = FlatStruct> {
    (
        text(),
        inner(),
        prop::collection::btree_map("x_[a-z]{1,4}", text(), 0..3),
    )
        .prop_map(|(q, inner, extra)| FlatStruct { q, inner, extra })
}

/// Maps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Maps {
    /// Structs by name.
    pub(crate) by_name: BTreeMap<String, Inner>,
    /// Counts by name.
    pub(crate) counts: BTreeMap<String, u64>,
}

pub(crate) fn maps() -> impl Strategy<Value = Maps> {
    (
        prop::collection::btree_map(text(), inner(), 0..3),
        prop::collection::btree_map(text(), any::<u64>(), 0..3),
    )
        .prop_map(|(by_name, counts)| Maps { by_name, counts })
}

/// Tuples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Tuples {
    /// A pair.
    pub(crate) pair: (u8, String),
    /// Maybe a triple.
    pub(crate) triple: Option<(bool, i16, String)>,
}

pub(crate) fn tuples() -> impl Strategy<Value = Tuples> {
    (
        (any::<u8>(), text()),
        proptest::option::of((any::<bool>(), any::<i16>(), text())),
    )
        .prop_map(|(pair, triple)| Tuples { pair, triple })
}

/// A recursive type inside.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Forest {
    /// The trees.
    pub(crate) trees: Vec<Tree>,
}

pub(crate) fn forest() -> impl Strategy<Value = Forest> {
    prop::collection::vec(tree(), 0..3).prop_map(|trees| Forest { trees })
}

/// `rename_all`, `rename`, a documented unit enum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub(crate) struct Renamed {
    /// The user.
    pub(crate) user_id: String,
    /// A trace id.
    #[serde(rename = "x-trace")]
    pub(crate) trace: Option<String>,
    /// How much to log.
    pub(crate) level: Level,
}

pub(crate) fn renamed() -> impl Strategy<Value = Renamed> {
    (
        text(),
        proptest::option::of(text()),
        prop_oneof![Just(Level::ErrorsOnly), Just(Level::All)],
    )
        .prop_map(|(user_id, trace, level)| Renamed {
            user_id,
            trace,
            level,
        })
}

// ---------------------------------------------------------------- the tools

/// The arguments, serialized again.
fn echo<T: Serialize>(args: &T) -> String {
    serde_json::to_string(args).unwrap_or_default()
}

/// Echoes scalars.
#[tool]
pub(crate) fn plain_tool(#[input] args: Plain) -> String {
    echo(&args)
}

/// Echoes optional fields.
#[tool]
pub(crate) fn optional_tool(#[input] args: Optional) -> String {
    echo(&args)
}

/// Echoes enums.
#[tool]
pub(crate) fn tagged_tool(#[input] args: Tagged) -> String {
    echo(&args)
}

/// Echoes a flattened externally tagged enum.
#[tool]
pub(crate) fn flat_ext_tool(#[input] args: FlatExt) -> String {
    echo(&args)
}

/// Echoes a flattened internally tagged enum.
#[tool]
pub(crate) fn flat_int_tool(#[input] args: FlatInt) -> String {
    echo(&args)
}

/// Echoes a flattened adjacently tagged enum.
#[tool]
pub(crate) fn flat_adj_tool(#[input] args: FlatAdj) -> String {
    echo(&args)
}

/// Echoes a flattened untagged enum.
#[tool]
pub(crate) fn flat_unt_tool(#[input] args: FlatUnt) -> String {
    echo(&args)
}

/// Echoes two flattened enums.
#[tool]
pub(crate) fn flat_two_tool(#[input] args: FlatTwo) -> String {
    echo(&args)
}

/// Echoes a flattened optional enum.
#[tool]
pub(crate) fn flat_opt_tool(#[input] args: FlatOpt) -> String {
    echo(&args)
}

/// Echoes a flattened struct and map.
#[tool]
pub(crate) fn flat_struct_tool(#[input] args: FlatStruct) -> String {
    echo(&args)
}

/// Echoes maps.
#[tool]
pub(crate) fn maps_tool(#[input] args: Maps) -> String {
    echo(&args)
}

/// Echoes tuples.
#[tool]
pub(crate) fn tuples_tool(#[input] args: Tuples) -> String {
    echo(&args)
}

/// Echoes trees.
#[tool]
pub(crate) fn forest_tool(#[input] args: Forest) -> String {
    echo(&args)
}

/// Echoes renamed fields.
#[tool]
pub(crate) fn renamed_tool(#[input] args: Renamed) -> String {
    echo(&args)
}
