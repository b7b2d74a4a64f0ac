//! For the worker processes of the lease tests: a `tracing` subscriber that creates a marker
//! file when the process's store stops renewing a claim because a renewal failed (the event the
//! store's renewer emits, target `toolgate::memory`), so the test that cut the store off knows
//! when the worker lost its claim without reading its clock.

use std::path::{Path, PathBuf};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Creates the marker on the first renewal failure.
struct MarkLost(PathBuf);

/// Whether an event's message says a lease is renewed no more.
struct Lost(bool);

impl Visit for Lost {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" && format!("{value:?}").contains("renewed no more") {
            self.0 = true;
        }
    }
}

impl Subscriber for MarkLost {
    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        meta.target() == "toolgate::memory"
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut lost = Lost(false);
        event.record(&mut lost);
        if lost.0 && !self.0.exists() {
            std::fs::write(&self.0, "a renewal failed").unwrap();
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// From now on in this process, `marker` is created when a store stops renewing a claim
/// because a renewal failed.
pub(crate) fn mark_when_a_renewal_fails(marker: &Path) {
    tracing::subscriber::set_global_default(MarkLost(marker.to_path_buf()))
        .expect("no subscriber was set before in the worker");
}
