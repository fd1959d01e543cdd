//! Chaos over a research run: a worker stopped anywhere, in any stage, ends as if never cut.
//!
//! A two-subtopic research question with web search on goes through the real [`Service`]:
//! decompose, then per subtopic a search (a band's pages graded not relevant, a rewrite, the
//! tides' pages graded relevant), a page query and the findings, then the synthesis and the
//! review. Its store, model and search yield at every operation, so the run has many points
//! at which it can be cut: before and after each save, while a model call or a search is in
//! flight. A cut drops the run's future and the whole service; a new service over the same
//! store resumes it with `Service::resume_all`, as a restarted worker does.
//!
//! Compared with the uninterrupted run: status, answer, partial flag, error, steps, notices,
//! sources, the research record (stage, subtopics and their findings, report, fixes) and the
//! trajectory without timestamps. So no finished stage is redone (its heading and entries
//! would repeat) and none is skipped. Also: each cut redoes at most the one operation in
//! flight, the run ends once, and every request names the run's one fence.
//!
//! Every single cut point is tried, and 256 random cases of two or three cuts. (Pairs of
//! cuts at every point would not fit in CI.) Two cuts in a row in one stretch without a save
//! (inside a search) look like a worker that crashes on the run: that run fails as "crashed
//! twice" with a prefix of the uninterrupted trajectory, which is checked exactly.

use std::rc::Rc;

use futures::future::LocalBoxFuture;
use knowledgelens::agent::trajectory::Item;
use knowledgelens::llm::ChatRequest;
use knowledgelens::service::{Ports, Service};
use knowledgelens::settings::{Settings, WebSearch, SETTINGS_KEY};
use knowledgelens::state::research::ResearchRun;
use knowledgelens::state::sources::Source;
use knowledgelens::state::{self, RunStatus, SessionState};
use knowledgelens::testing::research::{tides_pages, ResearchScript, TopicSearch};
use knowledgelens::testing::{
    poll_times, polls_to_finish, resume_all, FixedModel, ManualClock, MemoryStore, RecordingSink,
    Reply, ResponderLlm, SeededRandom, YieldingLlm, YieldingStore,
};
use proptest::prelude::*;

const SESSION: &str = "tab:1";
const QUESTION: &str = "What moves the tides, and how?";
/// Polls a model call stays in flight.
const MODEL_YIELDS: usize = 2;
/// Polls a search stays in flight.
const SEARCH_YIELDS: usize = 2;

type Respond = Box<dyn Fn(&ChatRequest, usize) -> Reply>;
type Model = YieldingLlm<ResponderLlm<Respond>>;

/// What outlives a worker: the store, the model and search servers, the clock and the UI.
struct World {
    store: Rc<MemoryStore>,
    settings: Rc<MemoryStore>,
    clock: Rc<ManualClock>,
    sink: Rc<RecordingSink>,
    llm: Rc<Model>,
    search: Rc<TopicSearch>,
}

impl World {
    fn new() -> Self {
        let settings = Rc::new(MemoryStore::new());
        let searching = Settings {
            search_provider: WebSearch::Wikipedia,
            ..Settings::default()
        };
        settings.data.borrow_mut().insert(
            SETTINGS_KEY.into(),
            serde_json::to_string(&searching).unwrap(),
        );
        let store = Rc::new(MemoryStore::new());
        store.keep_history.set(true);
        let script = ResearchScript::new(&["The moon", "The sun", "the moon"]);
        let respond: Respond = Box::new(move |request, _| script.reply(request));
        Self {
            store,
            settings,
            clock: ManualClock::new(1_000),
            sink: Rc::new(RecordingSink::default()),
            llm: Rc::new(YieldingLlm::new(ResponderLlm::new(respond), MODEL_YIELDS)),
            search: Rc::new(TopicSearch {
                yields: SEARCH_YIELDS,
                ..TopicSearch::default()
            }),
        }
    }

    /// A fresh worker: a new service with nothing in memory. Only the asking worker may
    /// draw a nonce (a resumed run reuses its saved one).
    fn worker(&self, asking: bool) -> Rc<Service> {
        let ports = Ports {
            capture: Rc::new(knowledgelens::ports::NoCapture),
            sessions: Rc::new(YieldingStore(self.store.clone())),
            settings: self.settings.clone(),
            clock: self.clock.clone(),
            events: self.sink.clone(),
            pages: Rc::new(tides_pages()),
            models: Rc::new(FixedModel(self.llm.clone())),
            random: Rc::new(SeededRandom::new(7).at_most(usize::from(asking))),
            search: self.search.clone(),
        };
        Service::new(ports)
    }

    fn ask(&self) -> LocalBoxFuture<'static, ()> {
        let worker = self.worker(true);
        let request = serde_json::json!({
            "id": 1, "type": "ask", "session": SESSION, "question": QUESTION, "tab_id": 1,
            "research": {"subtopics": 2},
        });
        let (reply, run) = futures::executor::block_on(worker.handle_json(request));
        assert_eq!(reply["ok"], true, "{reply}");
        run.expect("a run to drive")
    }

    fn restart(&self) -> LocalBoxFuture<'static, ()> {
        resume_all(self.worker(false))
    }

    fn stored(&self) -> SessionState {
        self.store.session(SESSION).expect("stored")
    }

    /// The fence tags the requests' system messages name.
    fn fence_tags(&self) -> std::collections::BTreeSet<String> {
        self.llm
            .inner
            .requests
            .borrow()
            .iter()
            .filter_map(|r| {
                let system = &r.messages[0].content;
                let start = system.find("<page-")? + 1;
                let end = start + system[start..].find('>')?;
                Some(system[start..end].to_string())
            })
            .collect()
    }
}

/// Everything compared with the uninterrupted run (timestamps left out).
#[derive(Debug, Clone, PartialEq)]
struct Outcome {
    status: RunStatus,
    answer: String,
    partial: bool,
    error: Option<String>,
    step: u32,
    notices: Vec<String>,
    sources: Vec<Source>,
    research: Option<ResearchRun>,
    trajectory: Vec<(u32, Item)>,
}

impl Outcome {
    fn of(s: &SessionState) -> Self {
        Self {
            status: s.status,
            answer: s.answer.clone(),
            partial: s.partial,
            error: s.error.as_ref().map(|e| e.message.clone()),
            step: s.step,
            notices: s.notices.clone(),
            sources: s.sources.clone(),
            research: s.research.clone(),
            trajectory: s
                .trajectory
                .iter()
                .map(|e| (e.step, e.item.clone()))
                .collect(),
        }
    }
}

struct Reference {
    outcome: Outcome,
    polls: usize,
    model_calls: usize,
    searches: u32,
    saves_before_run: usize,
    saves: usize,
}

thread_local! {
    static REFERENCE: Rc<Reference> = Rc::new(run_reference());
}

fn reference() -> Rc<Reference> {
    REFERENCE.with(Rc::clone)
}

fn run_reference() -> Reference {
    let world = World::new();
    let mut run = world.ask();
    let saves_before_run = world.store.history.borrow().len();
    let polls = polls_to_finish(run.as_mut(), 100_000).expect("the run finishes");
    let outcome = Outcome::of(&world.stored());
    assert_eq!(outcome.status, RunStatus::Completed, "{:?}", outcome.error);
    assert!(!outcome.partial);
    let headings: Vec<&str> = outcome
        .trajectory
        .iter()
        .filter_map(|(_, item)| match item {
            Item::Phase { heading } => Some(heading.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        headings,
        [
            "Planning the subtopics",
            "Subtopic 1 of 2: The moon",
            "Subtopic 2 of 2: The sun",
            "Writing the report",
            "Reviewing the report",
        ]
    );
    assert!(outcome.answer.contains("## Synthesis"));
    assert_eq!(world.sink.endings(), 1);
    let saves = world.store.history.borrow().len();
    Reference {
        outcome,
        polls,
        model_calls: world.llm.started(),
        searches: world.search.searches.get(),
        saves_before_run,
        saves,
    }
}

/// How one chaotic run went.
struct Chaos {
    world: World,
    cuts: usize,
    sets_at_cut: Vec<usize>,
    crash_loop_cut: bool,
}

fn run_with_cuts(cuts: &[usize]) -> Chaos {
    let world = World::new();
    let mut run = world.ask();
    let mut done = 0;
    let mut sets_at_cut = Vec::new();
    let mut crash_loop_cut = false;
    let mut finished = false;
    for &polls in cuts {
        if poll_times(run.as_mut(), polls).is_some() {
            finished = true;
            break;
        }
        drop(run);
        done += 1;
        sets_at_cut.push(world.store.history.borrow().len());
        if let Some(head) = world.store.head(SESSION) {
            crash_loop_cut |= head.status == RunStatus::Running
                && head.drive_attempts >= state::MAX_DRIVE_ATTEMPTS;
        }
        run = world.restart();
    }
    assert!(
        finished || polls_to_finish(run.as_mut(), 100_000).is_some(),
        "the last worker finished the run"
    );
    Chaos {
        world,
        cuts: done,
        sets_at_cut,
        crash_loop_cut,
    }
}

fn check(reference: &Reference, chaos: &Chaos, context: &str) {
    let world = &chaos.world;
    let stored = world.stored();
    let outcome = Outcome::of(&stored);
    if chaos.crash_loop_cut {
        // Failed as crashed twice, never driven again: what it had done, then the error.
        assert_eq!(outcome.status, RunStatus::Failed, "{context}");
        assert_eq!(
            outcome.error.as_deref(),
            Some(state::CRASHED_TWICE),
            "{context}"
        );
        let mut kept = outcome.trajectory.clone();
        assert!(
            matches!(kept.pop(), Some((_, Item::Error { .. }))),
            "{context}: the crash is recorded last"
        );
        if matches!(kept.last(), Some((_, Item::Answer { .. }))) {
            kept.pop();
        }
        assert!(
            reference.outcome.trajectory.starts_with(&kept),
            "{context}: not a prefix of the uninterrupted trajectory:\n{kept:#?}"
        );
    } else {
        assert_eq!(outcome, reference.outcome, "{context}");
    }
    // A cut redoes at most the one operation in flight (or just finished and not saved).
    let redone_calls = world.llm.started().saturating_sub(reference.model_calls);
    let redone_searches = world
        .search
        .searches
        .get()
        .saturating_sub(reference.searches) as usize;
    assert!(
        redone_calls + redone_searches <= chaos.cuts,
        "{context}: {redone_calls} model calls and {redone_searches} searches redone for {} cuts",
        chaos.cuts
    );
    assert!(world.sink.endings() <= 1, "{context}: the run ended twice");
    let tags = world.fence_tags();
    assert_eq!(
        tags.into_iter().collect::<Vec<_>>(),
        [format!("page-{}", stored.nonce)],
        "{context}: one fence for the whole run"
    );
}

#[test]
fn research_cut_once_anywhere_finishes_as_if_never_cut() {
    let reference = reference();
    assert!(
        reference.polls > 100,
        "many cut points: {}",
        reference.polls
    );
    let mut boundaries_seen = vec![false; reference.saves + 1];
    for polls in 1..reference.polls {
        let chaos = run_with_cuts(&[polls]);
        assert_eq!(chaos.cuts, 1);
        assert!(!chaos.crash_loop_cut, "one cut is never a crash loop");
        check(&reference, &chaos, &format!("cut after {polls} polls"));
        boundaries_seen[chaos.sets_at_cut[0]] = true;
    }
    // Every save (every stage boundary among them) was a cut point.
    assert!(
        boundaries_seen[reference.saves_before_run..]
            .iter()
            .all(|seen| *seen),
        "cuts after each save: {boundaries_seen:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Two or three cuts at random points, in any stage and on its boundaries: the
    /// uninterrupted outcome (or, for two cuts in a row in one stretch, "crashed twice").
    #[test]
    fn research_cut_at_random_points_finishes_as_if_never_cut(
        cuts in proptest::collection::vec(1usize..400, 2..=3),
    ) {
        let reference = reference();
        let chaos = run_with_cuts(&cuts);
        check(&reference, &chaos, &format!("cuts {cuts:?}"));
    }
}
