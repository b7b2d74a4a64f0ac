//! Fuzz target: bytes → `Message` (JSON) → `Session::respond` → checked answer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolgate_fuzz::respond(data));
