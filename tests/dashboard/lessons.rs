//! The lessons index and the lessons on a citizen's page: order, filters, paging, escaping,
//! links, and the empty polis.

use super::*;

/// Lessons on one page of the index.
const PER_PAGE: usize = 50;

/// A lesson file's text; `extra` adds frontmatter lines, `filed_at` is left out when empty.
fn lesson(id: &str, by: &str, filed_at: &str, tags: &[&str], extra: &str, text: &str) -> String {
    let at = if filed_at.is_empty() {
        String::new()
    } else {
        format!("filed_at: '{filed_at}'\n")
    };
    format!(
        "---\nlesson_id: {id}\nfiled_by: {by}\n{at}capability_tags: [{}]\n{extra}---\n\n{text}",
        tags.join(", ")
    )
}

/// Where `needle` first is in `body`, failing the test when it is not there.
#[track_caller]
fn at(body: &str, needle: &str) -> usize {
    body.find(needle)
        .unwrap_or_else(|| panic!("{needle:?} is not on the page: {body}"))
}

/// The `data-lesson` ids of the index's rows, in order.
fn rows(body: &str) -> Vec<&str> {
    body.split(r#"<tr data-lesson=""#)
        .skip(1)
        .filter_map(|row| row.split('"').next())
        .collect()
}

/// A polis with three lessons worth reading, filed out of path order, one with a hostile
/// title, one without `filed_at`, one the snapshot cannot parse, and enough older lessons on
/// a tag of their own to need a second page.
fn polis_with_lessons() -> TestPolis {
    let p = generated_polis();
    p.save(
        "lessons/rust/2026-02-01-oldest.md",
        &lesson(
            "2026-02-01-oldest",
            ALPHA,
            "2026-02-01 09:00:00",
            &["rust"],
            &format!(
                "related_contracts: [next-job]\nquality_impact: 4\n\
                 routing_effect:\n- {{citizen: {ALPHA}, tags: [rust], delta: 0.1}}\n"
            ),
            "# Read the store first\n\nBefore the cache.\n",
        ),
    );
    p.save(
        "lessons/docs/2026-02-05-newest.md",
        &lesson(
            "2026-02-05-newest",
            BRAVO,
            "2026-02-05 09:00:00",
            &["docs"],
            "related_contracts: [gone-contract]\nquality_impact: 2\nstatus: proposed\n",
            "# Write the docs last\n\nAfter the code.\n",
        ),
    );
    p.save(
        "lessons/rust/2026-02-03-middle.md",
        &lesson(
            "2026-02-03-middle",
            ALPHA,
            "2026-02-03 09:00:00",
            &["rust", "docs"],
            "",
            "# <script>window.__pwned=20</script> middle\n\nText.\n",
        ),
    );
    p.save(
        "lessons/rust/no-date.md",
        &lesson("no-date", ALPHA, "", &["rust"], "", "# Undated\n"),
    );
    p.save(
        "lessons/rust/2026-02-06-broken.md",
        "---\nlesson_id: [unclosed\n---\n\n# Broken\n",
    );
    for k in 0..PER_PAGE + 5 {
        p.save(
            &format!("lessons/paging/old-{k:02}.md"),
            &lesson(
                &format!("old-{k:02}"),
                FOUNDER,
                &format!("2025-01-01 10:{k:02}:00"),
                &["paging"],
                "",
                &format!("# Old lesson {k}\n"),
            ),
        );
    }
    p
}

/// The index lists every lesson newest first with its title (the lesson page's rule, agent
/// text escaped), tags that filter, who filed it, its contracts and whether it weighs on
/// routing; it filters by tag and by citizen, pages, and each row leads to the lesson's page.
/// A citizen's page lists the lessons it filed and links to them on the index.
#[test]
fn the_lessons_index_lists_filters_and_pages_newest_first() {
    let p = polis_with_lessons();
    let s = serve(&p, "127.0.0.1:0");
    let index = get(&s, "/p/0/lessons");
    assert_eq!(index.status, 200, "{}", index.body);
    let b = &index.body;
    let nav = &b[at(b, r#"<nav aria-label="pages">"#)..];
    let nav = &nav[..at(nav, "</nav>")];
    assert!(
        nav.contains(r#"href="/p/0/lessons""#) && nav.contains(">Lessons</a>"),
        "the navigation links the index: {nav}"
    );
    let ids = rows(b);
    assert_eq!(ids.len(), PER_PAGE, "a page is bounded: {ids:?}");
    assert_eq!(
        ids[..4],
        [
            "2026-02-05-newest",
            "2026-02-03-middle",
            "2026-02-01-oldest",
            "old-54"
        ],
        "newest first: {ids:?}"
    );
    assert!(
        !ids.contains(&"2026-02-06-broken"),
        "broken frontmatter is not listed"
    );
    assert!(at(b, "Write the docs last") < at(b, "middle</a>"));
    assert!(at(b, "middle</a>") < at(b, "Read the store first"));
    assert!(
        b.contains(
            r#"<a class="lesson" href="/p/0/lessons/2026-02-01-oldest">Read the store first</a>"#
        ),
        "the title links the lesson's page: {b}"
    );
    assert!(
        b.contains("&lt;script&gt;window.__pwned=20&lt;/script&gt; middle"),
        "the hostile title as text: {b}"
    );
    assert_eq!(
        b.matches("<script").count(),
        1,
        "only the page's own script: {b}"
    );
    assert!(
        b.contains(r#"<a class="tag" href="/p/0/lessons?tag=docs">docs</a>"#),
        "{b}"
    );
    assert!(
        b.contains(&format!(r#"<a href="/p/0/citizens/{ALPHA}">{ALPHA}</a>"#)),
        "{b}"
    );
    assert!(
        b.contains(r#"<a href="/p/0/contracts/next-job">next-job</a>"#),
        "{b}"
    );
    assert!(
        b.contains("gone-contract") && !b.contains("contracts/gone-contract"),
        "a contract not in the polis is named, not linked: {b}"
    );
    let row = |id: &str| {
        let start = at(b, &format!(r#"<tr data-lesson="{id}""#));
        &b[start..start + b[start..].find("</tr>").unwrap()]
    };
    assert!(
        row("2026-02-01-oldest").contains("<strong>weighs</strong>"),
        "{b}"
    );
    assert!(row("2026-02-05-newest").contains("no (proposed)"), "{b}");
    assert!(
        row("2026-02-01-oldest").contains("<td>4</td>"),
        "the quality impact: {b}"
    );

    let older = get(&s, "/p/0/lessons?page=1");
    assert_eq!(older.status, 200);
    let ids = rows(&older.body);
    assert_eq!(ids.len(), 4 + PER_PAGE + 5 - PER_PAGE, "{ids:?}");
    assert_eq!(
        ids.last(),
        Some(&"no-date"),
        "no filed_at sorts last: {ids:?}"
    );
    assert!(
        older.body.contains(r#"rel="prev" href="/p/0/lessons""#),
        "{}",
        older.body
    );
    assert!(
        b.contains(r#"rel="next" href="/p/0/lessons?page=1""#),
        "{b}"
    );
    for page in ["99999999999999999999999", "-1", "%00", "1e9"] {
        let r = get(&s, &format!("/p/0/lessons?page={page}"));
        assert_eq!(r.status, 200, "{page}: {}", r.body);
        assert!(!rows(&r.body).is_empty(), "{page}: a page of rows");
    }

    let docs = get(&s, "/p/0/lessons?tag=docs");
    assert_eq!(rows(&docs.body), ["2026-02-05-newest", "2026-02-03-middle"]);
    let paging = get(&s, "/p/0/lessons?tag=paging&page=1");
    assert_eq!(
        rows(&paging.body),
        ["old-04", "old-03", "old-02", "old-01", "old-00"]
    );
    assert!(
        paging.body.contains(r#"href="/p/0/lessons?tag=paging""#),
        "paging keeps the filter: {}",
        paging.body
    );
    let alpha = get(&s, &format!("/p/0/lessons?citizen={ALPHA}"));
    assert_eq!(
        rows(&alpha.body),
        ["2026-02-03-middle", "2026-02-01-oldest", "no-date"]
    );
    let both = get(&s, &format!("/p/0/lessons?citizen={ALPHA}&tag=docs"));
    assert_eq!(rows(&both.body), ["2026-02-03-middle"]);
    let nobody = get(&s, "/p/0/lessons?citizen=%3Cscript%3Enobody");
    assert_eq!(nobody.status, 200);
    assert!(rows(&nobody.body).is_empty());
    assert!(nobody.body.contains("No lesson matches"), "{}", nobody.body);
    assert!(
        nobody.body.contains("&lt;script&gt;nobody"),
        "{}",
        nobody.body
    );
    assert_eq!(nobody.body.matches("<script").count(), 1, "{}", nobody.body);

    // The lesson's own page still answers beside the index.
    let page = get(&s, "/p/0/lessons/2026-02-01-oldest");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("<h1>Read the store first</h1>"),
        "{}",
        page.body
    );

    let citizen = get(&s, &format!("/p/0/citizens/{ALPHA}"));
    assert_eq!(citizen.status, 200);
    let c = &citizen.body;
    assert!(c.contains("Lessons filed (3)"), "{c}");
    assert!(
        at(c, "middle</a>") < at(c, "Read the store first</a>"),
        "newest first: {c}"
    );
    assert!(
        c.contains(&format!(
            r#"href="/p/0/lessons?citizen={ALPHA}">All 3 lessons"#
        )),
        "{c}"
    );
    assert!(
        at(c, "Lessons filed") < at(c, "Inbox ("),
        "before the inbox: {c}"
    );
    let bravo = get(&s, &format!("/p/0/citizens/{BRAVO}"));
    assert!(
        bravo.body.contains("Write the docs last</a>"),
        "{}",
        bravo.body
    );
    assert!(
        !bravo.body.contains("Read the store first"),
        "{}",
        bravo.body
    );
}

/// A polis without lessons says so on the index and tells how one is filed.
#[test]
fn an_empty_lessons_index_says_how_a_lesson_is_filed() {
    let p = TestPolis::init(FOUNDER);
    let s = serve(&p, "127.0.0.1:0");
    let r = get(&s, "/p/0/lessons");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("No lessons yet"), "{}", r.body);
    assert!(r.body.contains("polisd lesson file"), "{}", r.body);
    assert!(r.body.contains("--lesson"), "{}", r.body);
    let founder = get(&s, &format!("/p/0/citizens/{FOUNDER}"));
    assert!(
        founder.body.contains("Lessons filed (0)"),
        "{}",
        founder.body
    );
}
