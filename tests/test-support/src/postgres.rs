//! A PostgreSQL server for the tests (and `benches/postgres.rs`): the database of
//! `TOOLGATE_TEST_DATABASE_URL` when it is set (its user must be allowed to create databases),
//! else a throwaway server of this process's own: `initdb` into a temporary folder, `pg_ctl
//! start` on a Unix socket in that folder and on 127.0.0.1 (a free port), `fsync` on as by
//! default. One per process (a `OnceLock`), a fresh database per test ([`database`]).
//!
//! As root (CI), `initdb` and `postgres` refuse to run: they run as the `postgres` user
//! (`runuser -u postgres --`), the folder owned by it. The server is stopped, and its folder
//! removed, by a small guard process (`sh -c 'read _; pg_ctl stop …'`) that waits on a pipe
//! this process holds open: when this process exits, however it exits, the pipe closes and the
//! guard stops the server. Without binaries and without the variable, every test fails saying
//! how to get a server.
//!
//! A test that restarts its server has one of its own ([`own_server`], a [`Throwaway`]: the
//! same steps, whatever the variable says), stopped when the test drops it.

use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// What a test prints when there is no server.
const NO_SERVER: &str = "the PostgreSQL tests need a server: install PostgreSQL (`apt-get \
     install postgresql`: its initdb, pg_ctl and postgres are found under \
     /usr/lib/postgresql/*/bin or on PATH, and each test binary starts a throwaway server of \
     its own), or set TOOLGATE_TEST_DATABASE_URL to a database whose user may create databases";

/// Where the tests' databases live.
pub struct Server {
    /// Settings without a database name (one is appended or put in).
    base: Base,
    /// The throwaway server's TCP port on 127.0.0.1, when it is ours.
    tcp: Option<u16>,
}

enum Base {
    /// `host=… port=… user=…`, to which ` dbname=NAME` is appended.
    KeyValue(String),
    /// A URL: the part before its path, and its query (with `?`, or empty).
    Url { authority: String, query: String },
}

static SERVER: OnceLock<Result<Server, String>> = OnceLock::new();
/// The guards' standard inputs, held open until this process exits.
static GUARDS: Mutex<Vec<ChildStdin>> = Mutex::new(Vec::new());

/// The process's server, started at the first call.
///
/// # Panics
/// When there is none (see [`NO_SERVER`]) or it cannot be started.
pub fn server() -> &'static Server {
    match SERVER.get_or_init(start) {
        Ok(server) => server,
        Err(e) => panic!("{e}"),
    }
}

/// A database made for one test.
pub struct TestDb {
    /// Its name.
    pub name: String,
    /// Connection settings for it (the Unix socket of the throwaway server).
    pub settings: String,
    /// Settings for it over TCP on 127.0.0.1 (the throwaway server), or `settings`.
    pub tcp: String,
    dropped_at_end: bool,
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if self.dropped_at_end && !std::thread::panicking() {
            let admin = server().settings("postgres");
            if let Ok(sql) = std::panic::catch_unwind(|| Sql::connect(&admin)) {
                let _ = sql.try_run(&format!(
                    "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                    self.name
                ));
            }
        }
    }
}

/// A fresh, empty database.
pub fn database() -> TestDb {
    static N: AtomicUsize = AtomicUsize::new(0);
    let server = server();
    let name = format!(
        "t_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    Sql::connect(&server.settings("postgres")).run(&format!("CREATE DATABASE {name}"));
    TestDb {
        settings: server.settings(&name),
        tcp: server.tcp_settings(&name),
        dropped_at_end: server.tcp.is_none(),
        name,
    }
}

impl Server {
    /// Settings for database `name`.
    pub fn settings(&self, name: &str) -> String {
        match &self.base {
            Base::KeyValue(kv) => format!("{kv} dbname={name}"),
            Base::Url { authority, query } => format!("{authority}/{name}{query}"),
        }
    }

    /// A `postgres://` URL for database `name` over TCP on loopback with `password` in it (the
    /// throwaway server trusts loopback, so any password logs in), or the variable's URL.
    pub fn url(&self, name: &str, password: &str) -> String {
        match (self.tcp, &self.base) {
            (Some(port), _) => format!("postgres://toolgate:{password}@127.0.0.1:{port}/{name}"),
            (None, Base::Url { authority, query }) => format!("{authority}/{name}{query}"),
            (None, Base::KeyValue(_)) => {
                panic!("TOOLGATE_TEST_DATABASE_URL must be a postgres:// URL for this test")
            }
        }
    }

    /// Settings for database `name` over TCP on loopback (the throwaway server), or
    /// [`settings`](Self::settings).
    pub fn tcp_settings(&self, name: &str) -> String {
        match self.tcp {
            Some(port) => format!("host=127.0.0.1 port={port} user=toolgate dbname={name}"),
            None => self.settings(name),
        }
    }
}

fn start() -> Result<Server, String> {
    if let Ok(url) = std::env::var("TOOLGATE_TEST_DATABASE_URL") {
        return Ok(from_url(&url));
    }
    let server = Throwaway::start()?;
    let started = Server {
        base: Base::KeyValue(server.base()),
        tcp: Some(server.port),
    };
    // The process's server lives until the process ends (its guard then stops it).
    std::mem::forget(server);
    Ok(started)
}

/// A throwaway server: `initdb` into a temporary folder, `pg_ctl start` on a Unix socket in
/// that folder and on 127.0.0.1 (a free port). Dropping it stops it and removes its folder; so
/// does its guard when the process ends first.
pub struct Throwaway {
    bin: PathBuf,
    dir: PathBuf,
    owner: Option<&'static str>,
    port: u16,
}

/// The options `pg_ctl start` gives the server of `dir` listening on `port`.
fn options(dir: &Path, port: u16) -> String {
    format!(
        "-k {} -p {port} -c listen_addresses=127.0.0.1 -c max_connections=200",
        path(dir)
    )
}

/// A throwaway server of the calling test's own (for a test that restarts it).
///
/// # Panics
/// Without PostgreSQL's binaries (`TOOLGATE_TEST_DATABASE_URL` cannot be restarted), or when
/// the server cannot be started.
pub fn own_server() -> Throwaway {
    Throwaway::start().unwrap_or_else(|e| {
        panic!("this test restarts a server of its own, which needs PostgreSQL's binaries: {e}")
    })
}

impl Throwaway {
    fn start() -> Result<Throwaway, String> {
        let bin = find_bin().ok_or_else(|| NO_SERVER.to_owned())?;
        static N: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "toolgate-pg-{}-{nanos}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let owner = run_as(&dir)?;
        let server = Throwaway {
            bin,
            dir,
            owner,
            port: free_port()?,
        };
        let args = vec![
            "-D".to_owned(),
            path(&server.data()),
            "-U".to_owned(),
            "toolgate".to_owned(),
            "-A".to_owned(),
            "trust".to_owned(),
            "-E".to_owned(),
            "UTF8".to_owned(),
            "--locale=C".to_owned(),
            // initdb's own final flush of the new folder only; the server runs with fsync on.
            "-N".to_owned(),
        ];
        run(&server.owner, &server.bin.join("initdb"), &args)?;
        guard(
            &server.owner,
            &server.bin.join("pg_ctl"),
            &server.data(),
            &server.dir,
        )?;
        server.pg_ctl(&["-o", &options(&server.dir, server.port), "start"])?;
        Ok(server)
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// `host=… port=… user=toolgate`, its Unix socket.
    fn base(&self) -> String {
        format!("host={} port={} user=toolgate", path(&self.dir), self.port)
    }

    /// Settings for its database `name`.
    pub fn settings(&self, name: &str) -> String {
        format!("{} dbname={name}", self.base())
    }

    /// `pg_ctl -D DATA -l LOG -w -t 60 ARGS…`, as the server's user.
    fn pg_ctl(&self, args: &[&str]) -> Result<(), String> {
        let mut all: Vec<String> = vec![
            "-D".to_owned(),
            path(&self.data()),
            "-l".to_owned(),
            path(&self.dir.join("server.log")),
            "-w".to_owned(),
            "-t".to_owned(),
            "60".to_owned(),
        ];
        all.extend(args.iter().map(|a| (*a).to_owned()));
        run(&self.owner, &self.bin.join("pg_ctl"), &all)
    }

    /// Restarts it (`pg_ctl restart -m fast`: every backend terminated, `57P01`, a shutdown
    /// checkpoint, connections refused until it is up again) and waits until it is up.
    ///
    /// # Panics
    /// When `pg_ctl` fails.
    pub fn restart(&self) {
        self.pg_ctl(&["-m", "fast", "restart"])
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// Stops it (`pg_ctl stop -m fast`) until [`start_again`](Self::start_again).
    ///
    /// # Panics
    /// When `pg_ctl` fails.
    pub fn stop(&self) {
        self.pg_ctl(&["-m", "fast", "stop"])
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// Starts it again after [`stop`](Self::stop), and waits until it is up.
    ///
    /// # Panics
    /// When `pg_ctl` fails.
    pub fn start_again(&self) {
        self.pg_ctl(&["-o", &options(&self.dir, self.port), "start"])
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

impl Drop for Throwaway {
    fn drop(&mut self) {
        let _ = self.pg_ctl(&["-m", "immediate", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// A server at `url` (a URL or key-value settings), its database name replaced.
fn from_url(url: &str) -> Server {
    let base = match url.split_once("://") {
        Some((scheme, rest)) => {
            let (before_query, query) = match rest.split_once('?') {
                Some((b, q)) => (b, format!("?{q}")),
                None => (rest, String::new()),
            };
            let authority = before_query.split('/').next().unwrap_or_default();
            Base::Url {
                authority: format!("{scheme}://{authority}"),
                query,
            }
        }
        None => Base::KeyValue(url.to_owned()),
    };
    Server { base, tcp: None }
}

/// The folder of PostgreSQL's server binaries: the newest `/usr/lib/postgresql/*/bin` with an
/// `initdb`, else the folder of an `initdb` on `PATH`.
fn find_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find(|d| d.join("initdb").exists() && d.join("pg_ctl").exists())
}

/// Who runs the server: `None` (this process's user), or, as root, `Some("postgres")` with
/// `dir` given to it.
fn run_as(dir: &Path) -> Result<Option<&'static str>, String> {
    let uid = id(&["-u"])?;
    if uid != 0 {
        return Ok(None);
    }
    let (uid, gid) = match (id(&["-u", "postgres"]), id(&["-g", "postgres"])) {
        (Ok(u), Ok(g)) => (u, g),
        _ => {
            return Err(format!(
                "running as root, where initdb refuses to run, and there is no `postgres` user to \
                 run it as: {NO_SERVER}"
            ));
        }
    };
    std::os::unix::fs::chown(dir, Some(uid), Some(gid))
        .map_err(|e| format!("cannot give {} to postgres: {e}", dir.display()))?;
    Ok(Some("postgres"))
}

fn id(args: &[&str]) -> Result<u32, String> {
    let out = Command::new("id")
        .args(args)
        .output()
        .map_err(|e| format!("id: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| format!("id {args:?} failed"))
}

/// `program args…`, as `owner` when given; fails with its output.
fn run(owner: &Option<&str>, program: &Path, args: &[String]) -> Result<(), String> {
    let mut command = match owner {
        Some(user) => {
            let mut c = Command::new("runuser");
            c.args(["-u", user, "--"]).arg(program);
            c
        }
        None => Command::new(program),
    };
    let out = command
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{} {} failed ({}): {}{}",
        program.display(),
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// Starts the guard that stops the server in `data` and removes `dir` once this process has
/// exited (its standard input, a pipe only this process holds, then closes). In its own
/// process group, so a Ctrl-C of the test run does not stop it first.
fn guard(owner: &Option<&str>, pg_ctl: &Path, data: &Path, dir: &Path) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let as_owner = owner.map_or(String::new(), |u| format!("runuser -u {u} -- "));
    let script = format!(
        "read _; {as_owner}'{}' -D '{}' -m immediate -w stop; rm -rf '{}'",
        pg_ctl.display(),
        data.display(),
        dir.display()
    );
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start the server's guard: {e}"))?;
    let stdin = child
        .stdin
        .take()
        .ok_or("the guard has no standard input")?;
    GUARDS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(stdin);
    Ok(())
}

/// A TCP port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

/// The tests' own SQL (setup, tampering, counting), on a client of their own.
pub struct Sql {
    rt: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
}

impl Sql {
    /// Connects with `settings`.
    ///
    /// # Panics
    /// When it cannot.
    pub fn connect(settings: &str) -> Sql {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = rt.block_on(async {
            let (client, connection) = tokio_postgres::connect(settings, tokio_postgres::NoTls)
                .await
                .unwrap_or_else(|e| panic!("cannot connect with {settings:?}: {e}"));
            tokio::spawn(connection);
            client
        });
        Sql { rt, client }
    }

    /// Runs `text` (statements separated by `;`).
    pub fn run(&self, text: &str) {
        self.try_run(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    }

    /// Runs `text`; its error as text.
    pub fn try_run(&self, text: &str) -> Result<(), String> {
        self.rt
            .block_on(self.client.batch_execute(text))
            .map_err(|e| match e.as_db_error() {
                Some(db) => db.message().to_owned(),
                None => e.to_string(),
            })
    }

    /// The first column of the first row of `text`, an integer.
    pub fn int(&self, text: &str) -> i64 {
        let row = self
            .rt
            .block_on(self.client.query_one(text, &[]))
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        row.try_get::<_, i64>(0)
            .or_else(|_| row.try_get::<_, i32>(0).map(i64::from))
            .unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    /// The rows of `text`, each column as text (`NULL` as `None`).
    pub fn rows(&self, text: &str) -> Vec<Vec<Option<String>>> {
        let rows = self
            .rt
            .block_on(self.client.simple_query(text))
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        rows.into_iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(row) => Some(
                    (0..row.len())
                        .map(|i| row.get(i).map(str::to_owned))
                        .collect(),
                ),
                _ => None,
            })
            .collect()
    }
}
