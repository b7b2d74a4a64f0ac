//! The store's own runtime: one thread (`toolgate-postgres`) running a current-thread tokio
//! runtime, which owns the connections. A store method sends its work there and awaits the
//! answer on a oneshot channel, so sessions may be driven by any executor (`toolgate::block_on`,
//! tokio, another runtime); the cost is one cross-thread hop each way per operation (measured in
//! BENCHMARKS.md, "PostgreSQL").

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{JoinHandle, ThreadId};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::store::error::{StoreError, StoreErrorKind};

/// How long the runtime waits, when the store is dropped, for the tasks it was asked to drain
/// (the audit writer's queued lines) before it stops.
pub(crate) const DRAIN: Duration = Duration::from_secs(5);

/// The runtime thread and how to reach it. Dropping it stops the thread (after the drain) and
/// joins it, unless it is dropped on that thread.
pub(crate) struct Runtime {
    handle: Handle,
    thread: ThreadId,
    stop: Option<oneshot::Sender<()>>,
    join: Option<JoinHandle<()>>,
    /// Tasks awaited (at most [`DRAIN`]) when the runtime stops.
    drained: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Runtime {
    /// Starts the thread.
    ///
    /// # Errors
    /// When the thread or the runtime cannot be made (out of resources).
    pub(crate) fn start() -> Result<Runtime, StoreError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| {
                StoreError::new(
                    StoreErrorKind::Unavailable,
                    format!("cannot start the store's runtime: {e}"),
                )
            })?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let drained: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let drain = Arc::clone(&drained);
        let join = std::thread::Builder::new()
            .name("toolgate-postgres".to_owned())
            .spawn(move || {
                runtime.block_on(async move {
                    let _ = stopped.await;
                    let tasks =
                        std::mem::take(&mut *drain.lock().unwrap_or_else(PoisonError::into_inner));
                    let all = async {
                        for task in tasks {
                            let _ = task.await;
                        }
                    };
                    let _ = tokio::time::timeout(DRAIN, all).await;
                });
                // Dropping the runtime here cancels what is left and closes the connections.
            })
            .map_err(|e| {
                StoreError::new(
                    StoreErrorKind::Unavailable,
                    format!("cannot start the store's thread: {e}"),
                )
            })?;
        Ok(Runtime {
            handle,
            thread: join.thread().id(),
            stop: Some(stop),
            join: Some(join),
            drained,
        })
    }

    /// The runtime's handle (to spawn on it).
    pub(crate) fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Whether the caller runs on the runtime's thread (where nothing may block on it).
    pub(crate) fn is_current(&self) -> bool {
        std::thread::current().id() == self.thread
    }

    /// Spawns `task` and has the runtime await it (at most [`DRAIN`]) before it stops.
    pub(crate) fn spawn_drained(&self, task: impl Future<Output = ()> + Send + 'static) {
        let handle = self.handle.spawn(task);
        self.drained
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(handle);
    }

    /// Runs `work` on the runtime; the future of its answer may be awaited on any executor. A
    /// runtime that has stopped answers a [`StoreError`] naming `what`.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        what: &'static str,
        work: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> impl Future<Output = Result<T, StoreError>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        self.handle.spawn(async move {
            let _ = tx.send(work.await);
        });
        async move {
            rx.await.unwrap_or_else(|_| {
                Err(StoreError::new(
                    StoreErrorKind::Unavailable,
                    format!("PostgreSQL: {what}: the store's runtime has stopped"),
                ))
            })
        }
    }

    /// Runs `work` on the runtime and blocks the calling thread until it answers (at
    /// `connect`, and for the host's blocking waits). Refused on the runtime's own thread.
    pub(crate) fn block_on<T: Send + 'static>(
        &self,
        what: &'static str,
        work: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        if self.is_current() {
            return Err(StoreError::new(
                StoreErrorKind::Unavailable,
                format!("PostgreSQL: {what}: cannot wait for the store on its own runtime thread"),
            ));
        }
        let (tx, rx) = std::sync::mpsc::channel();
        self.handle.spawn(async move {
            let _ = tx.send(work.await);
        });
        rx.recv().unwrap_or_else(|_| {
            Err(StoreError::new(
                StoreErrorKind::Unavailable,
                format!("PostgreSQL: {what}: the store's runtime has stopped"),
            ))
        })
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(join) = self.join.take()
            && !self.is_current()
        {
            let _ = join.join();
        }
    }
}
