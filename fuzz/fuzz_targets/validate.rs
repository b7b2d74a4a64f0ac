//! Fuzz target: bytes → a `tool_use` input (as JSON, and as a string) → normalization, bounds
//! and validation against tools with rich argument types.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolgate_fuzz::validate(data));
