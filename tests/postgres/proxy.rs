//! A TCP proxy between a store and the tests' server that cuts a connection where the test
//! says: armed with a command tag (`INSERT 0 1`, `COMMIT`, …), it drops the first answer of the
//! server that holds the tag and closes both sockets. The server sends a statement's tag only
//! once the statement's transaction has committed (the tag and `ReadyForQuery` leave together,
//! after the commit), so the client is left with a statement the server ran and an answer it
//! never gets: the unknown outcome a crash or a network cut leaves. After a cut, new connections
//! can be held (accepted, not yet forwarded) or refused (closed at once: the database out of
//! reach) until the test lets them through.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};

use crate::server::TestDb;

/// Where the server listens.
#[derive(Clone)]
enum Upstream {
    Tcp(String, u16),
    Unix(PathBuf),
}

/// One connection to the server.
enum Socket {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Socket {
    fn connect(to: &Upstream) -> std::io::Result<Socket> {
        Ok(match to {
            Upstream::Tcp(host, port) => Socket::Tcp(TcpStream::connect((host.as_str(), *port))?),
            Upstream::Unix(path) => Socket::Unix(UnixStream::connect(path)?),
        })
    }

    fn try_clone(&self) -> std::io::Result<Socket> {
        Ok(match self {
            Socket::Tcp(s) => Socket::Tcp(s.try_clone()?),
            Socket::Unix(s) => Socket::Unix(s.try_clone()?),
        })
    }

    fn shutdown(&self) {
        let _ = match self {
            Socket::Tcp(s) => s.shutdown(Shutdown::Both),
            Socket::Unix(s) => s.shutdown(Shutdown::Both),
        };
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.read(buf),
            Socket::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.write(buf),
            Socket::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[derive(Default)]
struct State {
    /// The tag (with its closing NUL) whose answer is dropped next, when armed.
    armed: Option<Vec<u8>>,
    /// How many times it was armed (an answer read before the last arming is not searched).
    armings: u64,
    /// Connections cut so far.
    cuts: usize,
    /// Whether connections opened after a cut wait until [`Proxy::let_through`].
    hold_after_cut: bool,
    holding: bool,
    /// Whether connections opened after a cut are closed at once until [`Proxy::let_through`].
    refuse_after_cut: bool,
    refusing: bool,
}

/// The proxy: listening on 127.0.0.1 until the test process ends.
pub(crate) struct Proxy {
    state: Arc<(Mutex<State>, Condvar)>,
    /// The test database's settings with the proxy in place of the server.
    pub(crate) settings: String,
}

impl Proxy {
    /// A proxy in front of the server of `db`.
    pub(crate) fn start(db: &TestDb) -> Proxy {
        let config: tokio_postgres::Config = db.settings.parse().unwrap();
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let upstream = match config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(host)) => Upstream::Tcp(host.clone(), port),
            Some(tokio_postgres::config::Host::Unix(dir)) => {
                Upstream::Unix(dir.join(format!(".s.PGSQL.{port}")))
            }
            None => Upstream::Unix(PathBuf::from(format!("/run/postgresql/.s.PGSQL.{port}"))),
        };
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let local = listener.local_addr().unwrap().port();
        let state: Arc<(Mutex<State>, Condvar)> = Arc::default();
        let shared = Arc::clone(&state);
        std::thread::spawn(move || accept(&listener, &upstream, &shared));
        let quoted = |v: &str| format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"));
        let mut settings = format!("host=127.0.0.1 port={local}");
        if let Some(user) = config.get_user() {
            settings.push_str(&format!(" user={}", quoted(user)));
        }
        if let Some(password) = config.get_password() {
            settings.push_str(&format!(
                " password={}",
                quoted(&String::from_utf8_lossy(password))
            ));
        }
        if let Some(dbname) = config.get_dbname() {
            settings.push_str(&format!(" dbname={}", quoted(dbname)));
        }
        Proxy { state, settings }
    }

    /// Arms the cut: the next answer of the server holding command tag `tag` is dropped and its
    /// connection closed (both ways).
    pub(crate) fn cut_at(&self, tag: &str) {
        let mut tagged = tag.as_bytes().to_vec();
        tagged.push(0);
        let mut state = self.state.0.lock().unwrap();
        state.armed = Some(tagged);
        state.armings += 1;
    }

    /// Connections opened after the next cut wait until [`let_through`](Self::let_through).
    pub(crate) fn hold_after_cut(&self) {
        self.state.0.lock().unwrap().hold_after_cut = true;
    }

    /// Connections opened after the next cut are closed at once (the database out of reach)
    /// until [`let_through`](Self::let_through).
    pub(crate) fn refuse_after_cut(&self) {
        self.state.0.lock().unwrap().refuse_after_cut = true;
    }

    /// Lets the held connections (and every later one) through.
    pub(crate) fn let_through(&self) {
        let mut state = self.state.0.lock().unwrap();
        state.hold_after_cut = false;
        state.holding = false;
        state.refuse_after_cut = false;
        state.refusing = false;
        self.state.1.notify_all();
    }

    /// Waits until `n` connections were cut in all.
    pub(crate) fn wait_cuts(&self, n: usize) {
        let mut state = self.state.0.lock().unwrap();
        while state.cuts < n {
            state = self.state.1.wait(state).unwrap();
        }
    }

    /// Connections cut so far.
    pub(crate) fn cuts(&self) -> usize {
        self.state.0.lock().unwrap().cuts
    }
}

fn accept(listener: &TcpListener, upstream: &Upstream, state: &Arc<(Mutex<State>, Condvar)>) {
    for client in listener.incoming() {
        let Ok(client) = client else { continue };
        {
            let mut s = state.0.lock().unwrap();
            while s.holding {
                s = state.1.wait(s).unwrap();
            }
            if s.refusing {
                // Closed before a byte of the server's.
                continue;
            }
        }
        let Ok(server) = Socket::connect(upstream) else {
            continue;
        };
        let (Ok(client_in), Ok(server_in)) = (client.try_clone(), server.try_clone()) else {
            continue;
        };
        let mut to_server = server.try_clone().unwrap();
        let mut from_client = Socket::Tcp(client_in);
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut from_client, &mut to_server);
            to_server.shutdown();
        });
        let state = Arc::clone(state);
        std::thread::spawn(move || answers(server_in, Socket::Tcp(client), &state));
    }
}

/// Forwards the server's answers to the client, until a cut or either end closes.
fn answers(mut server: Socket, mut client: Socket, state: &(Mutex<State>, Condvar)) {
    let mut buf = vec![0u8; 64 * 1024];
    // The end of the last answer forwarded (and the arming it was read under), so a tag split
    // across two reads is found too.
    let mut tail: (Vec<u8>, u64) = (Vec::new(), 0);
    loop {
        let n = match server.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut s = state.0.lock().unwrap();
        let mut seen = if tail.1 == s.armings {
            std::mem::take(&mut tail.0)
        } else {
            Vec::new()
        };
        seen.extend_from_slice(&buf[..n]);
        {
            let hit = s
                .armed
                .as_ref()
                .is_some_and(|tag| seen.windows(tag.len()).any(|w| w == tag.as_slice()));
            if hit {
                s.armed = None;
                s.cuts += 1;
                s.holding = s.hold_after_cut;
                s.refusing = s.refuse_after_cut;
                state.1.notify_all();
                drop(s);
                server.shutdown();
                client.shutdown();
                return;
            }
            tail = (seen[seen.len().saturating_sub(32)..].to_vec(), s.armings);
            drop(s);
        }
        if client.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    server.shutdown();
    client.shutdown();
}
