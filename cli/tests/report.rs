//! `toolgate audit report`: every figure of the page against the recorded log's own lines, and
//! the page rendered in headless Chromium at a desktop's and a phone's width.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::{Scratch, counted, fixture, json_lines, nearest_rank, rule_counts, runs, toolgate};

/// Every `data-k="KEY">VALUE<` of a page; a key twice is a defect.
fn page_figures(page: &str) -> BTreeMap<String, String> {
    let mut figures = BTreeMap::new();
    for rest in page.split("data-k=\"").skip(1) {
        let (key, rest) = rest.split_once('"').unwrap();
        let value = rest.split_once('>').unwrap().1.split_once('<').unwrap().0;
        let before = figures.insert(key.to_owned(), value.to_owned());
        assert!(before.is_none(), "data-k {key} twice");
    }
    figures
}

/// A wait as the page writes it: `850 ms`, `42 s`, `3 min 20 s`, `2 h 5 min`.
fn wait_text(us: u64) -> String {
    let s = us / 1_000_000;
    match s {
        0 => format!("{} ms", us / 1_000),
        1..60 => format!("{s} s"),
        60..3_600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3_600, s % 3_600 / 60),
    }
}

/// Microseconds since the epoch of an RFC 3339 UTC time (`2026-11-25T11:03:05.5Z`), by the
/// civil-from-days algorithm's inverse (days from civil), for the test's own wait arithmetic.
fn micros(ts: &str) -> u64 {
    let (date, time) = ts.trim_end_matches('Z').split_once('T').unwrap();
    let d: Vec<i64> = date.split('-').map(|p| p.parse().unwrap()).collect();
    let (y, m, day) = (d[0] - i64::from(d[1] <= 2), d[1], d[2]);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let t: Vec<i64> = hms.split(':').map(|p| p.parse().unwrap()).collect();
    let frac_us: i64 = format!("{frac:0<6}")[..6].parse().unwrap();
    ((days * 86_400 + t[0] * 3_600 + t[1] * 60 + t[2]) * 1_000_000 + frac_us) as u64
}

/// What the page must show, recomputed from the log's lines.
fn expected(lines: &[Value], summaries: &[Value]) -> BTreeMap<String, String> {
    let kept = counted(lines);
    let mut want = BTreeMap::<String, String>::new();
    let mut put = |k: String, v: String| {
        want.insert(k, v);
    };
    put("calls".into(), kept.len().to_string());
    put("sessions".into(), summaries.len().to_string());
    put("left_out".into(), (lines.len() - kept.len()).to_string());
    put("chain".into(), "verifies".into());
    let day = |l: &Value| l["ts"].as_str().unwrap()[..10].to_owned();
    let mut outcomes: Vec<String> = kept
        .iter()
        .map(|l| l["outcome"].as_str().unwrap().into())
        .collect();
    outcomes.sort();
    outcomes.dedup();
    let mut days: Vec<String> = kept.iter().map(|l| day(l)).collect();
    days.sort();
    days.dedup();
    for d in &days {
        for o in &outcomes {
            let n = kept
                .iter()
                .filter(|l| day(l) == *d && l["outcome"] == o.as_str())
                .count();
            put(format!("day:{d}:{o}"), n.to_string());
        }
    }
    for o in &outcomes {
        let n = kept.iter().filter(|l| l["outcome"] == o.as_str()).count();
        put(format!("outcome:{o}"), n.to_string());
    }
    for (rule, r) in rule_counts(&kept) {
        put(format!("rule_runs:{rule}"), r[0].to_string());
        put(format!("rule_denials:{rule}"), r[1].to_string());
        put(format!("rule_asks:{rule}"), r[2].to_string());
    }
    people(lines, &mut put);
    customers(&kept, lines, &mut put);
    per_rule_per_day(&kept, &mut put);
    latency(&kept, &mut put);
    let mut tools: Vec<&str> = kept.iter().map(|l| l["tool"].as_str().unwrap()).collect();
    tools.sort();
    tools.dedup();
    for t in tools {
        let of = kept.iter().filter(|l| l["tool"] == t);
        put(format!("tool_calls:{t}"), of.clone().count().to_string());
        put(
            format!("tool_blocked:{t}"),
            of.filter(|l| l["outcome"] == "blocked").count().to_string(),
        );
    }
    let halts = kept
        .iter()
        .filter(|l| l["outcome"] == "hook_failed" || l["outcome"] == "hook_timeout")
        .count();
    put("halts".into(), halts.to_string());
    for s in summaries.iter().filter(|s| s.get("usage").is_some()) {
        let id = s["session_id"].as_str().unwrap();
        put(
            format!("tokens_in:{id}"),
            s["usage"]["input_tokens"].to_string(),
        );
        put(
            format!("tokens_out:{id}"),
            s["usage"]["output_tokens"].to_string(),
        );
    }
    want
}

/// The report's `--now`: the paused turn of `sess_paused_08` (2026-11-26T14:00:00Z) is then
/// still within its 24 hours, the one of `sess_expired_09` was resumed after them.
const NOW: &str = "2026-11-27T00:00:00Z";

fn people(lines: &[Value], put: &mut impl FnMut(String, String)) {
    let key = |l: &Value| (l["session_id"].clone(), l["tool_use_id"].clone());
    let paused: Vec<&Value> = lines
        .iter()
        .filter(|l| l["outcome"] == "awaiting_approval")
        .collect();
    let finals = counted(lines);
    let (mut approved, mut declined, mut expired, mut waits) = (0, 0, 0, Vec::new());
    for p in &paused {
        let Some(last) = finals.iter().find(|l| key(l) == key(p)) else {
            continue;
        };
        let waited = micros(last["ts"].as_str().unwrap()) - micros(p["ts"].as_str().unwrap());
        waits.push(waited);
        let id = last["tool_use_id"].as_str().unwrap();
        let decision = if let Some(by) = last.get("approved_by") {
            approved += 1;
            format!(
                "approved by {} ({})",
                by.as_str().unwrap(),
                last["outcome"].as_str().unwrap()
            )
        } else if let Some(by) = last.get("denied_by") {
            declined += 1;
            format!("declined by {}", by.as_str().unwrap())
        } else {
            assert!(
                last["content"]
                    .as_str()
                    .unwrap()
                    .contains("approval longer than")
            );
            expired += 1;
            "expired unanswered".to_owned()
        };
        put(format!("decision:{id}"), decision);
        put(format!("waited:{id}"), wait_text(waited));
    }
    let open: Vec<&&Value> = paused
        .iter()
        .filter(|p| !finals.iter().any(|l| key(l) == key(p)))
        .collect();
    // One call still waits: paused at 2026-11-26T14:00:00Z, it expires 24 hours later.
    assert_eq!(open.len(), 1);
    put(
        format!("expires:{}", open[0]["tool_use_id"].as_str().unwrap()),
        "2026-11-27T14:00:00Z".into(),
    );
    put("asked".into(), paused.len().to_string());
    put("approved".into(), approved.to_string());
    put("declined".into(), declined.to_string());
    put("expired".into(), expired.to_string());
    put("waiting".into(), open.len().to_string());
    put("wait_p50".into(), wait_text(nearest_rank(&waits, 50)));
    put("wait_max".into(), wait_text(*waits.iter().max().unwrap()));
}

fn customers(kept: &[&Value], lines: &[Value], put: &mut impl FnMut(String, String)) {
    let paused: Vec<(&Value, &Value)> = lines
        .iter()
        .filter(|l| l["outcome"] == "awaiting_approval")
        .map(|l| (&l["session_id"], &l["tool_use_id"]))
        .collect();
    let mut users: Vec<&str> = kept
        .iter()
        .map(|l| l["user_id"].as_str().unwrap())
        .collect();
    users.sort();
    users.dedup();
    for u in users {
        let mine: Vec<&&Value> = kept.iter().filter(|l| l["user_id"] == u).collect();
        put(format!("user_calls:{u}"), mine.len().to_string());
        let blocked = mine.iter().filter(|l| l["outcome"] == "blocked").count();
        put(format!("user_blocked:{u}"), blocked.to_string());
        let waited = mine
            .iter()
            .filter(|l| {
                paused.contains(&(&l["session_id"], &l["tool_use_id"]))
                    || l.get("approved_by").is_some()
                    || l.get("denied_by").is_some()
            })
            .count();
        put(format!("user_waited:{u}"), waited.to_string());
        let refunds = mine
            .iter()
            .filter(|l| l["tool"] == "issue_refund" && l["outcome"] == "ok")
            .count();
        put(format!("user_count:{u}:issue_refund"), refunds.to_string());
    }
}

fn per_rule_per_day(kept: &[&Value], put: &mut impl FnMut(String, String)) {
    let mut days = BTreeMap::<(String, String), [u64; 2]>::new();
    for l in kept {
        let day = l["ts"].as_str().unwrap()[..10].to_owned();
        for run in runs(l) {
            let slot = match run["decision"].as_str().unwrap() {
                "deny" => 0,
                "ask" => 1,
                _ => continue,
            };
            days.entry((run["hook"].as_str().unwrap().into(), day.clone()))
                .or_default()[slot] += 1;
        }
        // Blocked with no hook run on the line and a hook at fault (a paused call that expired
        // at resume): a denial of that hook. A call a person declined names no hook: the
        // person's decline is no rule's denial.
        if l["outcome"] == "blocked"
            && runs(l).is_empty()
            && let Some(hook) = l["blocked_by"].as_str()
        {
            days.entry((hook.into(), day)).or_default()[0] += 1;
        }
    }
    for ((rule, day), [deny, ask]) in days {
        put(format!("rule_day:{rule}:{day}:deny"), deny.to_string());
        put(format!("rule_day:{rule}:{day}:ask"), ask.to_string());
    }
}

fn latency(kept: &[&Value], put: &mut impl FnMut(String, String)) {
    let mut rules = BTreeMap::<String, Vec<u64>>::new();
    let mut tools = BTreeMap::<String, Vec<u64>>::new();
    for l in kept {
        for run in runs(l) {
            rules
                .entry(run["hook"].as_str().unwrap().into())
                .or_default()
                .push(run["duration_us"].as_u64().unwrap());
        }
        tools
            .entry(l["tool"].as_str().unwrap().into())
            .or_default()
            .push(l["duration_us"].as_u64().unwrap());
    }
    for (prefix, samples) in [("lat_rule", rules), ("lat_tool", tools)] {
        for (name, s) in samples {
            for p in [50, 90, 99] {
                put(
                    format!("{prefix}:{name}:p{p}"),
                    nearest_rank(&s, p).to_string(),
                );
            }
            put(
                format!("{prefix}:{name}:max"),
                s.iter().max().unwrap().to_string(),
            );
        }
    }
}

/// `s` with `& < > " '` escaped and control characters written as `\u{1b}`, as the page writes
/// every text.
fn esc(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                format!("\\u{{{:x}}}", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn render(out: &Path) -> String {
    let (code, stdout, err) = toolgate(&[
        "audit",
        "report",
        fixture().to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--count-tool",
        "issue_refund",
        "--now",
        NOW,
    ]);
    assert_eq!(
        (code, stdout, err),
        (
            0,
            format!("report: {} (28 calls, chain verifies)\n", out.display()),
            String::new()
        )
    );
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn every_figure_of_the_page_is_the_logs_own() {
    let s = Scratch::new("report");
    let page = render(&s.path().join("report.html"));
    let lines = json_lines(&fixture().join("audit_log.jsonl"));
    let summaries = json_lines(&fixture().join("session_summaries.jsonl"));
    // The page escapes its texts; the keys recomputed here are raw.
    let want: BTreeMap<String, String> = expected(&lines, &summaries)
        .into_iter()
        .map(|(k, v)| (esc(&k), esc(&v)))
        .collect();
    assert_eq!(page_figures(&page), want);
    // Self-contained: no script, nothing fetched at view time.
    for absent in ["<script", "src=", "href=", "@import", "url("] {
        assert!(!page.contains(absent), "{absent}");
    }
    // Every chart has a text alternative: its title and its description, referenced.
    let charts = page.matches("<svg ").count();
    assert_eq!(
        charts,
        page.matches("role=\"img\" aria-labelledby=\"").count()
    );
    assert_eq!(charts, page.matches("<desc id=").count());
    assert!(charts >= 4, "{charts}");
    // The waiting call's reason, as its rule wrote it.
    assert!(page.contains(
        "<code>support_agent::policy::large_refund_needs_approval</code>: a refund of 25000 cents \
         is above 20000 cents and needs a person&#39;s approval"
    ));
    // A hostile tool name is text, not markup.
    assert!(page.contains(">\\u{1b}[2J\\u{1b}[31mrm_rf</td>") && !page.contains('\u{1b}'));
    // The halt's row: when, session, tool, outcome, hook and the operator's detail.
    assert!(page.contains(
        "<tr><td data-label=\"when (UTC)\">2026-11-28<wbr>T09:00:00Z</td>\
         <td data-label=\"session\">sess_halt_11</td><td data-label=\"tool\">lookup_user</td>\
         <td data-label=\"outcome\">hook_failed</td>\
         <td data-label=\"hook\"><code>ops::policy_store</code></td>\
         <td data-label=\"detail\">policy store unreachable: connection refused</td></tr>"
    ));
}

#[test]
fn a_trail_whose_summaries_carry_no_usage_says_no_tokens_were_recorded() {
    // The recorded trail without its last summary line, the one with `usage` (a chain cut at
    // its end still verifies).
    let s = Scratch::with_fixture("report-no-usage");
    let path = s.path().join("session_summaries.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let kept: String = text.lines().take(10).map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, kept).unwrap();
    let out = s.path().join("report.html");
    let (code, stdout, err) = toolgate(&[
        "audit",
        "report",
        s.path().to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--count-tool",
        "issue_refund",
        "--now",
        NOW,
    ]);
    assert_eq!(
        (code, stdout, err),
        (
            0,
            format!("report: {} (28 calls, chain verifies)\n", out.display()),
            String::new()
        )
    );
    let page = std::fs::read_to_string(&out).unwrap();
    let lines = json_lines(&s.path().join("audit_log.jsonl"));
    let summaries = json_lines(&path);
    assert!(summaries.iter().all(|l| l.get("usage").is_none()));
    let mut want: BTreeMap<String, String> = expected(&lines, &summaries)
        .into_iter()
        .map(|(k, v)| (esc(&k), esc(&v)))
        .collect();
    want.insert("tokens".into(), "none recorded: the host writes no ".into());
    assert_eq!(page_figures(&page), want);
}

#[test]
fn standard_output_gets_the_page_with_dash() {
    let s = Scratch::new("report-stdout");
    let file = render(&s.path().join("report.html"));
    let (code, out, err) = toolgate(&[
        "audit",
        "report",
        fixture().to_str().unwrap(),
        "-o",
        "-",
        "--count-tool",
        "issue_refund",
        "--now",
        NOW,
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(out, file);
    let (code, _, err) = toolgate(&[
        "audit",
        "report",
        fixture().to_str().unwrap(),
        "--now",
        "yesterday",
    ]);
    assert_eq!(
        (code, err.as_str()),
        (
            2,
            "toolgate: error: --now `yesterday` is not an RFC 3339 UTC time \
             (2026-11-24T15:40:00Z)\n"
        )
    );
}

// ---------------------------------------------------------------- in a browser

/// Debian's Chromium (`.ci/run` installs it); a test that needs it fails without it.
fn chromium() -> PathBuf {
    for path in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(path).exists() {
            return PathBuf::from(path);
        }
    }
    panic!("headless Chromium is needed: apt-get install chromium (.ci/run installs it)");
}

/// Chromium headless, with the flags a closed network and a root user need.
fn headless(profile: &Path, width: u32) -> Command {
    let mut c = Command::new(chromium());
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--virtual-time-budget=5000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg(format!("--window-size={width},900"));
    c
}

/// The check the test adds to a copy of the page (the page itself has no script): every
/// element's box is measured after layout; one whose content is wider than its box (an overflow
/// a reader would have to scroll or would not see), or whose right edge passes the page's, is
/// named in `data-overflow` on `<body>`.
const OVERFLOW_CHECK: &str = r#"<script>
addEventListener('load', () => {
  const width = document.documentElement.clientWidth;
  const bad = [];
  if (document.documentElement.scrollWidth > width + 1) bad.push('page ' + document.documentElement.scrollWidth + '>' + width);
  for (const el of document.body.querySelectorAll('*')) {
    if (el.closest('svg') && el.tagName.toLowerCase() !== 'svg') continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    const name = el.tagName.toLowerCase() + (el.dataset.k ? '[' + el.dataset.k + ']' : '');
    if (r.right > width + 1) bad.push(name + ' right ' + Math.round(r.right));
    if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible') bad.push(name + ' scrolls');
  }
  document.body.setAttribute('data-overflow', bad.length ? bad.slice(0, 20).join('; ') : 'none');
});
</script>"#;

#[test]
fn the_page_fits_a_desktop_and_a_phone_in_headless_chromium() {
    let s = Scratch::new("report-browser");
    let page = render(&s.path().join("report.html"));
    let checked = s.path().join("checked.html");
    std::fs::write(
        &checked,
        page.replace("</body>", &format!("{OVERFLOW_CHECK}</body>")),
    )
    .unwrap();
    // The check itself catches what it looks for: a cell too wide for a phone.
    let wide = s.path().join("wide.html");
    std::fs::write(
        &wide,
        page.replacen(
            "<td data-label=\"tool\">",
            "<td data-label=\"tool\"><span style=\"display:inline-block;width:900px\">x</span>",
            1,
        )
        .replace("</body>", &format!("{OVERFLOW_CHECK}</body>")),
    )
    .unwrap();
    let verdict = overflow(&s.path().join("profile-wide"), 390, &wide);
    assert!(verdict.contains("span right "), "{verdict}");
    for width in [1280u32, 390] {
        // The laid-out page, after the check ran.
        let profile = s.path().join(format!("profile-dom-{width}"));
        assert_eq!(overflow(&profile, width, &checked), "none", "at {width} px");

        // The screenshot of the page itself is not blank: many pixels far from white, in more
        // than the text's colour.
        let png = s.path().join(format!("shot-{width}.png"));
        let profile = s.path().join(format!("profile-shot-{width}"));
        let out = headless(&profile, width)
            .arg(format!("--screenshot={}", png.display()))
            .arg(format!("file://{}", s.path().join("report.html").display()))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (inked, colours) = ink(&png);
        assert!(inked > 20_000, "{inked} inked pixels at {width} px");
        assert!(colours >= 4, "{colours} chart colours at {width} px");
    }
}

/// What the overflow check found in `page` at `width` px.
fn overflow(profile: &Path, width: u32, page: &Path) -> String {
    let out = headless(profile, width)
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8(out.stdout).unwrap();
    dom.split_once("data-overflow=\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(v, _)| v.to_owned())
        .unwrap_or_else(|| panic!("the check did not run at {width} px"))
}

/// Of a PNG screenshot: how many pixels are far from white, and how many of the palette's
/// colours (the charts' fills) appear.
fn ink(path: &Path) -> (usize, usize) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let pixels = &buf[..info.buffer_size()];
    let mut inked = 0;
    let palette: [[u8; 3]; 5] = [
        [0x00, 0x9E, 0x73],
        [0xE6, 0x9F, 0x00],
        [0xD5, 0x5E, 0x00],
        [0xCC, 0x79, 0xA7],
        [0x00, 0x72, 0xB2],
    ];
    let mut seen = [false; 5];
    for p in pixels.chunks(channels) {
        if p[..3].iter().map(|&c| 255 - u32::from(c)).sum::<u32>() > 120 {
            inked += 1;
        }
        for (i, c) in palette.iter().enumerate() {
            if p[..3].iter().zip(c).all(|(a, b)| a.abs_diff(*b) <= 6) {
                seen[i] = true;
            }
        }
    }
    (inked, seen.iter().filter(|s| **s).count())
}
