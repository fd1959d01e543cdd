//! The pages read in this browser session, kept for questions across pages: every page a
//! question or an explanation read (never an incognito tab's) is kept under keys of its own,
//! `read:page:<id>`, listed in one index record, `read:pages`, so it outlives its tab's
//! session. The store is capped in count ([`MAX_READ_PAGES`]) and bytes
//! ([`MAX_READ_PAGES_BYTES`]); the least recently used page goes first, never one of the
//! current conversation's sources (`protected`), and a page too large for the store is not
//! kept rather than evict the others. The caps and eviction are planned in [`plan_keep`]
//! (pure); [`keep`] writes the plan.

use serde::Serialize;

use crate::ports::{StateStore, StoreError};
use crate::types::PageInfo;
use kljson::{FromJson, ToJson};

/// Storage key of the index record.
pub const READ_PAGES_KEY: &str = "read:pages";

/// Storage key prefix of the kept pages.
pub const READ_PAGE_PREFIX: &str = "read:page:";

/// Most pages kept.
pub const MAX_READ_PAGES: usize = 20;

/// Most bytes the kept pages' records may take together (keys and values, as the store
/// counts them).
pub const MAX_READ_PAGES_BYTES: usize = 4 * 1024 * 1024;

/// Version of the index record written by this build (a newer one is not read: the pages
/// it lists are left alone and none is listed).
pub const READ_PAGES_VERSION: u32 = 1;

/// The storage key of the kept page `id`.
pub fn read_page_key(id: u64) -> String {
    format!("{READ_PAGE_PREFIX}{id}")
}

/// A kept page as the index lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ReadPage {
    /// Its id (never reused in a browser session).
    pub id: u64,
    /// Its title.
    pub title: String,
    /// Its URL.
    pub url: String,
    /// Its site (the URL's host; empty when the URL has none).
    pub site: String,
    /// When it was read (ms).
    pub read_at: u64,
    /// When a question last used it (ms; `read_at` until one did).
    pub used_at: u64,
    /// The tab it was read in: "Show on page" switches to it while it shows the page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tab: Option<i64>,
    /// Its record's bytes (key and value).
    pub bytes: u64,
}

/// The index record.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, FromJson, ToJson)]
pub struct ReadPages {
    /// Its version ([`READ_PAGES_VERSION`]).
    pub version: u32,
    /// The id the next page kept gets.
    pub next_id: u64,
    /// The pages kept, in the order kept.
    pub pages: Vec<ReadPage>,
}

impl ReadPages {
    /// The bytes of every page listed.
    pub fn bytes(&self) -> u64 {
        self.pages.iter().map(|p| p.bytes).sum()
    }

    /// The page listed as `id`.
    pub fn get(&self, id: u64) -> Option<&ReadPage> {
        self.pages.iter().find(|p| p.id == id)
    }
}

/// Why a page was not kept (nothing else was removed for it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeepError {
    /// The page alone is larger than the store may hold.
    #[error("this page is too large to keep for questions across pages ({0} bytes; at most {MAX_READ_PAGES_BYTES})")]
    TooLarge(u64),
    /// Every page that could make room is a source of the current conversation.
    #[error("no room to keep this page: the pages kept are sources of the current conversation (remove one to make room)")]
    Full,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What keeping a page does: the new index, the page's record, and the records removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeepPlan {
    /// The index after it.
    pub index: ReadPages,
    /// The kept page's id.
    pub id: u64,
    /// Its record (key, value).
    pub record: (String, String),
    /// Ids of the pages removed to make room (least recently used first), and of the
    /// earlier copy of the same page, if any.
    pub removed: Vec<u64>,
}

/// The site of `url`: its host (empty when it has none).
pub fn site_of(url: &str) -> String {
    crate::url::parse(url).map(|u| u.host).unwrap_or_default()
}

/// Plans keeping `page` (read in `tab` at `now_ms`) in `index`: an earlier copy of the same
/// page (same URL, query and fragment aside) is replaced, keeping its id; then the least
/// recently used pages (ties: the one kept first) are removed until the store is within
/// [`MAX_READ_PAGES`] and [`MAX_READ_PAGES_BYTES`], never one of `protected`. A page that
/// cannot fit that way is refused, and nothing is removed.
pub fn plan_keep(
    index: &ReadPages,
    page: &PageInfo,
    tab: Option<i64>,
    now_ms: u64,
    protected: &[u64],
) -> Result<KeepPlan, KeepError> {
    plan_keep_within(index, page, tab, now_ms, protected, MAX_READ_PAGES)
}

/// [`plan_keep`] with at most `max_pages` pages kept (at most [`MAX_READ_PAGES`]; the test
/// build lowers it: `PageReader::read_pages_cap`).
pub fn plan_keep_within(
    index: &ReadPages,
    page: &PageInfo,
    tab: Option<i64>,
    now_ms: u64,
    protected: &[u64],
    max_pages: usize,
) -> Result<KeepPlan, KeepError> {
    let max_pages = max_pages.clamp(1, MAX_READ_PAGES);
    let earlier = index
        .pages
        .iter()
        .find(|p| crate::url::same_document(&p.url, &page.url))
        .map(|p| p.id);
    let id = earlier.unwrap_or(index.next_id.max(1));
    let key = read_page_key(id);
    let value = kljson::to_string(page);
    let bytes = (key.len() + value.len()) as u64;
    if bytes > MAX_READ_PAGES_BYTES as u64 {
        return Err(KeepError::TooLarge(bytes));
    }
    let mut kept: Vec<ReadPage> = index.pages.clone();
    kept.retain(|p| Some(p.id) != earlier);
    let mut removed: Vec<u64> = Vec::new();
    loop {
        let mut total = bytes;
        for p in &kept {
            total += p.bytes;
        }
        if kept.len() < max_pages && total <= MAX_READ_PAGES_BYTES as u64 {
            break;
        }
        // The least recently used page not protected (the first kept of equals).
        let mut oldest: Option<usize> = None;
        for (at, p) in kept.iter().enumerate() {
            if !protected.contains(&p.id) && oldest.is_none_or(|o| p.used_at < kept[o].used_at) {
                oldest = Some(at);
            }
        }
        match oldest {
            Some(at) => removed.push(kept.remove(at).id),
            None => return Err(KeepError::Full),
        }
    }
    removed.extend(earlier);
    kept.push(ReadPage {
        id,
        title: page.title.clone(),
        url: page.url.clone(),
        site: site_of(&page.url),
        read_at: now_ms,
        used_at: now_ms,
        tab,
        bytes,
    });
    Ok(KeepPlan {
        index: ReadPages {
            version: READ_PAGES_VERSION,
            next_id: index.next_id.max(1) + u64::from(earlier.is_none()),
            pages: kept,
        },
        id,
        record: (key, value),
        removed,
    })
}

/// The index record in the store: an empty one when there is none, or when it cannot be
/// read (logged; the records it listed are removed with the next [`keep`], as strays).
pub async fn load_index(store: &dyn StateStore) -> Result<ReadPages, StoreError> {
    let Some(text) = store.get(READ_PAGES_KEY).await? else {
        return Ok(ReadPages::default());
    };
    match kljson::decode::<ReadPages>(&text) {
        Ok(index) if index.version <= READ_PAGES_VERSION => Ok(index),
        Ok(index) => {
            crate::ports::log(&format!(
                "the read pages' index is of a newer version ({}); none is listed",
                index.version
            ));
            Ok(ReadPages {
                version: index.version,
                ..ReadPages::default()
            })
        }
        Err(e) => {
            crate::ports::log(&format!("the read pages' index is unreadable: {e}"));
            Ok(ReadPages::default())
        }
    }
}

/// Keeps `page`, read in `tab` (see [`plan_keep`]), unless `private` (an incognito tab's
/// page is never kept) or it has no text: its record and the new index in one write, then
/// the records it replaced or evicted (and any record no index lists) are removed. The
/// pages `used` (the current conversation's sources, asked about now) are marked used at
/// `now_ms` in the same write, and never evicted for it. Returns its id. An index of a
/// newer version is left alone: nothing is kept.
pub async fn keep(
    store: &dyn StateStore,
    page: &PageInfo,
    tab: Option<i64>,
    now_ms: u64,
    used: &[u64],
    private: bool,
) -> Result<Option<u64>, KeepError> {
    keep_within(store, page, tab, now_ms, used, private, MAX_READ_PAGES).await
}

/// [`keep`] with at most `max_pages` pages kept ([`plan_keep_within`]).
pub async fn keep_within(
    store: &dyn StateStore,
    page: &PageInfo,
    tab: Option<i64>,
    now_ms: u64,
    used: &[u64],
    private: bool,
    max_pages: usize,
) -> Result<Option<u64>, KeepError> {
    if private || page.text.trim().is_empty() {
        return Ok(None);
    }
    let index = load_index(store).await?;
    if index.version > READ_PAGES_VERSION {
        return Ok(None);
    }
    let mut plan = plan_keep_within(&index, page, tab, now_ms, used, max_pages)?;
    let mut listed = Vec::new();
    for kept in &mut plan.index.pages {
        if used.contains(&kept.id) {
            kept.used_at = now_ms;
        }
        listed.push(read_page_key(kept.id));
    }
    store
        .set(vec![
            plan.record,
            (READ_PAGES_KEY.to_string(), kljson::to_string(&plan.index)),
        ])
        .await?;
    // Whatever no index lists: the pages evicted or replaced now, and any a worker stopped
    // before removing.
    let mut stale = store.keys(READ_PAGE_PREFIX).await.unwrap_or_default();
    stale.retain(|k| !listed.contains(k));
    if !stale.is_empty() {
        if let Err(e) = store.remove(stale).await {
            super::log_store_error("removing read pages that made room", &e);
        }
    }
    Ok(Some(plan.id))
}

/// Frees space for a save (the storage quota): removes the record of the least recently
/// used kept page that `protected` (the saving conversation's added pages) does not name,
/// then writes the index without it. The store may still be over its quota then, so a
/// failed index write is only logged: a listed page without its record counts as gone
/// ([`list`], [`load_pages`]) and the next [`keep`] rewrites the index. Returns whether a
/// page went; an index of a newer version is left alone.
pub async fn drop_least_used(
    store: &dyn StateStore,
    protected: &[u64],
) -> Result<bool, StoreError> {
    let mut index = load_index(store).await?;
    if index.version > READ_PAGES_VERSION {
        return Ok(false);
    }
    let present = store.keys(READ_PAGE_PREFIX).await?;
    index
        .pages
        .retain(|p| present.contains(&read_page_key(p.id)));
    let Some(at) = index
        .pages
        .iter()
        .enumerate()
        .filter(|(_, p)| !protected.contains(&p.id))
        .min_by_key(|(_, p)| p.used_at)
        .map(|(at, _)| at)
    else {
        return Ok(false);
    };
    let gone = index.pages.remove(at);
    store.remove(vec![read_page_key(gone.id)]).await?;
    let index = (READ_PAGES_KEY.to_string(), kljson::to_string(&index));
    if let Err(e) = store.set(vec![index]).await {
        super::log_store_error("writing the read pages' index after making room", &e);
    }
    Ok(true)
}

/// Removes every kept page but those `protected` names (the pages conversations use now):
/// what "Clear history" clears besides History. Returns how many went; an index of a newer
/// version is left alone.
pub async fn clear_except(store: &dyn StateStore, protected: &[u64]) -> Result<usize, StoreError> {
    let mut index = load_index(store).await?;
    if index.version > READ_PAGES_VERSION {
        return Ok(0);
    }
    let mut gone: Vec<String> = store.keys(READ_PAGE_PREFIX).await?;
    gone.retain(|k| !protected.iter().any(|id| *k == read_page_key(*id)));
    let count = index
        .pages
        .iter()
        .filter(|p| !protected.contains(&p.id))
        .count();
    index.pages.retain(|p| protected.contains(&p.id));
    store.remove(gone).await?;
    store
        .set(vec![(
            READ_PAGES_KEY.to_string(),
            kljson::to_string(&index),
        )])
        .await?;
    Ok(count)
}

/// The pages kept, most recently read first.
pub async fn list(store: &dyn StateStore) -> Result<Vec<ReadPage>, StoreError> {
    // The index lists them in the order kept (a page read again moves to the end); one
    // whose record went to make room (the index not yet rewritten) is gone.
    let mut pages = load_index(store).await?.pages;
    let present = store.keys(READ_PAGE_PREFIX).await?;
    pages.retain(|p| present.contains(&read_page_key(p.id)));
    pages.reverse();
    Ok(pages)
}

/// The kept pages `ids` with their index entries, in order (`None` for one no longer kept;
/// a record that cannot be read counts as gone, and is logged).
pub async fn load_pages(
    store: &dyn StateStore,
    ids: &[u64],
) -> Result<Vec<Option<(ReadPage, PageInfo)>>, StoreError> {
    let index = load_index(store).await?;
    let mut keys = Vec::new();
    for id in ids {
        keys.push(read_page_key(*id));
    }
    let values = store.get_many(keys).await?;
    let mut pages = Vec::new();
    for (id, value) in ids.iter().zip(values) {
        let entry = index.get(*id).cloned();
        let page = match (entry, value) {
            (Some(entry), Some(text)) => match kljson::decode::<PageInfo>(&text) {
                Ok(page) => Some((entry, page)),
                Err(e) => {
                    crate::ports::log(&format!("read page {id} is unreadable: {e}"));
                    None
                }
            },
            _ => None,
        };
        pages.push(page);
    }
    Ok(pages)
}

/// A page added to a conversation as a source beside its own page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct AddedPage {
    /// Its id in the read pages.
    pub id: u64,
    /// Its title.
    pub title: String,
    /// Its URL.
    pub url: String,
    /// Its site.
    pub site: String,
    /// The tab it was read in, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tab: Option<i64>,
    /// The number before its first passage's: its passage `i` is `p{base + i + 1}`.
    pub base: u32,
    /// Its passages when added: the numbers `base + 1` to `base + passages` are its own.
    pub passages: u32,
    /// Whether the user removed it from the conversation (kept, so its numbers stay its).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub removed: bool,
}

/// Most pages a conversation may have added, removed ones included (beyond, a new
/// conversation starts the count again).
pub const MAX_ADDED_EVER: usize = 16;

/// Why a page could not be added to a conversation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddError {
    /// The conversation uses as many added pages as it may.
    #[error(
        "a conversation can use at most {} added pages: remove one first",
        crate::page::MAX_ADDED_PAGES
    )]
    TooMany,
    /// The conversation added and removed pages too many times.
    #[error("this conversation has added {MAX_ADDED_EVER} pages already: start a new conversation to add more")]
    TooManyEver,
    /// It is the conversation's own page.
    #[error("this page is the conversation's own page already")]
    OwnPage,
}

impl super::SessionState {
    /// The pages the conversation uses beside its own (not removed), in the order added.
    pub fn added_pages(&self) -> impl Iterator<Item = &AddedPage> {
        self.added.iter().filter(|p| !p.removed)
    }

    /// The read-page ids the conversation uses: never evicted while it is current.
    pub fn protected_pages(&self) -> Vec<u64> {
        self.added_pages().map(|p| p.id).collect()
    }

    /// How many of the own page's passages are numbered: those below the first added
    /// page's block (all of them when no page was ever added).
    pub fn own_limit(&self) -> usize {
        self.added.first().map_or(usize::MAX, |p| p.base as usize)
    }

    /// Adds the kept page `entry`, of `passages` passages, as a source of the conversation:
    /// numbered from the next block past every number given so far (the own page's
    /// passages, and every page added, removed ones included). Adding one it uses already
    /// changes nothing; adding a removed one again gives it its old numbers back.
    pub fn add_page(&mut self, entry: &ReadPage, passages: usize) -> Result<(), AddError> {
        if let Some(own) = &self.page {
            if !own.url.is_empty() && crate::url::same_document(&own.url, &entry.url) {
                return Err(AddError::OwnPage);
            }
        }
        let active = self.added_pages().count();
        if let Some(at) = self.added.iter().position(|p| p.id == entry.id) {
            if self.added[at].removed {
                if active >= crate::page::MAX_ADDED_PAGES {
                    return Err(AddError::TooMany);
                }
                self.added[at].removed = false;
            }
            return Ok(());
        }
        if active >= crate::page::MAX_ADDED_PAGES {
            return Err(AddError::TooMany);
        }
        if self.added.len() >= MAX_ADDED_EVER {
            return Err(AddError::TooManyEver);
        }
        let used = self
            .added
            .iter()
            .map(|p| (p.base + p.passages) as usize)
            .max()
            .unwrap_or_else(|| self.own_passages());
        let base = crate::page::across::next_base(used);
        self.added.push(AddedPage {
            id: entry.id,
            title: entry.title.clone(),
            url: entry.url.clone(),
            site: entry.site.clone(),
            tab: entry.tab,
            base: u32::try_from(base).unwrap_or(u32::MAX),
            passages: u32::try_from(passages).unwrap_or(u32::MAX),
            removed: false,
        });
        Ok(())
    }

    /// The own page's passages (0 without its text).
    fn own_passages(&self) -> usize {
        self.page
            .as_ref()
            .filter(|p| !p.text.is_empty())
            .map_or(0, |p| crate::page::index_of(&p.text).passages().len())
    }

    /// Numbers the added pages afresh past the own page's passages, for the first question
    /// of a conversation (no answer has cited any of them yet): pages added before the own
    /// page was read (a popup opened on a tab not asked about yet) are numbered past all of
    /// its passages. Removed pages are forgotten. Later questions keep the numbers.
    pub fn renumber_added(&mut self) {
        let mut used = self.own_passages();
        let own = self.page.as_ref().map_or("", |p| p.url.as_str());
        self.added
            .retain(|p| !p.removed && (own.is_empty() || !crate::url::same_document(own, &p.url)));
        for page in &mut self.added {
            let base = crate::page::across::next_base(used);
            page.base = u32::try_from(base).unwrap_or(u32::MAX);
            used = base + page.passages as usize;
        }
    }

    /// Removes the added page `id` from the conversation's sources (its numbers stay its).
    /// Whether it was one.
    pub fn remove_page(&mut self, id: u64) -> bool {
        match self.added.iter_mut().find(|p| p.id == id && !p.removed) {
            Some(page) => {
                page.removed = true;
                true
            }
            None => false,
        }
    }
}

/// Fills `state.added_texts` from the read pages: one per added page, in order, with its
/// text while it is used and kept (a removed page, or one no longer kept, with none).
pub async fn load_added_texts(
    store: &dyn StateStore,
    state: &mut super::SessionState,
) -> Result<(), StoreError> {
    let mut ids = Vec::new();
    for added in &state.added {
        if !added.removed {
            ids.push(added.id);
        }
    }
    let mut loaded = load_pages(store, &ids).await?.into_iter();
    let mut texts = Vec::new();
    for added in &state.added {
        let page = match added.removed {
            true => None,
            false => loaded.next().flatten().map(|(_, page)| page),
        };
        texts.push(crate::page::across::AddedText {
            key: added.id,
            base: added.base as usize,
            limit: added.passages as usize,
            tab: added.tab,
            page: page.unwrap_or_else(|| PageInfo {
                title: added.title.clone(),
                url: added.url.clone(),
                ..PageInfo::default()
            }),
        });
    }
    state.added_texts = std::rc::Rc::new(texts);
    Ok(())
}
