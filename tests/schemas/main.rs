//! The schemas' tests, one binary: the schema sent accepts every input serde accepts (the
//! `#[serde(flatten)]` shapes in `flatten`, the differential property test over a corpus of
//! input types in `differential`, with a real JSON Schema validator), and a schema toolgate did
//! not derive is checked before it is sent (`meta`). Tests are named `<file>::<test>`.

#[path = "../support/mod.rs"]
mod support;

mod corpus;
mod differential;
mod flatten;
mod meta;
