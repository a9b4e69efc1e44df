//! The HTML reports in a real browser: a failing scenario's, a shrunk exploration seed's, a world
//! failure's and a page whose scenario is written in markup, each loaded in headless Chromium
//! and judged on the page as the browser laid it out: no console error, no exception, no dialog
//! (the markup's `alert` never runs), the first divergence inside the first viewport, the
//! diverging event visible in its timeline's scroll box as the page opens, and the timeline's
//! lanes the actors of the history, the model's state beside the divergence where a model ran,
//! each lane collapsing to a sliver on a click on its name and opening on another, and a
//! timeline of more than six lanes (a scenario of eight callers) opening with its quiet lanes
//! collapsed, never the diverging one. A screenshot of each is kept under
//! `$TIDEMARK_BROWSER_SHOTS` (default: this test's target directory, `browser-check/`).
//!
//! The browser is driven over the Chrome DevTools Protocol on a pipe (`--remote-debugging-pipe`:
//! NUL-separated JSON on descriptors 3 and 4), so no client crate and no websocket are needed.
//! It installs nothing: without `chromium` on PATH it says why it is skipped, unless
//! `TIDEMARK_BROWSER=required` (set in CI, which installs Debian's chromium), where a missing
//! browser is a failure.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tidemark_conformance::spec::repo_root;

const TIDEMARK: &str = env!("CARGO_BIN_EXE_tidemark");

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// A browser on a pipe, with the events it sent while we waited for answers.
struct Browser {
    child: Child,
    to: std::io::PipeWriter,
    from: BufReader<std::io::PipeReader>,
    next: u64,
    events: Vec<Value>,
    done: Arc<AtomicBool>,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn start(binary: &Path) -> Browser {
        let (to_read, to_write) = std::io::pipe().expect("a pipe");
        let (from_read, from_write) = std::io::pipe().expect("a pipe");
        let profile = tempfile::tempdir().expect("a profile directory");
        let (r, w) = (to_read.as_raw_fd(), from_write.as_raw_fd());
        let mut cmd = Command::new(binary);
        cmd.args([
            "--headless",
            "--remote-debugging-pipe",
            "--no-sandbox", // CI runs the tests as root, where Chromium's sandbox refuses to start
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--window-size=1280,800",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // SAFETY: between fork and exec only async-signal-safe calls (fcntl, dup2) are made.
        unsafe {
            cmd.pre_exec(move || {
                // Out of the way first, so neither end is overwritten by the other's dup2.
                let r2 = libc::fcntl(r, libc::F_DUPFD, 10);
                let w2 = libc::fcntl(w, libc::F_DUPFD, 10);
                if r2 < 0 || w2 < 0 || libc::dup2(r2, 3) < 0 || libc::dup2(w2, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("chromium starts");
        drop((to_read, from_write));
        // A browser that stops answering must not hang the test run.
        let done = Arc::new(AtomicBool::new(false));
        let (pid, flag) = (child.id() as i32, done.clone());
        std::thread::spawn(move || {
            for _ in 0..120 {
                std::thread::sleep(Duration::from_millis(500));
                if flag.load(Ordering::SeqCst) {
                    return;
                }
            }
            // SAFETY: kill(2) on the browser's own pid.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        });
        Browser {
            child,
            to: to_write,
            from: BufReader::new(from_read),
            next: 0,
            events: Vec::new(),
            done,
            _profile: profile,
        }
    }

    fn read(&mut self) -> Value {
        let mut buf = Vec::new();
        self.from
            .read_until(0, &mut buf)
            .expect("the browser's pipe reads");
        assert!(buf.last() == Some(&0), "the browser closed its pipe");
        buf.pop();
        serde_json::from_slice(&buf).expect("the browser sends JSON")
    }

    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next += 1;
        let mut msg = json!({"id": self.next, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to
            .write_all(&bytes)
            .expect("the browser's pipe writes");
        loop {
            let m = self.read();
            if m["id"] == json!(self.next) {
                assert!(m.get("error").is_none(), "{method}: {m}");
                return m["result"].clone();
            }
            self.events.push(m);
        }
    }

    fn wait_for(&mut self, method: &str) {
        while !self.events.iter().any(|e| e["method"] == method) {
            let m = self.read();
            self.events.push(m);
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the page shows as the browser laid it out.
const PROBE: &str = r#"(() => {
  const d = document.getElementById('first-divergence');
  const r = d ? d.getBoundingClientRect() : null;
  const lanes = [...document.querySelectorAll('#failure-1 table.timeline tr:first-child th')]
    .slice(1).map(t => t.textContent);
  const marked = document.querySelector('#failure-1 tr.diverged');
  const box = document.querySelector('#failure-1 .scroll');
  let markedInBox = null;
  if (marked && box) {
    const a = marked.getBoundingClientRect(), b = box.getBoundingClientRect();
    markedInBox = a.top >= b.top - 1 && a.bottom <= b.bottom + 1;
  }
  const m = document.querySelector('#first-divergence .model');
  const mr = m ? m.getBoundingClientRect() : null;
  return JSON.stringify({
    divergence: r && { top: r.top, bottom: r.bottom },
    model: mr && { top: mr.top, bottom: mr.bottom, width: mr.width, text: m.innerText },
    viewport: innerHeight,
    lanes,
    markedInBox,
    overflows: box ? box.scrollHeight > box.clientHeight : null,
    scripts: document.scripts.length,
    text: d ? d.innerText : '',
  });
})()"#;

struct Seen {
    probe: Value,
    problems: Vec<String>,
    /// The page's lanes collapsed and expanded by clicking their headers ([`LANES`]).
    lanes: Value,
}

/// Each lane's width (its header's and its cells' widest) as the page opens, after a click on
/// its header, and after a second click; the lane of the diverging event.
const LANES: &str = r#"(() => {
  const table = document.querySelector('#failure-1 table.timeline');
  const rows = [...table.querySelectorAll('tr')];
  const ths = [...rows[0].children].slice(1);
  const width = k => Math.max(
    ths[k].getBoundingClientRect().width,
    ...rows.slice(1).map(r => r.children[k + 1]).filter(c => c)
      .map(c => c.getBoundingClientRect().width));
  const labels = ths.map(t => t.querySelector('label'));
  const opened = ths.map((_, k) => width(k));
  const clicked = [], again = [];
  ths.forEach((_, k) => {
    labels[k].click(); clicked.push(width(k));
    labels[k].click(); again.push(width(k));
  });
  const d = table.querySelector('tr.diverged');
  const divergedLane = d ? [...d.children].slice(1).findIndex(c => c.textContent.length > 0) : -1;
  return JSON.stringify({ names: ths.map(t => t.textContent), opened, clicked, again, divergedLane });
})()"#;

fn look(browser: &mut Browser, page: &Path, shot: &str) -> Seen {
    let target = browser.call(None, "Target.createTarget", json!({"url": "about:blank"}));
    let attached = browser.call(
        None,
        "Target.attachToTarget",
        json!({"targetId": target["targetId"], "flatten": true}),
    );
    let s = attached["sessionId"]
        .as_str()
        .expect("a session")
        .to_string();
    let s = Some(s.as_str());
    for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
        browser.call(s, domain, json!({}));
    }
    browser.call(
        s,
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": false}),
    );
    browser.events.clear();
    let url = format!("file://{}", page.display());
    browser.call(s, "Page.navigate", json!({"url": url}));
    browser.wait_for("Page.loadEventFired");
    let probe = browser.call(
        s,
        "Runtime.evaluate",
        json!({"expression": PROBE, "returnByValue": true}),
    );
    let probe: Value =
        serde_json::from_str(probe["result"]["value"].as_str().expect("the probe's JSON")).unwrap();
    let lanes = browser.call(
        s,
        "Runtime.evaluate",
        json!({"expression": LANES, "returnByValue": true}),
    );
    let lanes: Value =
        serde_json::from_str(lanes["result"]["value"].as_str().expect("the lanes' JSON")).unwrap();
    let png = browser.call(s, "Page.captureScreenshot", json!({"format": "png"}));
    let shots = std::env::var_os("TIDEMARK_BROWSER_SHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser-check"));
    std::fs::create_dir_all(&shots).unwrap();
    let bytes = base64_decode(png["data"].as_str().expect("a screenshot"));
    assert!(bytes.starts_with(b"\x89PNG"), "a PNG screenshot");
    std::fs::write(shots.join(format!("{shot}.png")), bytes).unwrap();
    let problems = browser
        .events
        .iter()
        .filter_map(|e| {
            let m = e["method"].as_str().unwrap_or("");
            let p = &e["params"];
            match m {
                "Runtime.exceptionThrown" => Some(format!("exception: {p}")),
                "Runtime.consoleAPICalled" if p["type"] == "error" => {
                    Some(format!("console error: {p}"))
                }
                "Log.entryAdded" if p["entry"]["level"] == "error" => {
                    Some(format!("log error: {p}"))
                }
                "Page.javascriptDialogOpening" => Some(format!("a dialog opened: {p}")),
                _ => None,
            }
        })
        .collect();
    Seen {
        probe,
        problems,
        lanes,
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let mut out = Vec::new();
    for chunk in s.as_bytes().chunks(4) {
        let digits: Vec<u8> = chunk.iter().copied().filter(|c| *c != b'=').collect();
        let n = digits
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, c)| acc | value(*c) << (18 - 6 * i));
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..digits.len().saturating_sub(1)]);
    }
    out
}

fn tidemark(args: &[&str], expect: i32) {
    let out = Command::new(TIDEMARK)
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("tidemark runs");
    assert_eq!(
        out.status.code(),
        Some(expect),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn every_kind_of_failure_shows_its_divergence_and_its_actors_in_a_real_browser() {
    let Some(binary) = chromium() else {
        assert!(
            std::env::var("TIDEMARK_BROWSER").as_deref() != Ok("required"),
            "TIDEMARK_BROWSER=required, but no chromium is on PATH"
        );
        eprintln!("skipped: no chromium on PATH (apt-get install -y chromium; TIDEMARK_BROWSER=required makes its absence a failure)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let at = |f: &str| dir.path().join(f);
    let path = |f: &str| at(f).display().to_string();
    tidemark(
        &[
            "run",
            "--impl",
            "python3 fixtures/adapters/broken-scratchpad.py",
            "--only",
            "scratchpad::the_session_cap_evicts_oldest_first",
            "--html",
            &path("scenario.html"),
        ],
        1,
    );
    tidemark(
        &[
            "explore",
            "--seeds",
            "10",
            "--mutant",
            "evict-newest-first",
            "--no-save",
            "--html",
            &path("explore.html"),
        ],
        1,
    );
    tidemark(
        &[
            "world",
            "--profile",
            "rows",
            "--mutant",
            "streamed-swept-by-age",
            "--seeds",
            "1",
            "--html",
            &path("world.html"),
        ],
        1,
    );
    let markup = at("scenarios/scratchpad");
    std::fs::create_dir_all(&markup).unwrap();
    std::fs::write(
        markup.join("markup.tdm"),
        "scenario: <script>alert(1)</script>\nprofile: scratchpad\nrules: SP-2.1\nkills: empty-path-names-the-root\n\nalice@#general/T1 write \"x<img src=x onerror=alert(2)>.txt\" \"<script>alert(3)</script>\"   => refused empty_path\n",
    )
    .unwrap();
    tidemark(
        &[
            "run",
            "--scenarios",
            &path("scenarios"),
            "--html",
            &path("markup.html"),
        ],
        1,
    );

    // Eight callers and the sweeper: more lanes than a timeline opens with.
    let crowd = at("crowd/scratchpad");
    std::fs::create_dir_all(&crowd).unwrap();
    let people = [
        "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi",
    ];
    let mut steps = String::new();
    for (n, who) in people.iter().enumerate() {
        for i in 0..=n {
            steps.push_str(&format!("{who}@#general write f{i}.md \"{who}\" => ok\n"));
        }
    }
    steps.push_str("alice@#general read f0.md => \"not what alice wrote\"\n");
    std::fs::write(
        crowd.join("crowd.tdm"),
        format!("scenario: a crowd writes and alice reads back another text\nprofile: scratchpad\nrules: SP-3.2\n\n{steps}"),
    )
    .unwrap();
    tidemark(
        &[
            "run",
            "--scenarios",
            &path("crowd"),
            "--html",
            &path("crowd.html"),
        ],
        1,
    );

    let mut browser = Browser::start(&binary);
    // Each page, the actors its timeline must have as lanes, and whether a model ran beside
    // the implementation (a scenario's expectations are written in its file: no model).
    let pages: [(&str, &[&str], bool); 5] = [
        ("scenario", &["alice"], false),
        ("crowd", &["alice", "heidi"], false),
        ("explore", &["sweeper / reaper", "alice", "bob"], true),
        (
            "world",
            &["harness", "sweeper / reaper", "g0", "g1", "g2"],
            true,
        ),
        ("markup", &["alice"], false),
    ];
    for (name, actors, modelled) in pages {
        let seen = look(&mut browser, &at(&format!("{name}.html")), name);
        let p = &seen.probe;
        assert!(seen.problems.is_empty(), "{name}: {:?}", seen.problems);
        assert_eq!(p["scripts"], 0, "{name}: the page runs no script: {p}");
        let (top, bottom, viewport) = (
            p["divergence"]["top"].as_f64().expect("a divergence"),
            p["divergence"]["bottom"].as_f64().unwrap(),
            p["viewport"].as_f64().unwrap(),
        );
        assert!(
            top >= 0.0 && bottom <= viewport,
            "{name}: the first divergence is in the first viewport: {p}"
        );
        if modelled {
            let (top, bottom, width) = (
                p["model"]["top"]
                    .as_f64()
                    .expect("the model's state is shown"),
                p["model"]["bottom"].as_f64().unwrap(),
                p["model"]["width"].as_f64().unwrap(),
            );
            assert!(
                top >= 0.0 && bottom <= viewport && width > 100.0,
                "{name}: the model's state at the divergence is in the first viewport: {p}"
            );
            assert!(
                p["model"]["text"].as_str().unwrap().contains("at +"),
                "{name}: the model's state says when: {p}"
            );
        } else {
            assert_eq!(p["model"], Value::Null, "{name}: no model ran: {p}");
        }
        let text = p["text"].as_str().unwrap();
        assert!(
            text.contains("expected") && text.contains("actual"),
            "{name}: {text}"
        );
        let lanes: Vec<&str> = p["lanes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|l| l.as_str())
            .collect();
        for actor in actors {
            assert!(
                lanes.contains(actor),
                "{name}: a lane for {actor}: {lanes:?}"
            );
        }
        assert_eq!(
            p["markedInBox"], true,
            "{name}: the diverging event is on screen in its timeline: {p}"
        );
        check_lanes(name, &seen.lanes);
    }
}

/// A click on a lane's header collapses an open lane to a sliver and a second click restores
/// it (and the other way round for a lane that starts collapsed); a timeline of more than six
/// lanes starts with its quiet ones collapsed, never the diverging event's.
fn check_lanes(name: &str, l: &Value) {
    let widths = |key: &str| -> Vec<f64> {
        l[key]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: {key}: {l}"))
            .iter()
            .map(|w| w.as_f64().unwrap())
            .collect()
    };
    let (opened, clicked, again) = (widths("opened"), widths("clicked"), widths("again"));
    let lanes = opened.len();
    assert!(lanes > 0, "{name}: {l}");
    const SLIVER: f64 = 20.0;
    for k in 0..lanes {
        let (o, c, a) = (opened[k], clicked[k], again[k]);
        if o > SLIVER {
            assert!(
                c <= SLIVER && (a - o).abs() < 1.0,
                "{name}: lane {k} collapses to a sliver and comes back: {l}"
            );
        } else {
            assert!(
                c > 3.0 * SLIVER && a <= SLIVER,
                "{name}: lane {k} starts collapsed and opens on a click: {l}"
            );
        }
    }
    let collapsed = opened.iter().filter(|w| **w <= SLIVER).count();
    if lanes > 6 {
        assert_eq!(
            collapsed,
            lanes - 6,
            "{name}: a crowded timeline opens with six lanes: {l}"
        );
        let d = l["divergedLane"].as_i64().expect("a diverging lane") as usize;
        assert!(
            opened[d] > SLIVER,
            "{name}: the diverging lane is open: {l}"
        );
    } else {
        assert_eq!(collapsed, 0, "{name}: every lane starts open: {l}");
    }
}
