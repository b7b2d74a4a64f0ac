//! Reads run concurrently (ARCHITECTURE.md, "Contracts": "Ordering"): consecutive read-only blocks
//! of one message (in `respond`, and the waiting ones of a pending turn in `resume`) are polled
//! together by a small join of our own (no runtime, no dependency), at most `max_concurrent_reads`
//! at once, with two gates that keep what the sequential run promises:
//!
//! - **entry**: a block claims its id and runs its PreToolUse chain only once the block before
//!   it has started its tool (or was answered without one, a halt excepted). Chains run one
//!   at a time and in `tool_use` order, so a hook sees the effects of the chains before it; only
//!   the tools' bodies (and what follows them) overlap.
//! - **observers**: a block shows its record to the PostToolUse observers (the audit log among
//!   them) only after the block before it has, so observers and audit lines follow `tool_use`
//!   order.
//!
//! A block that halts (or that the answer memory refuses) closes the entry: no later block
//! starts. The blocks before it finish (as in the sequential run); a later block that had already
//! started (possible only when a wrapped caller halts after its tool started) finishes too, and
//! the halt names it ([`Halt::ran_after`](crate::Halt::ran_after)).
//!
//! The gates register no waker: a gated block waits only on blocks before it, and the join
//! polls every running block in `tool_use` order on each wake, so a block is polled right after
//! the one it waits on made progress in the same round.

use std::future::{Future, poll_fn};
use std::ops::Range;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::Poll;

/// The order of one message's blocks (absolute indices in the message).
#[derive(Default)]
pub(crate) struct TurnOrder {
    /// Blocks with an index below this have started (claimed their id); a `respond` dropped
    /// unfinished records the others as `cancelled`.
    pub(crate) started: AtomicUsize,
    /// The highest index that may start.
    open: AtomicUsize,
    /// The index of the block whose turn it is to show its record to the observers.
    observe: AtomicUsize,
    /// A block halted or was refused: no later block starts.
    closed: AtomicBool,
}

impl TurnOrder {
    /// A group of blocks starting at `first` begins: the first may start and observe at once.
    fn begin_group(&self, first: usize) {
        self.open.store(first, Ordering::SeqCst);
        self.observe.store(first, Ordering::SeqCst);
        self.closed.store(false, Ordering::SeqCst);
    }

    /// Waits until block `index` may start, then counts it as started.
    async fn enter(&self, index: usize) {
        poll_fn(|_| {
            if !self.closed.load(Ordering::SeqCst) && self.open.load(Ordering::SeqCst) >= index {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        self.started.fetch_max(index + 1, Ordering::SeqCst);
    }

    /// Block `index` no longer holds the next one back.
    fn release(&self, index: usize) {
        self.open.fetch_max(index + 1, Ordering::SeqCst);
    }

    /// Block `index` halted or was refused: nothing after it starts.
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }
}

/// One block's place in its message, for the gates inside its call.
#[derive(Clone, Copy)]
pub(crate) struct Slot<'t> {
    order: &'t TurnOrder,
    index: usize,
}

impl Slot<'_> {
    /// The block's tool started, or it was answered without one: the next block may start.
    pub(crate) fn release(&self) {
        self.order.release(self.index);
    }

    /// Waits until every earlier block of the group has shown its record to the observers.
    pub(crate) async fn turn_to_observe(&self) {
        poll_fn(|_| {
            if self.order.observe.load(Ordering::SeqCst) >= self.index {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
    }

    /// The observers have seen this block: the next one's turn.
    pub(crate) fn observed(&self) {
        self.order
            .observe
            .fetch_max(self.index + 1, Ordering::SeqCst);
    }
}

/// Polls the blocks `range` together, at most `max` at once, each behind the entry gate:
/// `start(index, slot)` is block `index`'s call (through the answer memory, with its `slot`). A
/// block's `Ok` lets the next one start (if its tool's start has not already); an `Err` closes
/// the entry. One outcome per block, in order; `None` for a block that never started.
pub(crate) async fn join_blocks<'t, T, E, Fut>(
    order: &'t TurnOrder,
    range: Range<usize>,
    max: usize,
    start: impl Fn(usize, Slot<'t>) -> Fut,
) -> Vec<Option<Result<T, E>>>
where
    Fut: Future<Output = Result<T, E>>,
{
    order.begin_group(range.start);
    let first = range.start;
    let start = &start;
    let make = |index: usize| async move {
        order.enter(index).await;
        let slot = Slot { order, index };
        let answer = start(index, slot).await;
        match &answer {
            Ok(_) => slot.release(),
            Err(_) => order.close(),
        }
        // A refusal shows observers nothing; whatever it did, its turn is over.
        slot.observed();
        answer
    };
    let mut outcomes: Vec<Option<Result<T, E>>> = range.clone().map(|_| None).collect();
    let mut running = Vec::with_capacity(max.min(range.len()));
    let mut next = range.start;
    poll_fn(|cx| {
        loop {
            let closed = order.closed.load(Ordering::SeqCst);
            while !closed && next < range.end && running.len() < max {
                running.push((next, Box::pin(make(next))));
                next += 1;
            }
            let mut finished = false;
            running.retain_mut(|(index, fut): &mut (usize, Pin<Box<_>>)| {
                // After a halt, a block that never started never will: drop it (it has done
                // nothing, so it records nothing).
                if order.closed.load(Ordering::SeqCst)
                    && order.started.load(Ordering::SeqCst) <= *index
                {
                    return false;
                }
                match fut.as_mut().poll(cx) {
                    Poll::Ready(outcome) => {
                        outcomes[*index - first] = Some(outcome);
                        finished = true;
                        false
                    }
                    Poll::Pending => true,
                }
            });
            let more = !order.closed.load(Ordering::SeqCst) && next < range.end;
            if running.is_empty() && !more {
                return Poll::Ready(());
            }
            if !(finished && more) {
                return Poll::Pending;
            }
        }
    })
    .await;
    outcomes
}
