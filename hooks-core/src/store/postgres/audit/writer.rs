//! The queue of a store's audit sinks and the writer task that appends it, in batches, one
//! transaction each, with the chain's rule (the sink that feeds it is in `mod.rs`).

use super::super::conn::{OpenFailed, Resends, db_error, is_lost, open, opening, reopen_window};
use super::super::runtime::Runtime;
use super::super::sql;
use super::Chain;
use crate::base::future::join_all;
use crate::store::error::StoreError;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{Notify, mpsc, watch};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, Statement};

/// The most lines a sink keeps queued and not yet written: past it, a record is refused (the
/// audit log reports it on the observer channel; the call is not affected).
const MAX_QUEUED: usize = 65_536;
/// The most lines one transaction appends.
const MAX_BATCH: usize = 256;
/// How long the writer waits, after a line arrives, for more to append in the same transaction
/// (unless a flush asks for the lines now): one commit for a few lines instead of one each.
const LINGER: Duration = Duration::from_millis(10);
/// The first wait after a failed append, doubled after each failure up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// One queued line: its chain, the record's JSON object without its closing `}` and with a `,`
/// after its last member, and its number in the queue.
struct Line {
    chain: Chain,
    head: Vec<u8>,
    n: u64,
}

/// What the writer task has done: the number of the last line committed, and its failures.
#[derive(Debug, Clone, Default)]
pub(super) struct Status {
    pub(super) written: u64,
    pub(super) failures: u64,
    pub(super) error: Option<String>,
}

/// The queue of one store's sinks, and the writer task that empties it.
pub(crate) struct Writer {
    /// The sending end and the next line's number, together: a line's number is its place in
    /// the queue.
    queue: Mutex<(mpsc::Sender<Line>, u64)>,
    pub(super) status: watch::Receiver<Status>,
    /// Wakes the writer from its linger (a flush wants the lines now).
    pub(super) hurry: Arc<Notify>,
}

impl Writer {
    /// Starts the writer task on `runtime` (awaited when the store stops, so what is queued is
    /// written first), with a connection of its own.
    pub(crate) fn start(runtime: &Runtime, config: Config) -> Arc<Writer> {
        let (tx, rx) = mpsc::channel(MAX_QUEUED);
        let (status_tx, status) = watch::channel(Status::default());
        let hurry = Arc::new(Notify::new());
        let task = write_queue(rx, config, status_tx, Arc::clone(&hurry), writer_id());
        runtime.spawn_drained(task);
        Arc::new(Writer {
            queue: Mutex::new((tx, 1)),
            status,
            hurry,
        })
    }

    /// Queues `object` (one JSON object) on `chain`; returns its number.
    pub(super) fn queue(&self, chain: Chain, mut object: Vec<u8>) -> Result<u64, String> {
        if object.pop() != Some(b'}') {
            return Err("an audit line must be a JSON object".to_owned());
        }
        if object != b"{" {
            object.push(b',');
        }
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        let n = queue.1;
        let line = Line {
            chain,
            head: object,
            n,
        };
        queue.0.try_send(line).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => format!(
                "the PostgreSQL audit queue is full ({MAX_QUEUED} lines not yet written: is the \
                 database reachable?); this line is lost"
            ),
            mpsc::error::TrySendError::Closed(_) => {
                "the PostgreSQL audit writer has stopped; this line is lost".to_owned()
            }
        })?;
        queue.1 += 1;
        Ok(n)
    }

    /// The number of the last line queued (0: none).
    pub(super) fn last_queued(&self) -> u64 {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner).1 - 1
    }
}

/// A number no other writer uses: the process id and the time, hashed with a random key.
fn writer_id() -> i64 {
    use std::hash::BuildHasher;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let n = std::hash::RandomState::new().hash_one((std::process::id(), nanos));
    i64::from_ne_bytes(n.to_ne_bytes())
}

/// The writer task: takes the queued lines in order, up to [`MAX_BATCH`] at a time (waiting
/// [`LINGER`] for more after the first, unless a flush hurries it), and appends each batch in
/// one transaction; a batch that fails is tried again (after a wait that grows to
/// [`MAX_BACKOFF`]) until it is written. Ends when every sender is gone and the queue is empty.
async fn write_queue(
    mut rx: mpsc::Receiver<Line>,
    config: Config,
    status: watch::Sender<Status>,
    hurry: Arc<Notify>,
    writer: i64,
) {
    let mut conn: Option<WriterConn> = None;
    let mut batch: Vec<Line> = Vec::new();
    let mut backoff = MIN_BACKOFF;
    loop {
        if batch.is_empty() {
            match rx.recv().await {
                Some(line) => batch.push(line),
                None => return,
            }
            if !rx.is_closed() {
                let _ = tokio::time::timeout(LINGER, hurry.notified()).await;
            }
        }
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(line) => batch.push(line),
                Err(_) => break,
            }
        }
        match append(&mut conn, &config, &batch, writer).await {
            Ok(()) => {
                let last = batch.last().map_or(0, |l| l.n);
                batch.clear();
                status.send_modify(|s| s.written = last);
                backoff = MIN_BACKOFF;
            }
            Err(e) => {
                tracing::error!(target: "toolgate::observer", error = %e, lines = batch.len(),
                    "audit lines could not be written to PostgreSQL; they stay queued and are \
                     tried again");
                status.send_modify(|s| {
                    s.failures += 1;
                    s.error = Some(e.message().to_owned());
                });
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// The writer's connection and statements.
struct WriterConn {
    client: Client,
    begin: Statement,
    commit: Statement,
    lock: Statement,
    append: Statement,
}

impl WriterConn {
    /// Opens the writer's connection, waiting within the connect timeout for a server that is
    /// unavailable now (restarting).
    async fn open(config: &Config) -> Result<WriterConn, StoreError> {
        opening(reopen_window(config), || async {
            let client = open(config).await?;
            let prepared = async {
                Ok::<_, tokio_postgres::Error>((
                    client.prepare(sql::BEGIN).await?,
                    client.prepare(sql::COMMIT).await?,
                    client.prepare(sql::LOCK_CHAIN).await?,
                    client.prepare(sql::APPEND).await?,
                ))
            };
            let (begin, commit, lock, append) = prepared
                .await
                .map_err(|e| OpenFailed::new("preparing the audit statements", e))?;
            Ok(WriterConn {
                client,
                begin,
                commit,
                lock,
                append,
            })
        })
        .await
        .map_err(OpenFailed::into_error)
    }

    /// Appends `batch` in one transaction, every statement sent at once (one round trip and
    /// one commit for the batch): `BEGIN`, each chain's lock in a fixed order (so writers never
    /// deadlock), one `INSERT` per line, `COMMIT`. Any statement that fails rolls it all back.
    async fn write(&self, batch: &[Line], writer: i64) -> Result<(), tokio_postgres::Error> {
        let mut chains: Vec<Chain> = batch.iter().map(|l| l.chain).collect();
        chains.sort();
        chains.dedup();
        let keys: Vec<i32> = chains.iter().map(|c| c.lock_key()).collect();
        let names: Vec<&str> = batch.iter().map(|l| l.chain.name()).collect();
        let ns: Vec<i64> = batch.iter().map(|l| l.n as i64).collect();
        let class = sql::LOCK_CLASS;
        let locks: Vec<[&(dyn ToSql + Sync); 2]> =
            keys.iter().map(|k| [&class as _, k as _]).collect();
        let appends: Vec<[&(dyn ToSql + Sync); 4]> = batch
            .iter()
            .enumerate()
            .map(|(i, l)| [&names[i] as _, &l.head as _, &writer as _, &ns[i] as _])
            .collect();
        let mut statements: Vec<Execute<'_>> = Vec::with_capacity(batch.len() + keys.len() + 2);
        statements.push(Box::pin(self.client.execute(&self.begin, &[])));
        for params in &locks {
            statements.push(Box::pin(self.client.execute(&self.lock, params)));
        }
        for params in &appends {
            statements.push(Box::pin(self.client.execute(&self.append, params)));
        }
        statements.push(Box::pin(self.client.execute(&self.commit, &[])));
        for result in join_all(statements).await {
            result?;
        }
        Ok(())
    }
}

/// One statement's future, boxed to be polled with the others of a transaction.
type Execute<'a> = Pin<Box<dyn Future<Output = Result<u64, tokio_postgres::Error>> + Send + 'a>>;

/// Appends `batch` on the writer's connection, opened first when there is none or it was lost.
/// A batch whose connection is lost ([`is_lost`]), before, while or after its transaction
/// commits, is written again at once on a new connection (as [`Resends`] allows):
/// a line already committed is not written twice, since each line carries its writer's id and
/// number, unique in the table, and [`sql::APPEND`] inserts nothing for a line already there.
async fn append(
    conn: &mut Option<WriterConn>,
    config: &Config,
    batch: &[Line],
    writer: i64,
) -> Result<(), StoreError> {
    let mut resends = Resends::new(config);
    loop {
        let c = match conn.take() {
            Some(c) if !c.client.is_closed() => conn.insert(c),
            _ => conn.insert(WriterConn::open(config).await?),
        };
        resends.sent();
        let Err(e) = c.write(batch, writer).await else {
            return Ok(());
        };
        let lost = is_lost(&e) || c.client.is_closed();
        if lost {
            *conn = None;
        }
        if !lost || !resends.again() {
            return Err(db_error("appending audit lines", e));
        }
    }
}
