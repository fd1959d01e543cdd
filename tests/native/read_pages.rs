//! Questions across pages, natively: the store of read pages (caps, least recently used
//! eviction, protected pages, an oversized page, incognito tabs, a store that fails), the
//! retrieval merged across pages (proptest: every passage found belongs to a page searched,
//! and the order the pages are given in changes no rank), the first excerpt shared between
//! the pages, and a conversation's added pages: their numbers, never reused, and their
//! persistence (save, load, the version 4 fixture).

use std::collections::BTreeMap;

use knowledgelens::page::{self, across};
use knowledgelens::ports::StoreError;
use knowledgelens::state::config::RunConfig;
use knowledgelens::state::read_pages::{
    self, keep, plan_keep, read_page_key, AddError, KeepError, ReadPages, MAX_READ_PAGES,
    MAX_READ_PAGES_BYTES, READ_PAGES_KEY,
};
use knowledgelens::state::{self, PageInfo, SessionState};
use knowledgelens::testing::MemoryStore;
use proptest::prelude::*;

fn page(url: &str, title: &str, text: &str) -> PageInfo {
    PageInfo {
        title: title.into(),
        url: url.into(),
        text: text.into(),
        reader: "readability".into(),
        lang: "en".into(),
        pages: 0,
    }
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    futures::executor::block_on(f)
}

fn index_of(store: &MemoryStore) -> ReadPages {
    block_on(read_pages::load_index(store)).expect("index")
}

#[test]
fn the_least_recently_used_page_goes_first_and_never_a_protected_one() {
    let store = MemoryStore::new();
    let mut ids = Vec::new();
    for n in 0..MAX_READ_PAGES {
        let p = page(
            &format!("http://127.0.0.1:8000/{n}"),
            &format!("Page {n}"),
            "Text.",
        );
        ids.push(
            block_on(keep(&store, &p, Some(n as i64), n as u64, &[], false))
                .expect("kept")
                .expect("an id"),
        );
    }
    assert_eq!(index_of(&store).pages.len(), MAX_READ_PAGES);
    // A question of a conversation that uses page 0 reads a new page: page 0 is marked used
    // (and protected), so page 1, now the least recently used, goes.
    let new = page("http://localhost:9000/new", "New", "Fresh text.");
    block_on(keep(&store, &new, None, 100, &[ids[0]], false)).expect("kept");
    let left: Vec<u64> = index_of(&store).pages.iter().map(|p| p.id).collect();
    assert!(
        left.contains(&ids[0]) && !left.contains(&ids[1]),
        "{left:?}"
    );
    assert_eq!(left.len(), MAX_READ_PAGES);
    assert!(!store.data.borrow().contains_key(&read_page_key(ids[1])));
    // The next one, for a conversation using page 2: page 3 goes, then page 4; page 0
    // (used at 100) outlives them all.
    let next = page("http://localhost:9000/next", "Next", "More text.");
    block_on(keep(&store, &next, None, 102, &[ids[2]], false)).expect("kept");
    let left: Vec<u64> = index_of(&store).pages.iter().map(|p| p.id).collect();
    assert!(
        left.contains(&ids[2]) && !left.contains(&ids[3]),
        "{left:?}"
    );
    let last = page("http://localhost:9000/last", "Last", "Last text.");
    block_on(keep(&store, &last, None, 103, &[], false)).expect("kept");
    let left: Vec<u64> = index_of(&store).pages.iter().map(|p| p.id).collect();
    assert!(
        !left.contains(&ids[4]) && left.contains(&ids[0]) && left.contains(&ids[5]),
        "{left:?}"
    );
    // Every listed page has its record, and no other record is left.
    let data = store.data.borrow();
    let records: Vec<&String> = data
        .keys()
        .filter(|k| k.starts_with("read:page:"))
        .collect();
    assert_eq!(records.len(), MAX_READ_PAGES);
    // The list: most recently read first, named by title and site.
    drop(data);
    let listed = block_on(read_pages::list(&store)).expect("list");
    assert_eq!(
        (listed[0].title.as_str(), listed[0].site.as_str()),
        ("Last", "localhost")
    );
}

#[test]
fn an_oversized_page_is_not_kept_and_removes_nothing() {
    let store = MemoryStore::new();
    for n in 0..3 {
        let p = page(&format!("https://example.org/{n}"), "Small", "Text.");
        block_on(keep(&store, &p, None, n, &[], false)).expect("kept");
    }
    let before = store.data.borrow().clone();
    let huge = page(
        "https://example.org/huge",
        "Huge",
        &"z".repeat(MAX_READ_PAGES_BYTES + 1),
    );
    let result = block_on(keep(&store, &huge, None, 9, &[], false));
    assert!(matches!(result, Err(KeepError::TooLarge(_))), "{result:?}");
    assert_eq!(*store.data.borrow(), before, "nothing was removed for it");
    // A page that fits only if the protected pages went is refused the same way.
    let index = index_of(&store);
    let protected: Vec<u64> = index.pages.iter().map(|p| p.id).collect();
    let big = page(
        "https://example.org/big",
        "Big",
        &"y".repeat(MAX_READ_PAGES_BYTES - 200),
    );
    assert_eq!(
        plan_keep(&index, &big, None, 10, &protected),
        Err(KeepError::Full)
    );
    // Without protection the same page makes room by removing the others, oldest first.
    let plan = plan_keep(&index, &big, None, 10, &[]).expect("fits");
    assert_eq!(plan.removed, protected);
}

#[test]
fn an_incognito_page_or_one_without_text_is_never_kept() {
    let store = MemoryStore::new();
    let p = page("https://example.org/private", "Private", "Secret text.");
    assert_eq!(block_on(keep(&store, &p, Some(3), 1, &[], true)), Ok(None));
    let empty = page("https://example.org/empty", "Empty", "  ");
    assert_eq!(
        block_on(keep(&store, &empty, Some(3), 1, &[], false)),
        Ok(None)
    );
    assert!(store.data.borrow().is_empty());
    assert_eq!(store.sets.get(), 0);
}

#[test]
fn the_same_page_read_again_replaces_its_copy_and_keeps_its_id() {
    let store = MemoryStore::new();
    let first = page("https://example.org/a?x=1", "A", "Old text.");
    let id = block_on(keep(&store, &first, Some(1), 1, &[], false))
        .expect("kept")
        .expect("id");
    let again = page("https://example.org/a?x=1#part", "A again", "New text.");
    let same = block_on(keep(&store, &again, Some(2), 5, &[], false))
        .expect("kept")
        .expect("id");
    assert_eq!(id, same);
    let index = index_of(&store);
    assert_eq!(index.pages.len(), 1);
    assert_eq!(
        (
            index.pages[0].title.as_str(),
            index.pages[0].tab,
            index.pages[0].read_at
        ),
        ("A again", Some(2), 5)
    );
    let (_, stored) = block_on(read_pages::load_pages(&store, &[id, 99]))
        .expect("load")
        .remove(0)
        .expect("kept");
    assert_eq!(stored.text, "New text.");
    // Another query is another page (a forum's ?t=1 and ?t=2): kept beside it, so a
    // conversation that added ?x=1 never gets ?x=2's text in its place.
    let other = page("https://example.org/a?x=2", "B", "Other text.");
    let other_id = block_on(keep(&store, &other, Some(3), 6, &[id], false))
        .expect("kept")
        .expect("id");
    assert_ne!(other_id, id);
    let (_, stored) = block_on(read_pages::load_pages(&store, &[id]))
        .expect("load")
        .remove(0)
        .expect("kept");
    assert_eq!(stored.text, "New text.");
}

#[test]
fn a_failed_write_changes_nothing_and_a_failed_cleanup_is_finished_by_the_next_keep() {
    let store = MemoryStore::new();
    for n in 0..MAX_READ_PAGES {
        let p = page(&format!("https://example.org/{n}"), "P", "Text.");
        block_on(keep(&store, &p, None, n as u64, &[], false)).expect("kept");
    }
    let before = store.data.borrow().clone();
    store
        .fail_sets
        .borrow_mut()
        .push_back(StoreError::QuotaExceeded("full".into()));
    let p = page("https://example.org/new", "New", "Text.");
    let result = block_on(keep(&store, &p, None, 50, &[], false));
    assert!(matches!(result, Err(KeepError::Store(_))), "{result:?}");
    assert_eq!(*store.data.borrow(), before);
    // A worker stopped between the write and the removal leaves an evicted page's record:
    // nothing lists it, and the next keep removes it.
    store
        .data
        .borrow_mut()
        .insert(read_page_key(999), "{\"text\":\"stray\"}".into());
    block_on(keep(&store, &p, None, 51, &[], false)).expect("kept");
    assert!(!store.data.borrow().contains_key(&read_page_key(999)));
    let records = store
        .data
        .borrow()
        .keys()
        .filter(|k| k.starts_with("read:page:"))
        .count();
    assert_eq!(records, MAX_READ_PAGES);
}

#[test]
fn an_unreadable_index_lists_nothing_and_a_newer_one_is_left_alone() {
    let store = MemoryStore::new();
    store
        .data
        .borrow_mut()
        .insert(READ_PAGES_KEY.into(), "{not json".into());
    assert_eq!(block_on(read_pages::list(&store)), Ok(Vec::new()));
    let p = page("https://example.org/a", "A", "Text.");
    assert!(block_on(keep(&store, &p, None, 1, &[], false))
        .expect("kept")
        .is_some());
    let newer = r#"{"version":99,"next_id":5,"pages":[]}"#;
    store
        .data
        .borrow_mut()
        .insert(READ_PAGES_KEY.into(), newer.into());
    assert_eq!(block_on(keep(&store, &p, None, 2, &[], false)), Ok(None));
    assert_eq!(store.data.borrow()[READ_PAGES_KEY], newer);
}

/// A step of the store's life: keep page `n` (of 30 URLs, `bytes` long), or use page `n`.
#[derive(Debug, Clone)]
enum Op {
    Keep(usize, usize),
    Use(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0usize..30, 1usize..400_000).prop_map(|(n, b)| Op::Keep(n, b)),
        1 => (0usize..30).prop_map(Op::Use),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever pages are kept and used: the store stays within its caps; a page removed
    /// to make room was, of the pages not protected, the least recently used; a protected
    /// page is never removed.
    #[test]
    fn eviction_is_least_recently_used_within_the_caps(
        ops in prop::collection::vec(op(), 1..40),
        protect in prop::collection::vec(0usize..30, 0..3),
    ) {
        let mut index = ReadPages::default();
        let mut ids: BTreeMap<usize, u64> = BTreeMap::new();
        for (t, op) in ops.iter().enumerate() {
            let now = t as u64 + 1;
            match *op {
                Op::Use(n) => {
                    if let Some(&id) = ids.get(&n) {
                        for p in index.pages.iter_mut().filter(|p| p.id == id) {
                            p.used_at = now;
                        }
                    }
                }
                Op::Keep(n, bytes) => {
                    let url = format!("https://example.org/{n}");
                    let p = page(&url, "P", &"x".repeat(bytes));
                    let protected: Vec<u64> = protect
                        .iter()
                        .filter_map(|n| ids.get(n).copied())
                        .collect();
                    let Ok(plan) = plan_keep(&index, &p, None, now, &protected) else {
                        continue;
                    };
                    prop_assert!(plan.index.pages.len() <= MAX_READ_PAGES);
                    prop_assert!(plan.index.bytes() <= MAX_READ_PAGES_BYTES as u64);
                    for gone in plan.removed.iter().filter(|g| **g != plan.id) {
                        prop_assert!(!protected.contains(gone));
                        let gone_at = index.get(*gone).expect("was kept").used_at;
                        // Every page still kept (but the new one) was used no earlier.
                        for kept in plan.index.pages.iter().filter(|k| k.id != plan.id) {
                            if !protected.contains(&kept.id) {
                                prop_assert!(kept.used_at >= gone_at);
                            }
                        }
                    }
                    ids.retain(|_, id| plan.index.get(*id).is_some());
                    ids.insert(n, plan.id);
                    index = plan.index;
                }
            }
        }
    }
}

/// Pages with some shared and some own words, for retrieval across pages.
fn pages_strategy() -> impl Strategy<Value = Vec<String>> {
    let word = prop::sample::select(vec![
        "harbour", "ferry", "leaves", "tide", "moon", "basin", "quay", "the", "of", "autumn",
    ]);
    let paragraph = prop::collection::vec(word, 3..12).prop_map(|w| w.join(" ") + ".");
    let text = prop::collection::vec(paragraph, 1..8).prop_map(|ps| ps.join("\n\n"));
    prop::collection::vec(text, 1..5)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every passage a search across pages returns belongs to a page searched (within its
    /// numbered passages) and holds a word of the query; the same pages in another order
    /// give the same passages in the same ranks.
    #[test]
    fn merged_search_finds_only_included_passages_whatever_the_page_order(
        texts in pages_strategy(),
        query in prop::sample::select(vec!["ferry leaves", "the moon", "autumn tide quay", "basin"]),
        k in 1usize..10,
        rotate in 0usize..5,
    ) {
        let sources: Vec<across::Source> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| across::Source { key: i as u64 * 7 + 1, base: i * 100, text: t, limit: usize::MAX })
            .collect();
        let found = across::search(&sources, query, k);
        prop_assert!(found.len() <= k);
        for f in &found {
            let source = &sources[f.source];
            let index = page::index_of(source.text);
            prop_assert!(f.index < index.passages().len());
            let passage = index.passages()[f.index].text(source.text).to_lowercase();
            prop_assert!(query.split(' ').any(|w| passage.split(|c: char| !c.is_alphanumeric()).any(|p| p == w)));
            prop_assert_eq!(across::locate(&sources, f.number(&sources)), Some((f.source, f.index)));
        }
        // Scores never rise down the list.
        for pair in found.windows(2) {
            prop_assert!(pair[0].score >= pair[1].score);
        }
        let mut turned = sources.clone();
        let r = rotate % turned.len();
        turned.rotate_left(r);
        let again = across::search(&turned, query, k);
        let named = |list: &[across::Found], from: &[across::Source]| -> Vec<(u64, usize)> {
            list.iter().map(|f| (from[f.source].key, f.index)).collect()
        };
        prop_assert_eq!(named(&found, &sources), named(&again, &turned));
    }

    /// The first excerpt's budget is split between the pages: what they get adds up to
    /// the budget at most, a page that fits its share is shown whole, and a short page's
    /// unused share goes to the others.
    #[test]
    fn the_budget_is_shared_and_a_short_pages_rest_goes_to_the_others(
        sizes in prop::collection::vec(0usize..20_000, 1..6),
        budget in 0usize..30_000,
    ) {
        let shares = across::split_budget(&sizes, budget);
        prop_assert!(shares.iter().sum::<usize>() <= budget);
        let fair = budget / sizes.len();
        for (size, share) in sizes.iter().zip(&shares) {
            prop_assert!(share <= size);
            if *size <= fair {
                prop_assert_eq!(share, size);
            } else {
                prop_assert!(*share >= fair);
            }
        }
        // Nothing is left over while a page still wants more (up to the rounding of one
        // character per page).
        let wanted: usize = sizes.iter().sum();
        if wanted > budget {
            prop_assert!(budget - shares.iter().sum::<usize>() < sizes.len());
        }
    }
}

#[test]
fn each_page_of_a_question_gets_its_share_of_the_first_excerpt() {
    let long: String = (0..80)
        .map(|i| {
            format!("## Part {i}\nThe harbour basin {i} keeps its boats by the quay stones.\n\n")
        })
        .collect();
    let short = "# Leaves\nIn autumn the leaves turn red.";
    let sources = [
        across::Source {
            key: 0,
            base: 0,
            text: &long,
            limit: usize::MAX,
        },
        across::Source {
            key: 3,
            base: 100,
            text: short,
            limit: usize::MAX,
        },
    ];
    let excerpts = across::excerpts(&sources, "when do leaves turn red", 3_000);
    assert_eq!(excerpts[1].lead, [0], "the short page is shown whole");
    let long_index = page::index_of(&long);
    let shown: usize = excerpts[0]
        .all()
        .iter()
        .map(|i| long_index.passages()[*i].chars)
        .sum();
    // The long page gets the rest: more than half the budget's cut share.
    assert!(shown > 3_000 / 2 * 65 / 100, "{shown}");
    // Its labels name the page and its numbers follow its base.
    let mut out = String::new();
    page::render_from(&mut out, &page::index_of(short), short, &[0], 100, "Leaves");
    assert!(out.starts_with("[p101] Leaves › Leaves\n"), "{out}");
    // A PDF's passage: "<title>, page N".
    let pdf = format!(
        "\u{c}\n{}\n\n\u{c}\n{}",
        "The first page of the report. ".repeat(50),
        "The second page of the report. ".repeat(50)
    );
    let index = page::index_of(&pdf);
    let second = index
        .passages()
        .iter()
        .position(|p| p.page == Some(2))
        .expect("a passage of page 2");
    let mut labels = String::new();
    page::render_from(&mut labels, &index, &pdf, &[second], 300, "Report");
    let label = format!("[p{}] Report, page 2\n", 301 + second);
    assert!(labels.starts_with(&label), "{labels}");
}

fn kept(id: u64, url: &str, title: &str) -> read_pages::ReadPage {
    read_pages::ReadPage {
        id,
        title: title.into(),
        url: url.into(),
        site: read_pages::site_of(url),
        read_at: 1,
        used_at: 1,
        tab: Some(id as i64 + 10),
        bytes: 10,
    }
}

#[test]
fn added_pages_are_numbered_in_blocks_never_reused_and_survive_a_save() {
    let own: String = (0..37)
        .map(|i| format!("## Part {i}\nThe harbour's part {i}.\n\n"))
        .collect();
    let mut s = SessionState::new("tab:1", 0);
    s.begin_run(
        "Where?",
        Some(page("https://a.example/own", "Harbour", &own)),
        RunConfig::default(),
        0,
    );
    let own_passages = page::index_of(&own).passages().len();
    assert!((2..100).contains(&own_passages), "{own_passages}");
    s.add_page(&kept(4, "http://127.0.0.1:8001/leaves", "Leaves"), 120)
        .expect("added");
    s.add_page(&kept(5, "http://localhost:8002/tides", "Tides"), 3)
        .expect("added");
    let bases: Vec<u32> = s.added.iter().map(|p| p.base).collect();
    assert_eq!(bases, [100, 300]);
    assert_eq!(s.own_limit(), 100);
    // The own page cannot be added; a page used already changes nothing.
    assert_eq!(
        s.add_page(&kept(6, "https://a.example/own#x", "Harbour"), 5),
        Err(AddError::OwnPage)
    );
    s.add_page(&kept(4, "http://127.0.0.1:8001/leaves", "Leaves"), 120)
        .expect("again");
    assert_eq!(s.added.len(), 2);
    // Removed: its numbers stay its; a page added next is numbered past them.
    assert!(s.remove_page(4));
    assert!(!s.remove_page(4));
    assert_eq!(s.protected_pages(), [5]);
    s.add_page(&kept(7, "http://127.0.0.1:8003/moss", "Moss"), 10)
        .expect("added");
    assert_eq!(s.added.last().map(|p| p.base), Some(400));
    // Re-added: its old numbers back.
    s.add_page(&kept(4, "http://127.0.0.1:8001/leaves", "Leaves"), 120)
        .expect("re-added");
    assert_eq!(s.added[0].base, 100);
    assert!(!s.added[0].removed);
    for n in 8..10 {
        s.add_page(&kept(n, &format!("https://b.example/{n}"), "More"), 1)
            .ok();
    }
    assert_eq!(
        s.add_page(&kept(20, "https://b.example/20", "One too many"), 1),
        Err(AddError::TooMany)
    );
    // Saved and loaded (a restarted worker): the same conversation, its added pages with it.
    let store = MemoryStore::new();
    block_on(state::save(&store, &mut s)).expect("saved");
    let loaded = block_on(state::load(&store, "tab:1"))
        .expect("loads")
        .expect("a session");
    assert_eq!(loaded.added, s.added);
    assert!(store.data.borrow()["session:tab:1"].contains("\"added\":[{\"id\":4,"));
    // A new conversation (another page) starts without them.
    let fresh = state::fresh_conversation(&loaded, 9);
    assert!(fresh.added.is_empty());
}

/// A session saved by the previous schema (version 4, tests/fixtures/sessions/v4.json)
/// loads with no added page and saves as the current version, reading back the same.
#[test]
fn a_session_saved_by_version_4_loads_and_saves_as_the_current_version() {
    let data = crate::persistence::fixture_data(include_str!("../fixtures/sessions/v4.json"));
    assert!(data["session:tab:7"].starts_with(r#"{"version":4,"#));
    let store = MemoryStore::with_data(data);
    let mut loaded = block_on(state::load(&store, "tab:7"))
        .expect("loads")
        .expect("a session");
    assert_eq!(loaded.version, 5);
    assert!(loaded.added.is_empty());
    assert_eq!(loaded.input.kept_answers, ["Answer briefly."]);
    assert_eq!(loaded.turns.len(), 1);
    block_on(state::save(&store, &mut loaded)).expect("saves");
    let head = store.data.borrow()["session:tab:7"].clone();
    assert!(head.starts_with(r#"{"version":5,"#), "{head}");
    assert!(!head.contains("\"added\""));
    let again = block_on(state::load(&store, "tab:7"))
        .expect("loads")
        .expect("a session");
    assert_eq!(again, loaded);
}

mod through_the_service {
    use std::collections::BTreeMap;

    use crate::service::{call, harness_on, Harness};
    use knowledgelens::state::read_pages;
    use knowledgelens::testing::{Reply, INCOGNITO};
    use knowledgelens::types::PageInfo;
    use serde_json::json;

    fn harness(replies: Vec<Reply>) -> Harness {
        let page = |title: &str, url: &str, text: &str, lang: &str| PageInfo {
            title: title.into(),
            url: url.into(),
            text: text.into(),
            reader: "readability".into(),
            lang: lang.into(),
            pages: 0,
        };
        let pages = BTreeMap::from([
            (
                1,
                page(
                    "Leaves",
                    "http://127.0.0.1:8001/leaves",
                    "# Leaves\nIn autumn the maple leaves turn crimson.",
                    "en",
                ),
            ),
            (
                2,
                page(
                    "Tides",
                    "http://localhost:8002/tides",
                    "# Tides\nThe moon pulls the oceans twice a day.",
                    "en",
                ),
            ),
            (
                3,
                page(
                    "Secret",
                    "http://127.0.0.1:8001/secret",
                    "Private words.",
                    INCOGNITO,
                ),
            ),
            (
                4,
                page(
                    "Settings",
                    "chrome://settings/",
                    "",
                    knowledgelens::testing::UNREADABLE,
                ),
            ),
        ]);
        harness_on(replies, pages)
    }

    #[test]
    fn a_question_on_one_page_uses_a_page_read_in_another_tab() {
        let h = harness(vec![
            Reply::text("Crimson."),
            Reply::text("Secret."),
            Reply::text("The moon pulls the tides [p1] while maple leaves turn crimson [p101]."),
        ]);
        let ask = |session: &str, tab: i64, question: &str| {
            call(
                &h,
                json!({"id": 1, "type": "ask", "session": session, "tab_id": tab, "question": question}),
            )
        };
        assert_eq!(ask("tab:1", 1, "What colour?")["ok"], true);
        assert_eq!(ask("tab:3", 3, "What?")["ok"], true);
        // The list on tab 2: the page read in tab 1; never the incognito tab's.
        let list = call(
            &h,
            json!({"id": 2, "type": "read_pages", "session": "tab:2"}),
        );
        let pages = list["data"]["pages"].as_array().expect("pages").clone();
        assert_eq!(pages.len(), 1, "{list}");
        assert_eq!(
            (pages[0]["title"].as_str(), pages[0]["site"].as_str()),
            (Some("Leaves"), Some("127.0.0.1"))
        );
        assert_eq!(pages[0]["added"], false);
        let id = pages[0]["id"].as_u64().expect("id");
        // (The incognito tab's own session holds its text, as every tab's does, and goes
        // with the tab; the read pages never hold it.)
        assert!(!h
            .sessions
            .data
            .borrow()
            .iter()
            .any(|(k, v)| k.starts_with("read:") && v.contains("Private words")));
        // Added before tab 2's page was read: "Also using" names it.
        let added = call(
            &h,
            json!({"id": 3, "type": "add_pages", "session": "tab:2", "pages": [id]}),
        );
        assert_eq!(added["ok"], true, "{added}");
        assert_eq!(added["data"]["added"][0]["title"], "Leaves");
        // Tab 1 closes: its session goes, the kept page stays.
        futures::executor::block_on(h.service.tab_closed(1)).expect("closed");
        let reply = ask("tab:2", 2, "What do the moon and the leaves do?");
        assert_eq!(reply["ok"], true, "{reply}");
        let requests = h.llm.requests.borrow();
        let last = requests.last().expect("a request");
        let text: String = last
            .messages
            .iter()
            .map(|m| m.content.clone())
            .collect::<Vec<_>>()
            .join("\n");
        assert!(text.contains("The moon pulls the oceans"), "{text}");
        assert!(text.contains("maple leaves turn crimson"), "{text}");
        assert!(text.contains("[p101]"), "{text}");
        drop(requests);
        let view = call(&h, json!({"id": 4, "type": "snapshot", "session": "tab:2"}));
        let sources = view["data"]["sources"].as_array().expect("sources").clone();
        let named: Vec<(&str, &str)> = sources
            .iter()
            .map(|s| {
                (
                    s["id"].as_str().unwrap_or(""),
                    s["title"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(named, [("p1", "Tides"), ("p101", "Leaves")], "{view}");
        assert_eq!(sources[1]["tab"], 1);
        assert_eq!(sources[1]["added"], true);
        // "Show on page" for the added page's passage: in the tab it was read in, while that
        // tab shows it.
        let locate = || {
            call(
                &h,
                json!({"id": 6, "type": "locate_passage", "session": "tab:2",
                       "text": "In autumn the maple leaves turn crimson.", "page": id}),
            )
        };
        let shown = locate();
        assert_eq!(
            (
                shown["data"]["found"].as_bool(),
                shown["data"]["tab"].as_i64()
            ),
            (Some(true), Some(1)),
            "{shown}"
        );
        // Once that tab shows another page (here: the conversation's record of the page says
        // another address than the tab's), the passage is never sent to it.
        for (key, value) in h.sessions.data.borrow_mut().iter_mut() {
            if !key.starts_with("read:") {
                *value = value.replace("8001/leaves", "8001/leaves-before");
            }
        }
        let elsewhere = locate();
        assert_eq!(elsewhere["data"]["found"], false, "{elsewhere}");
        assert!(
            elsewhere["data"].get("tab").is_none_or(|t| t.is_null()),
            "{elsewhere}"
        );
        for (key, value) in h.sessions.data.borrow_mut().iter_mut() {
            if !key.starts_with("read:") {
                *value = value.replace("8001/leaves-before", "8001/leaves");
            }
        }
        // A restarted worker (the session loaded from the store, as a resume does) has the
        // added page's text again, from the read pages.
        let loaded =
            futures::executor::block_on(knowledgelens::state::load(h.sessions.as_ref(), "tab:2"))
                .expect("loads")
                .expect("a session");
        assert_eq!(loaded.added_texts.len(), 1);
        assert!(loaded.added_texts[0]
            .page
            .text
            .contains("maple leaves turn crimson"));
        assert_eq!(loaded.added_texts[0].base, 100);
        // Removed: the list says so, and the next question does not see it.
        let removed = call(
            &h,
            json!({"id": 5, "type": "remove_page", "session": "tab:2", "page": id}),
        );
        assert_eq!(removed["ok"], true, "{removed}");
        assert!(removed["data"].get("added").is_none(), "{removed}");
        let kept =
            futures::executor::block_on(read_pages::list(h.sessions.as_ref())).expect("list");
        assert_eq!(kept.len(), 2, "both pages read are still kept");
    }

    #[test]
    fn adding_a_page_no_longer_kept_or_too_many_is_refused_with_a_reason() {
        let h = harness(vec![Reply::text("Crimson.")]);
        call(
            &h,
            json!({"id": 1, "type": "ask", "session": "tab:1", "tab_id": 1, "question": "What colour?"}),
        );
        let gone = call(
            &h,
            json!({"id": 2, "type": "add_pages", "session": "tab:2", "pages": [77]}),
        );
        assert_eq!(gone["ok"], false);
        assert!(
            gone["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("no longer kept"),
            "{gone}"
        );
        let empty = call(
            &h,
            json!({"id": 3, "type": "add_pages", "session": "tab:2", "pages": []}),
        );
        assert_eq!(empty["error"]["kind"], "bad_request", "{empty}");
    }

    /// A conversation on a page that could not be read (a chrome:// page) still gets the
    /// pages its user added: their text is in the request, fenced under their title.
    #[test]
    fn a_page_that_could_not_be_read_still_has_its_added_pages() {
        let h = harness(vec![
            Reply::text("Crimson."),
            Reply::text("The leaves turn crimson [p101]."),
        ]);
        call(
            &h,
            json!({"id": 1, "type": "ask", "session": "tab:1", "tab_id": 1, "question": "What colour?"}),
        );
        let list = call(
            &h,
            json!({"id": 2, "type": "read_pages", "session": "tab:4"}),
        );
        let id = list["data"]["pages"][0]["id"]
            .as_u64()
            .expect("Leaves is listed");
        let added = call(
            &h,
            json!({"id": 3, "type": "add_pages", "session": "tab:4", "pages": [id]}),
        );
        assert_eq!(added["ok"], true, "{added}");
        let reply = call(
            &h,
            json!({"id": 4, "type": "ask", "session": "tab:4", "tab_id": 4, "question": "What do the leaves do?"}),
        );
        assert_eq!(reply["ok"], true, "{reply}");
        let requests = h.llm.requests.borrow();
        let text: String = requests
            .last()
            .expect("a request")
            .messages
            .iter()
            .map(|m| m.content.clone())
            .collect::<Vec<_>>()
            .join("\n");
        assert!(text.contains("could not be read"), "{text}");
        assert!(text.contains("maple leaves turn crimson"), "{text}");
        assert!(text.contains("[p101]"), "{text}");
    }

    /// "Clear history" also clears the pages kept for questions across pages, but not one a
    /// conversation uses now.
    #[test]
    fn clear_history_clears_the_pages_read_but_those_in_use() {
        let h = harness(vec![Reply::text("Crimson."), Reply::text("Twice a day.")]);
        for (tab, question) in [(1, "What colour?"), (2, "How often?")] {
            let reply = call(
                &h,
                json!({"id": 1, "type": "ask", "session": format!("tab:{tab}"), "tab_id": tab, "question": question}),
            );
            assert_eq!(reply["ok"], true, "{reply}");
        }
        let kept =
            futures::executor::block_on(read_pages::list(h.sessions.as_ref())).expect("list");
        assert_eq!(kept.len(), 2);
        let leaves = kept
            .iter()
            .find(|p| p.title == "Leaves")
            .expect("Leaves")
            .id;
        let added = call(
            &h,
            json!({"id": 2, "type": "add_pages", "session": "tab:4", "pages": [leaves]}),
        );
        assert_eq!(added["ok"], true, "{added}");
        let cleared = call(&h, json!({"id": 3, "type": "clear_history"}));
        assert_eq!(cleared["ok"], true, "{cleared}");
        let left: Vec<String> = futures::executor::block_on(read_pages::list(h.sessions.as_ref()))
            .expect("list")
            .into_iter()
            .map(|p| p.title)
            .collect();
        assert_eq!(
            left,
            ["Leaves"],
            "only the page tab 4's conversation uses stays"
        );
        assert!(!h
            .sessions
            .data
            .borrow()
            .iter()
            .any(|(k, v)| k.starts_with("read:page:") && v.contains("The moon pulls")));
    }
}
