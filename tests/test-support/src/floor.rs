//! The floor the approval inbox's benches measure a decision against.

use std::time::Instant;

/// The approval inbox benches' floor (`benches/inbox.rs`, `inbox/benches/inbox_http.rs`): one bare
/// conditional `UPDATE … WHERE id = $1 AND state = 'waiting' AND digest = $2 AND expires_at >
/// now() RETURNING id`, prepared, autocommit, on a plain tokio-postgres connection: a round trip
/// and a WAL flush, what a decision is compared with.
pub struct Floor {
    rt: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
    update: tokio_postgres::Statement,
    next: i64,
}

impl Floor {
    /// Connects with `settings` and makes the table `floor` of `rows` waiting rows.
    ///
    /// # Panics
    /// When the server cannot be reached or the table cannot be made (a bench's setup).
    pub fn new(settings: &str, rows: i64) -> Floor {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (client, update) = rt.block_on(async {
            let (client, connection) = tokio_postgres::connect(settings, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            client
                .batch_execute(&format!(
                    "CREATE TABLE floor (id bigint PRIMARY KEY, state text NOT NULL, \
                     digest text NOT NULL, expires_at timestamptz NOT NULL, decided_by text);
                     INSERT INTO floor SELECT n, 'waiting', 'd', now() + interval '1 day' \
                     FROM generate_series(1, {rows}) AS n"
                ))
                .await
                .unwrap();
            let update = client
                .prepare(
                    "UPDATE floor SET state = 'approved', decided_by = $3 \
                     WHERE id = $1 AND state = 'waiting' AND digest = $2 AND expires_at > now() \
                     RETURNING id",
                )
                .await
                .unwrap();
            (client, update)
        });
        Floor {
            rt,
            client,
            update,
            next: 0,
        }
    }

    /// `n` updates, each of a waiting row; the time per update (µs).
    ///
    /// # Panics
    /// When an update fails or finds no waiting row (more than `rows` updates).
    pub fn run(&mut self, n: usize) -> f64 {
        let start = Instant::now();
        for _ in 0..n {
            self.next += 1;
            let id = self.next;
            let rows = self
                .rt
                .block_on(self.client.query(&self.update, &[&id, &"d", &"lead"]))
                .unwrap();
            assert_eq!(rows.len(), 1, "a waiting row is updated");
        }
        start.elapsed().as_secs_f64() * 1e6 / n as f64
    }
}
