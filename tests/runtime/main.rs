//! The runtime's tests, one binary (one link) for what were fourteen: each file is one area of
//! the pipeline, and its tests are named `<file>::<test>` (`cargo test --test runtime chain::`
//! runs one area). Items registered with the macros are looked up under each module's own path
//! (`registered_under(module_path!())` and sub-modules), never registry-wide: one binary shares
//! one registry.

#[path = "../support/mod.rs"]
mod support;

mod ask;
mod audit;
mod audit_chain;
mod audit_readers;
mod audit_sinks;
mod build;
mod chain;
mod concurrency;
mod concurrent_reads;
mod content;
mod context;
mod deadlines;
mod effects;
mod errors;
mod feature_paths;
mod hook_runs;
mod ids;
mod inbox;
mod invalid_input;
mod leases;
mod limits;
mod observers;
mod otel_spans;
mod outcomes;
mod panics;
mod pause;
mod pre_tool_use;
mod quickstart;
mod recycled_ids;
mod replies;
mod retries;
mod sealed;
mod session;
mod stores;
mod testing;
#[cfg(feature = "tower")]
mod tower_layers;
mod tracing_channels;
mod trusted_context;
mod typed_hooks;
mod usage;
mod what_if;
mod wrapping;
