//! The bottom of the module graph: futures that may be ready at once, per-thread reused values,
//! caught panics, timers and deadlines, RFC 3339 timestamps, one stable sort, hex. Nothing here
//! imports the rest of the crate.

pub(crate) mod decimal;
pub(crate) mod future;
pub(crate) mod hex;
pub(crate) mod local;
pub(crate) mod panic;
pub(crate) mod sort;
pub(crate) mod time;
pub(crate) mod timer;
