//! Nothing here: the bench is `benches/peers.rs`.
