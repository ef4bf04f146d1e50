//! Headless Chromium through chromedriver (WebDriver): the harness every `browser_*` test uses,
//! and the pages as a browser shows them.

use super::team::VENDORS;
use super::under_run::{daemon_dashboard, dashboard_of, save_bad_settled, BAD_ONE, BAD_TWO};
use super::*;

/// chromedriver in its own process group; the group (chromedriver and every Chromium process
/// it started) is killed when dropped, pass or fail.
pub(crate) struct Driver {
    _group: harness::KilledGroup,
    port: u16,
    _profile: tempfile::TempDir,
}

/// A chromedriver on a port of its choosing. It can exit before saying its port (a port it
/// picked and then could not bind while the machine is busy): it is started again, three
/// times at most, and a last failure says what it printed.
pub(crate) fn chromedriver() -> Driver {
    let mut said = String::new();
    for _ in 0..3 {
        let mut group = harness::KilledGroup::spawn(
            Command::new("chromedriver")
                .arg("--port=0")
                .stdout(Stdio::piped())
                .stderr(Stdio::null()),
        )
        .expect("chromedriver is missing: install Debian's `chromium` and `chromium-driver` (.ci/run does)");
        let mut out = BufReader::new(group.child().stdout.take().unwrap());
        let mut port = None;
        let mut line = String::new();
        while port.is_none() && out.read_line(&mut line).unwrap_or(0) > 0 {
            port = line
                .split("started successfully on port ")
                .nth(1)
                .and_then(|r| r.trim().trim_end_matches('.').parse().ok());
            said.push_str(&line);
            line.clear();
        }
        let Some(port) = port else {
            continue;
        };
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        return Driver {
            _group: group,
            port,
            _profile: tempfile::tempdir().unwrap(),
        };
    }
    panic!("chromedriver did not say its port in three starts; it said:\n{said}")
}

const CHROMIUM_FLAGS: [&str; 10] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    // Containers give /dev/shm 64 MiB or less; the renderer then fails to start.
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,1600",
];

pub(crate) async fn browser(driver: &Driver) -> fantoccini::Client {
    browser_with(driver, true).await
}

/// A Chromium session; `javascript: false` turns scripts off for every page.
pub(crate) async fn browser_with(driver: &Driver, javascript: bool) -> fantoccini::Client {
    let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|s| s.to_string()).collect();
    args.push(format!(
        "--user-data-dir={}",
        driver._profile.path().display()
    ));
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({
            "binary": "/usr/bin/chromium",
            "args": args,
            "prefs": { "profile.managed_default_content_settings.javascript": if javascript { 1 } else { 2 } },
        }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    fantoccini::ClientBuilder::new(connector)
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("starting headless Chromium through chromedriver")
}

pub(crate) async fn text_of(c: &fantoccini::Client, script: &str) -> String {
    let v = c.execute(script, vec![]).await.unwrap();
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// Marks the page in the browser, so that [`assert_not_reloaded`] can tell a live update from
/// a reload.
pub(crate) async fn mark_page(c: &fantoccini::Client) {
    c.execute("window.__marker = 'kept'; return 1", vec![])
        .await
        .unwrap();
}

/// The page [`mark_page`] marked is still the same document: it changed without a reload.
pub(crate) async fn assert_not_reloaded(c: &fantoccini::Client) {
    assert_eq!(
        text_of(c, "return String(window.__marker)").await,
        "kept",
        "the page was reloaded"
    );
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn browser_overview_renders_then_follows_a_settlement_without_reload() {
    let p = generated_polis();
    let s = serve(&p, "127.0.0.1:0");
    let driver = chromedriver();
    runtime().block_on(async {
        let c = browser(&driver).await;
        c.goto(&format!("{}p/0/", s.url)).await.unwrap();
        assert_eq!(
            text_of(
                &c,
                "return document.getElementById('count-settled').textContent"
            )
            .await,
            "5"
        );
        assert_eq!(
            text_of(
                &c,
                "return document.querySelectorAll('#citizens tbody tr').length"
            )
            .await,
            "3"
        );
        let png = c.screenshot().await.unwrap();
        let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard-overview.png");
        std::fs::write(&shot, &png).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");

        // The live script is connected; a marker shows the page is never reloaded.
        let start = Instant::now();
        loop {
            if text_of(&c, "return document.body.getAttribute('data-live') || ''").await == "on" {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the event stream never opened"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        mark_page(&c).await;
        let moved = Instant::now();
        p.mv(
            "contracts/open/next-job.md",
            "contracts/settled/next-job.md",
        );
        loop {
            if text_of(
                &c,
                "return document.getElementById('count-settled').textContent",
            )
            .await
                == "6"
            {
                break;
            }
            assert!(
                moved.elapsed() < Duration::from_secs(20),
                "the page never showed the settlement"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        eprintln!(
            "settlement on disk -> page updated in {:?}",
            moved.elapsed()
        );
        assert_not_reloaded(&c).await;
        c.close().await.unwrap();
    });
}

/// Waits (up to 20 s) until `script` returns `want` (a string compared as is), else fails
/// with `what` and the last value.
pub(crate) async fn wait_for_text(
    c: &fantoccini::Client,
    script: &str,
    want: &dyn Fn(&str) -> bool,
    what: &str,
) {
    let start = Instant::now();
    loop {
        let got = text_of(c, script).await;
        if want(&got) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{what}; the page shows: {got}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[test]
fn browser_findings_follow_the_chronicle_under_polisd_run() {
    // Beside the daemon the findings shown after a change are the ones of that change: a bad
    // chronicle line appears through the live update, and goes once a later line retracts it.
    let p = generated_polis();
    let daemon = p.start_daemon();
    let addr = daemon_dashboard(&p);
    let driver = chromedriver();
    runtime().block_on(async {
        let c = browser(&driver).await;
        c.goto(&format!("http://127.0.0.1:{}/p/0/", addr.port()))
            .await
            .unwrap();
        let findings = "return document.getElementById('findings').textContent";
        wait_for_text(
            &c,
            "return document.body.getAttribute('data-live') || ''",
            &|t| t == "on",
            "the event stream never opened",
        )
        .await;
        assert!(!text_of(&c, findings).await.contains("no-such-job"));
        mark_page(&c).await;
        p.append(
            "chronicle.md",
            &harness::chronicle_line(ALPHA, "claimed", "[[contracts/open/no-such-job]]", "mine"),
        );
        wait_for_text(
            &c,
            findings,
            &|t| t.contains("no-such-job"),
            "the bad line's finding never showed",
        )
        .await;
        let bad = p.read("chronicle.md").lines().count();
        p.append(
            "chronicle.md",
            &harness::chronicle_line(ALPHA, "retracted line", "-", &format!("line {bad}")),
        );
        wait_for_text(
            &c,
            findings,
            &|t| !t.contains("no-such-job"),
            "the retracted line's finding stayed",
        )
        .await;
        assert_not_reloaded(&c).await;
        c.close().await.unwrap();
    });
    drop(daemon);
}

#[test]
fn browser_a_settled_file_s_findings_show_under_polisd_run_until_it_is_fixed() {
    // A settled contract is read once, into the daemon's ledger: its SPEC §6 findings come
    // with that read, appear on the overview and in the human queue, and go live once the
    // file is fixed.
    let p = generated_polis();
    save_bad_settled(&p);
    let daemon = p.start_daemon();
    let addr = dashboard_of(&p, &daemon);
    let driver = chromedriver();
    runtime().block_on(async {
        let c = browser(&driver).await;
        c.goto(&format!("http://127.0.0.1:{}/p/0/", addr.port()))
            .await
            .unwrap();
        let findings = "return document.getElementById('findings').textContent";
        let queue = "return Array.from(document.querySelectorAll('#queue [data-key]')).map(li => li.dataset.key).join(' ')";
        let shown = text_of(&c, findings).await;
        assert!(
            shown.contains("P016") && shown.contains(BAD_ONE) && shown.contains("make it `bad-one`"),
            "{shown}"
        );
        assert!(shown.contains("P018") && shown.contains(BAD_TWO), "{shown}");
        let keys = text_of(&c, queue).await;
        assert!(keys.contains(&format!("finding/P016/{BAD_ONE}/")), "{keys}");
        assert!(keys.contains(&format!("finding/P018/{BAD_TWO}/")), "{keys}");
        wait_for_text(
            &c,
            "return document.body.getAttribute('data-live') || ''",
            &|t| t == "on",
            "the event stream never opened",
        )
        .await;
        mark_page(&c).await;
        p.save(BAD_ONE, &settled("bad-one", ALPHA, "rust", 4, 6));
        wait_for_text(
            &c,
            findings,
            &|t| !t.contains(BAD_ONE) && t.contains(BAD_TWO),
            "the fixed file's findings stayed",
        )
        .await;
        wait_for_text(
            &c,
            queue,
            &|t| !t.contains(BAD_ONE) && t.contains(BAD_TWO),
            "the fixed file's queue items stayed",
        )
        .await;
        assert_not_reloaded(&c).await;
        c.close().await.unwrap();
    });
    drop(daemon);
}

#[test]
fn browser_hostile_content_never_executes() {
    let p = generated_polis();
    p.save(
        "lessons/rust/2026-02-03-hostile.md",
        &format!(
            "---\nlesson_id: 2026-02-03-hostile\nfiled_by: {ALPHA}\ncapability_tags: [rust]\n\
             related_contracts: [hostile-one]\n---\n\n# {HOSTILE_TITLE}\n\n{HOSTILE_BODY}"
        ),
    );
    let s = serve(&p, "127.0.0.1:0");
    let driver = chromedriver();
    runtime().block_on(async {
        let c = browser(&driver).await;
        for path in ["p/0/", "p/0/contracts/hostile-one", "p/0/chronicle", &format!("p/0/citizens/{ALPHA}"), "p/0/lessons", "p/0/lessons/2026-02-03-hostile"] {
            c.goto(&format!("{}{path}", s.url)).await.unwrap();
            // Give onerror/onload handlers their chance.
            c.execute("return new Promise(r => setTimeout(() => r(1), 300))", vec![]).await.unwrap();
            assert_eq!(text_of(&c, "return String(window.__pwned)").await, "undefined", "{path}");
            assert_eq!(text_of(&c, "return String(document.scripts.length)").await, "1", "{path}");
            assert_eq!(
                text_of(&c, "return String(document.querySelectorAll('[onerror],[onload],[onclick],a[href^=\"javascript\"],img').length)").await,
                "0",
                "{path}"
            );
        }
        // The hostile title is shown as text.
        c.goto(&format!("{}p/0/contracts/hostile-one", s.url)).await.unwrap();
        let h1 = text_of(&c, "return document.querySelector('h1').textContent").await;
        assert!(h1.starts_with("<script>"), "{h1}");
        c.goto(&format!("{}p/0/lessons/2026-02-03-hostile", s.url)).await.unwrap();
        let h1 = text_of(&c, "return document.querySelector('h1').textContent").await;
        assert!(h1.starts_with("<script>"), "the lesson's title: {h1}");
        c.close().await.unwrap();
    });
}

#[test]
fn browser_pages_work_without_javascript() {
    let p = generated_polis();
    let s = serve(&p, "127.0.0.1:0");
    let driver = chromedriver();
    runtime().block_on(async {
        let c = browser_with(&driver, false).await;
        c.goto(&format!("{}p/0/chronicle", s.url)).await.unwrap();
        // The filter is a plain GET form: choosing and submitting works with scripts off.
        let select = c
            .find(fantoccini::Locator::Css("select[name=citizen]"))
            .await
            .unwrap();
        select.select_by_value(ALPHA).await.unwrap();
        c.find(fantoccini::Locator::Css("form.filter button"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let start = Instant::now();
        while !c.current_url().await.unwrap().as_str().contains("citizen=") {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the form did not submit"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let rows = c
            .find_all(fantoccini::Locator::Css("#chronicle tbody tr[data-line]"))
            .await
            .unwrap();
        assert_eq!(rows.len(), 1, "only {ALPHA}'s line");
        let body = c.find(fantoccini::Locator::Css("body")).await.unwrap();
        assert_eq!(body.attr("data-live").await.unwrap(), None, "no script ran");
        // Links between pages are plain links too.
        c.find(fantoccini::Locator::Css("nav a[href$=tags]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let h1 = c
            .find(fantoccini::Locator::Css("h1"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(h1, "Tags");
        c.close().await.unwrap();
    });
}

#[test]
fn browser_a_chart_of_twenty_citizens_has_twenty_colours_and_a_legend_that_fits() {
    let p = TestPolis::init(FOUNDER);
    let ids: Vec<String> = (0..20)
        .map(|i| format!("citizen-with-a-long-name-{i:02}"))
        .collect();
    for (i, id) in ids.iter().enumerate() {
        p.citizen(id, VENDORS[i % 4], &[("rust", 3)], "medium");
        for k in 0..2u32 {
            let cid = format!("work-{i:02}-{k}");
            p.save(
                &format!("contracts/settled/{cid}.md"),
                &settled(
                    &cid,
                    id,
                    "rust",
                    1 + ((i as u32 + k) % 5) as u8,
                    1 + k + i as u32 % 20,
                ),
            );
        }
    }
    let s = serve(&p, "127.0.0.1:0");
    let driver = chromedriver();
    runtime().block_on(async {
        let c = browser(&driver).await;
        c.set_window_size(1440, 900).await.unwrap();
        c.goto(&format!("{}p/0/tags", s.url)).await.unwrap();
        let found = text_of(
            &c,
            "var f = document.querySelector('figure.chart'); var l = f.querySelector('.legend');
             var fills = Array.from(l.querySelectorAll('rect')).map(function (r) { return r.getAttribute('fill'); });
             var box = l.getBoundingClientRect(), main = document.querySelector('main').getBoundingClientRect();
             var inside = Array.from(l.querySelectorAll('li')).every(function (li) {
               var b = li.getBoundingClientRect(); return b.left >= box.left - 1 && b.right <= box.right + 1; });
             return JSON.stringify({ entries: l.querySelectorAll('li').length, colours: new Set(fills).size,
               overflow: l.scrollWidth > l.clientWidth + 1, inside: inside, within: box.right <= main.right + 1 });",
        )
        .await;
        let v: serde_json::Value = serde_json::from_str(&found).unwrap();
        assert_eq!(v["entries"], 20, "{v}");
        assert_eq!(v["colours"], 20, "{v}");
        assert_eq!(v["overflow"], false, "{v}");
        assert_eq!(v["inside"], true, "{v}");
        assert_eq!(v["within"], true, "{v}");
        c.close().await.unwrap();
    });
}

/// At a phone's width (420 px) no page is wider than the screen: a lead reading on a phone
/// scrolls down, never sideways, and every link of the header and button of a form is in
/// view. Wide content (a table, a breakdown) scrolls inside its own box.
#[test]
fn browser_every_page_fits_a_phone_s_width() {
    let p = generated_polis();
    harness::ok(p.polisd(&["council", "start", "hostile-one", "--mode", "duo"]));
    let s = serve(&p, "127.0.0.1:0");
    let driver = chromedriver();
    runtime().block_on(async {
        let c = browser(&driver).await;
        c.set_window_size(420, 900).await.unwrap();
        let mut wide = Vec::new();
        for page in [
            "",
            "tags",
            "chronicle",
            "councils",
            "lessons",
            "search?q=rust",
            &format!("citizens/{ALPHA}"),
            "contracts/next-job",
            "contracts/hostile-one",
            "amendments/quorum-rule",
        ] {
            c.goto(&format!("{}p/0/{page}", s.url)).await.unwrap();
            // Open every fold, so that what it holds is measured too.
            let found = text_of(
                &c,
                "document.querySelectorAll('details').forEach(function (d) { d.open = true; });
                 var w = document.documentElement.clientWidth;
                 // Past the edge only inside a box that scrolls and itself fits is fine.
                 function scrolled(e) {
                   for (var a = e.parentElement; a && a !== document.body; a = a.parentElement) {
                     if (getComputedStyle(a).overflowX !== 'visible' && a.getBoundingClientRect().right <= w + 1) return true;
                   }
                   return false;
                 }
                 var out = Array.from(document.querySelectorAll('body *')).filter(function (e) {
                   var b = e.getBoundingClientRect();
                   return b.width > 0 && b.right > w + 1 && !scrolled(e);
                 }).slice(0, 3).map(function (e) {
                   return e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className ? '.' + e.className : '')
                     + ' ' + Math.round(e.getBoundingClientRect().right);
                 });
                 return JSON.stringify({ page: document.documentElement.scrollWidth, view: w, out: out });",
            )
            .await;
            let v: serde_json::Value = serde_json::from_str(&found).unwrap();
            if v["page"].as_i64() > v["view"].as_i64() || !v["out"].as_array().unwrap().is_empty() {
                wide.push(format!("/p/0/{page}: {v}"));
            }
        }
        assert!(wide.is_empty(), "wider than a phone:\n{}", wide.join("\n"));
        c.close().await.unwrap();
    });
}
