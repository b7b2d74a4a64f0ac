//! The page in a real browser: Debian's headless Chromium driven over WebDriver by Debian's
//! chromedriver (the W3C protocol is JSON over HTTP: the tests' own small client below, no
//! driver crate). Two people are two browser sessions. Without Chromium or chromedriver the test
//! fails saying how to install them (scripts/test.sh installs both).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use support::{Client, TempDir, World};

/// The element key of WebDriver's answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn binary(names: &[&str], package: &str) -> PathBuf {
    for name in names {
        let path = Path::new("/usr/bin").join(name);
        if path.exists() {
            return path;
        }
    }
    panic!(
        "the browser test needs Debian's {package} ({}): apt-get install chromium chromium-driver \
         (scripts/test.sh installs them)",
        names.join(" or ")
    );
}

/// chromedriver on a free port, stopped at drop.
struct Driver {
    child: Child,
    client: Client,
}

impl Driver {
    fn start() -> Driver {
        let chromedriver = binary(&["chromedriver"], "chromium-driver");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let addr = format!("127.0.0.1:{port}").parse().unwrap();
        let client = Client {
            addr,
            cookie: None,
            csrf: None,
            host: format!("127.0.0.1:{port}"),
        };
        let start = Instant::now();
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "chromedriver did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Driver { child, client }
    }

    fn call(&self, method: &str, path: &str, body: &Value) -> Value {
        let text = if method == "GET" {
            String::new()
        } else {
            body.to_string()
        };
        let a = self.client.send(
            method,
            path,
            &[("Content-Type", "application/json")],
            text.as_bytes(),
        );
        let v: Value = serde_json::from_str(&a.body).unwrap_or_else(|e| panic!("{e}: {a:?}"));
        if std::env::var_os("TOOLGATE_WEBDRIVER_TRACE").is_some() {
            eprintln!(
                "{:?} {method} {path} -> {}",
                std::time::SystemTime::now(),
                a.status
            );
        }
        assert!(a.status == 200, "WebDriver {method} {path}: {v}");
        v["value"].clone()
    }

    /// A browser of its own (its own profile).
    fn browser(&self, profile: &Path) -> Browser<'_> {
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": binary(&["chromium", "chromium-browser"], "chromium"),
                "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                         "--no-first-run", "--disable-background-networking",
                         "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                         "--disable-dev-shm-usage",
                         format!("--user-data-dir={}", profile.display()),
                         "--window-size=1280,900"]
            }
        }}});
        let v = self.call("POST", "/session", &caps);
        Browser {
            driver: self,
            id: v["sessionId"].as_str().unwrap().to_owned(),
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One browser session.
struct Browser<'a> {
    driver: &'a Driver,
    id: String,
}

impl Drop for Browser<'_> {
    fn drop(&mut self) {
        let _ = self
            .driver
            .client
            .send("DELETE", &format!("/session/{}", self.id), &[], b"");
    }
}

impl Browser<'_> {
    fn call(&self, method: &str, path: &str, body: Value) -> Value {
        self.driver
            .call(method, &format!("/session/{}{path}", self.id), &body)
    }

    fn open(&self, url: &str) {
        self.call("POST", "/url", json!({"url": url}));
    }

    fn find(&self, css: &str) -> String {
        let v = self.call(
            "POST",
            "/element",
            json!({"using": "css selector", "value": css}),
        );
        v[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {v}"))
            .to_owned()
    }

    fn count(&self, css: &str) -> usize {
        self.call(
            "POST",
            "/elements",
            json!({"using": "css selector", "value": css}),
        )
        .as_array()
        .unwrap()
        .len()
    }

    fn click(&self, css: &str) {
        let e = self.find(css);
        self.call("POST", &format!("/element/{e}/click"), json!({}));
    }

    fn clear_and_type(&self, css: &str, text: &str) {
        let e = self.find(css);
        self.call("POST", &format!("/element/{e}/clear"), json!({}));
        self.call(
            "POST",
            &format!("/element/{e}/value"),
            json!({"text": text}),
        );
    }

    fn text(&self, css: &str) -> String {
        let e = self.find(css);
        self.call("GET", &format!("/element/{e}/text"), json!({}))
            .as_str()
            .unwrap()
            .to_owned()
    }

    fn script(&self, js: &str) -> Value {
        self.call("POST", "/execute/sync", json!({"script": js, "args": []}))
    }

    fn url(&self) -> String {
        self.call("GET", "/url", json!({}))
            .as_str()
            .unwrap()
            .to_owned()
    }

    fn resize(&self, width: u32) {
        self.call(
            "POST",
            "/window/rect",
            json!({"width": width, "height": 900}),
        );
    }

    fn screenshot(&self) -> Vec<u8> {
        let b64 = self.call("GET", "/screenshot", json!({}));
        base64::engine::general_purpose::STANDARD
            .decode(b64.as_str().unwrap())
            .unwrap()
    }

    /// Waits (up to 15 s) until `js` returns true.
    fn wait_for(&self, what: &str, js: &str) {
        let start = Instant::now();
        while self.script(js) != json!(true) {
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "waited for {what}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn sign_in(&self, base: &str, name: &str) {
        self.open(&format!("{base}/sign-in"));
        self.clear_and_type("#token", &support::token(name));
        self.click("form.sign-in button[type=submit]");
        self.wait_for(
            "the list after signing in",
            "return location.pathname === '/' && !!document.querySelector('table.calls')",
        );
    }
}

/// Every element that passes the page's right edge or scrolls sideways (hidden helpers aside).
const OVERFLOW: &str = r#"
const width = document.documentElement.clientWidth;
const bad = [];
if (document.documentElement.scrollWidth > width + 1) bad.push('page ' + document.documentElement.scrollWidth + '>' + width);
const hidden = (el) => { for (let e = el; e; e = e.parentElement) { const r = e.getBoundingClientRect(); if (r.width <= 1 || r.right < 0) return true; } return false; };
for (const el of document.body.querySelectorAll('*')) {
  if (hidden(el)) continue;
  const r = el.getBoundingClientRect();
  if (r.width === 0 && r.height === 0) continue;
  const name = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className ? '.' + el.className : '');
  if (r.right > width + 1) bad.push(name + ' right ' + Math.round(r.right));
  if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible') bad.push(name + ' scrolls');
}
return bad.join('; ');
"#;

/// How many pixels of a PNG are far from white, and how many different colours it has.
fn ink(png_bytes: &[u8]) -> (usize, usize) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let mut inked = 0;
    let mut colours = std::collections::BTreeSet::new();
    for p in buf[..info.buffer_size()].chunks(channels) {
        if p[..3].iter().map(|&c| 255 - u32::from(c)).sum::<u32>() > 120 {
            inked += 1;
        }
        colours.insert([p[0] >> 4, p[1] >> 4, p[2] >> 4]);
    }
    (inked, colours.len())
}

#[test]
fn people_decide_in_a_real_browser_and_see_each_other_decide_without_a_reload() {
    let w = World::sqlite("browser");
    let refund = |order: &str, cents: u64| json!({"order_id": order, "amount_cents": cents});
    w.pause(
        "s_web",
        &[("t_web", "issue_refund", refund("o_1002", 25_000))],
    );
    w.pause(
        "s_web2",
        &[
            ("t_web2", "issue_refund", refund("o_1003", 32_000)),
            ("t_web3", "issue_refund", refund("o_1004", 21_000)),
        ],
    );
    let base = format!("http://{}", w.addr);
    let driver = Driver::start();
    let profiles = TempDir::new("browser-profiles");
    let ann = driver.browser(&profiles.0.join("ann"));
    let bob = driver.browser(&profiles.0.join("bob"));

    // Ann signs in and sees the paused refund with the rule's reason.
    ann.sign_in(&base, "ann");
    let row = "tr.call[data-key='[\"s_web\",\"t_web\",\"t_web\"]']";
    assert_eq!(ann.count(row), 1);
    let text = ann.text(row);
    assert!(
        text.contains("support::ask: refunds above 20 000 cents need a person"),
        "{text}"
    );
    assert!(text.contains("order_id=\"o_1002\""), "{text}");

    // Bob has the same turn open.
    bob.sign_in(&base, "bob");
    bob.open(&format!("{base}/turn?session=s_web&turn=t_web"));
    assert_eq!(bob.count("#call-t_web form.approve"), 1);

    // Ann approves it: it leaves her list.
    ann.open(&format!("{base}/turn?session=s_web&turn=t_web"));
    ann.click("#call-t_web form.approve button[type=submit]");
    ann.wait_for(
        "the turn page again",
        "return location.hash === '#call-t_web' && !!document.querySelector('#call-t_web.closed')",
    );
    assert!(
        ann.text("#call-t_web .state")
            .starts_with("approved by ann at ")
    );
    ann.open(&format!("{base}/"));
    assert_eq!(ann.count(row), 0, "the approved call left the list");

    // Bob's open page turned read-only, saying who decided, without a reload.
    bob.wait_for(
        "bob's page to show ann's approval",
        "const s = document.querySelector('#call-t_web'); return s.classList.contains('closed') && s.querySelector('.state').textContent.startsWith('approved by ann at ')",
    );
    assert_eq!(bob.count("#call-t_web form.approve"), 0);
    assert!(
        bob.text("#call-t_web .decided-elsewhere")
            .starts_with("Decided elsewhere: approved by ann at ")
    );
    assert_eq!(
        bob.script("return performance.getEntriesByType('navigation').length"),
        json!(1)
    );

    // An edit with a wrong type is refused, the problem next to its field.
    ann.open(&format!("{base}/turn?session=s_web2&turn=t_web2"));
    ann.click("#call-t_web2 details.edit summary");
    ann.clear_and_type("#call-t_web2-edit-1", "lots");
    ann.click("#call-t_web2 form.edit button[type=submit]");
    ann.wait_for(
        "the refused edit",
        "return !!document.querySelector('#call-t_web2-edit-1-problem')",
    );
    assert_eq!(
        ann.text("#call-t_web2-edit-1-problem"),
        "amount_cents: expected an integer ≥ 0, found the string \"lots\""
    );
    assert_eq!(
        ann.script("return document.activeElement.id"),
        json!("call-t_web2-edit-1")
    );
    assert_eq!(w.call("s_web2", "t_web2", "t_web2")["state"], "waiting");

    // Declining without a reason is refused, the problem next to the reason.
    ann.click("#call-t_web3 form.decline button[type=submit]");
    ann.wait_for(
        "the refused decline",
        "return !!document.querySelector('#call-t_web3-reason-problem')",
    );
    assert_eq!(
        ann.text("#call-t_web3-reason-problem"),
        "A decline needs a reason: the model reads it."
    );
    assert_eq!(w.call("s_web2", "t_web2", "t_web3")["state"], "waiting");

    // A call added while the list is open appears in it.
    bob.open(&format!("{base}/"));
    w.pause(
        "s_web4",
        &[("t_web4", "issue_refund", refund("o_1005", 40_000))],
    );
    bob.wait_for("the new call", "return !!document.querySelector(\"tr.call[data-key='[\\\"s_web4\\\",\\\"t_web4\\\",\\\"t_web4\\\"]']\")");

    // At a desktop's width and a phone's: not blank, nothing overflowing.
    let shots = TempDir::new("browser-shots");
    for width in [1280u32, 390] {
        ann.resize(width);
        for (name, path) in [("list", "/"), ("turn", "/turn?session=s_web2&turn=t_web2")] {
            ann.open(&format!("{base}{path}"));
            let inner = ann.script("return window.innerWidth");
            assert!(
                inner.as_u64().unwrap() <= u64::from(width),
                "{inner} at {width}"
            );
            assert_eq!(ann.script(OVERFLOW), json!(""), "{name} at {width} px");
            let png = ann.screenshot();
            std::fs::write(shots.0.join(format!("{name}-{width}.png")), &png).unwrap();
            let (inked, colours) = ink(&png);
            assert!(inked > 5_000, "{name} at {width} px: {inked} inked pixels");
            assert!(colours >= 4, "{name} at {width} px: {colours} colours");
        }
    }
    if let Some(dir) = std::env::var_os("TOOLGATE_INBOX_SHOTS") {
        for e in std::fs::read_dir(&shots.0).unwrap().flatten() {
            let _ = std::fs::copy(e.path(), Path::new(&dir).join(e.file_name()));
        }
    }
    let _ = ann.url();
}
