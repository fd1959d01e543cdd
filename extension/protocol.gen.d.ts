// Generated from the Rust crate by `knowledgelens::protocol::gen::typedefs::protocol_dts()`:
// do not edit. Regenerate with `KL_BLESS=1 cargo test --test native protocol_gen::`.
// The declaration of protocol.gen.js (its constants) and the types of every message
// between the extension's pages and the worker (docs/protocol.md describes the same).

/** The name of the Port between the extension's pages and the worker. */
export declare const PORT_NAME: "knowledgelens";
/** The name of the Port between the in-page explanation panel and the worker. */
export declare const PANEL_PORT_NAME: "knowledgelens-panel";
/** The name of the Port between a PDF tab's downloader and the offscreen document that extracts the PDF's text. */
export declare const PDF_PORT_NAME: "knowledgelens-pdf";
/** Largest PDF read, in bytes. */
export declare const MAX_PDF_BYTES: number;
/** The requests the in-page panel may send (each about its own tab's session only). */
export declare const PANEL_REQUESTS: readonly string[];
/** Request types (`type` of a request), by name. */
export declare const REQUESTS: { readonly ACK_INPUT: "ack_input"; readonly ADD_PAGES: "add_pages"; readonly ANSWER_INPUT: "answer_input"; readonly ASK: "ask"; readonly CHECK_ACTIONS: "check_actions"; readonly CLEAR_HISTORY: "clear_history"; readonly EXPLAIN: "explain"; readonly EXPORT: "export"; readonly FIND_LOCAL_MODELS: "find_local_models"; readonly GET_ACTIONS: "get_actions"; readonly GET_SETTINGS: "get_settings"; readonly HISTORY: "history"; readonly IMPORT_ACTIONS: "import_actions"; readonly LIST_MODELS: "list_models"; readonly LOCATE_PASSAGE: "locate_passage"; readonly NEW_CONVERSATION: "new_conversation"; readonly OPEN_CONVERSATION: "open_conversation"; readonly READ_PAGES: "read_pages"; readonly REMOVE_PAGE: "remove_page"; readonly RUN_ACTION: "run_action"; readonly SAVE_ACTIONS: "save_actions"; readonly SAVE_SETTINGS: "save_settings"; readonly SEARCH_OFFER: "search_offer"; readonly SNAPSHOT: "snapshot"; readonly STOP: "stop"; readonly TEST_CONNECTION: "test_connection"; readonly TEST_SEARCH: "test_search"; };
/** Every event type a run emits. */
export declare const EVENTS: readonly string[];
/** Run statuses after which a run is over (also the names of the events that end it). */
export declare const TERMINAL_STATUSES: readonly string[];
/** Error kinds of a failed request (`error.kind` of a reply). */
export declare const API_ERROR_KINDS: readonly string[];
/** Error kinds of a failed run (`error.kind` of a view or event). */
export declare const RUN_ERROR_KINDS: readonly string[];
/** Error kinds whose fix is usually in the provider settings. */
export declare const SETTINGS_ERROR_KINDS: readonly string[];
/** Steps a run takes when the question does not say. */
export declare const MAX_STEPS_DEFAULT: number;
/** Most steps a question may ask for. */
export declare const MAX_STEPS_LIMIT: number;
/** Fewest, default and most subtopics of a research question. */
export declare const RESEARCH_SUBTOPICS: { readonly default: number; readonly max: number; readonly min: number; };
/** Rounds (model call + tools) of each subtopic's research: a research question of n subtopics takes at most 1 + n × this + 2 rounds. */
export declare const RESEARCH_SUBTOPIC_ROUNDS: number;
/** Longest question, or answer to the agent's question, in characters. */
export declare const MAX_QUESTION_CHARS: number;
/** Longest selected text an explanation works on, in characters (the rest is cut). */
export declare const MAX_SELECTION_CHARS: number;
/** Longest enclosing paragraph of a selection, in characters. */
export declare const MAX_CONTEXT_CHARS: number;
/** Longest page text kept, in characters (the page reader cuts there too). */
export declare const MAX_PAGE_CHARS: number;
/** Longest passage text a `locate_passage` request carries, in characters (longer is cut). */
export declare const MAX_LOCATE_CHARS: number;
/** How long reading a tab's text may take before a run goes on without it (ms). */
export declare const PAGE_READ_TIMEOUT_MS: number;
/** The built-in selection actions, in menu order: their ids and names (buttons and menu entries). */
export declare const BUILTIN_ACTIONS: readonly (Record<string, unknown>)[];
/** The values of the setting "Reading level", in the order to list them. */
export declare const READING_LEVELS: readonly string[];
/** Token budget per run: the default and the bounds a setting must keep. */
export declare const TOKEN_BUDGET: { readonly default: number; readonly max: number; readonly min: number; };
/** "Compact at" (percent of the context window): the default and the bounds a setting must keep. */
export declare const COMPACT_AT: { readonly default: number; readonly max: number; readonly min: number; };
/** How long a shown question waits for the answer (s): the default and the bounds a setting must keep. */
export declare const INPUT_ANSWER_TIMEOUT: { readonly default: number; readonly max: number; readonly min: number; };
/** "Model call deadline" (seconds): the default and the bounds a setting must keep. */
export declare const MODEL_DEADLINE: { readonly default: number; readonly max: number; readonly min: number; };
/** Context window bounds a setting must keep (0: the model's default). */
export declare const CONTEXT_WINDOW: { readonly max: number; readonly min: number; };
/** Price per million tokens (US$) bounds a setting must keep (empty: the built-in prices). */
export declare const PRICE_PER_MILLION: { readonly max: number; readonly min: number; };
/** Longest text (and tool arguments) of a step view, in characters. */
export declare const STEP_TEXT_MAX_CHARS: number;
/** Each provider: its label, default base URL and what it needs. */
export declare const PROVIDERS: { readonly anthropic: { readonly base_url: "https://api.anthropic.com/v1"; readonly label: "Anthropic"; readonly lists_models: boolean; readonly requires_key: boolean; readonly uses_http: boolean; }; readonly chrome_builtin: { readonly base_url: ""; readonly label: "Chrome built-in"; readonly lists_models: boolean; readonly requires_key: boolean; readonly uses_http: boolean; }; readonly gemini: { readonly base_url: "https://generativelanguage.googleapis.com/v1beta"; readonly label: "Gemini"; readonly lists_models: boolean; readonly requires_key: boolean; readonly uses_http: boolean; }; readonly ollama: { readonly base_url: "http://localhost:11434"; readonly label: "Ollama"; readonly lists_models: boolean; readonly requires_key: boolean; readonly uses_http: boolean; }; readonly openai_compatible: { readonly base_url: "http://localhost:11434/v1"; readonly label: "OpenAI-compatible"; readonly lists_models: boolean; readonly requires_key: boolean; readonly uses_http: boolean; }; };
/** Each value of the setting "Search provider", in the order to list them: its label, default base URL (Wikipedia's follows the page's language) and what it needs. */
export declare const SEARCH_PROVIDERS: { readonly brave: { readonly base_url: "https://api.search.brave.com"; readonly label: "Brave Search"; readonly needs_base_url: boolean; readonly needs_key: boolean; }; readonly off: { readonly base_url: ""; readonly label: "Off"; readonly needs_base_url: boolean; readonly needs_key: boolean; }; readonly searxng: { readonly base_url: ""; readonly label: "SearXNG"; readonly needs_base_url: boolean; readonly needs_key: boolean; }; readonly tavily: { readonly base_url: "https://api.tavily.com"; readonly label: "Tavily"; readonly needs_base_url: boolean; readonly needs_key: boolean; }; readonly wikipedia: { readonly base_url: "https://en.wikipedia.org"; readonly label: "Wikipedia"; readonly needs_base_url: boolean; readonly needs_key: boolean; }; };
/** The answers to the popup's offer to search the web (`answer` of `search_offer`), by name. */
export declare const SEARCH_OFFER_ANSWERS: { readonly NOT_NOW: "not_now"; readonly TURN_ON: "turn_on"; };
/** The settings a fresh install starts from. */
export declare const DEFAULT_SETTINGS: Readonly<Settings>;

/** A request to the worker, without the `id` the Port client adds. */
export type Request = Command;
/** The `type` of a request. */
export type RequestType = Command["type"];
/** The fields of a request of type `T` besides `type` (and `id`). */
export type RequestFields<T extends RequestType> = T extends RequestType
  ? Omit<Extract<Command, { type: T }>, "type">
  : never;
/** The `data` of the reply to a request of type `T`. */
export type ReplyOf<T extends RequestType> = Replies[T];
/** One event of a run (`event` of an `EventEnvelope`). */
export type RunEvent = AgentEvent;

/** The `data` of the reply to each request. */
export interface Replies {
  snapshot: SessionView;
  ask: SessionView;
  stop: StopReply;
  export: ExportReply;
  ack_input: AckReply;
  answer_input: AnswerReply;
  get_settings: SettingsReply;
  save_settings: SettingsReply;
  test_connection: ConnectionReply;
  list_models: ModelsReply;
  new_conversation: SessionView;
  history: HistoryReply;
  open_conversation: SessionView;
  clear_history: ClearedReply;
  explain: SessionView;
  test_search: SearchCheckReply;
  search_offer: SearchOfferReply;
  locate_passage: LocateReply;
  find_local_models: LocalModelsReply;
  read_pages: ReadPagesReply;
  add_pages: SessionView;
  remove_page: SessionView;
  run_action: SessionView;
  get_actions: ActionsReply;
  check_actions: ActionsCheckReply;
  save_actions: ActionsReply;
  import_actions: ImportActionsReply;
}
/** The `data` of the reply to each request of the in-page panel. */
export interface PanelReplies {
  snapshot: PanelView;
  stop: StopReply;
  run_action: PanelView;
}

/** `ack_input`: whether the acknowledgement reached the question it names. */
export type AckReply = {
  /** The id named the question the run is waiting on. */
  acknowledged: boolean;
};

/** One action of the list. */
export type ActionDef = {
  /** Shown nowhere (a built-in is hidden, not deleted). */
  hidden?: boolean;
  /** A built-in's id, `custom-<n>` for the user's (empty for a new one: given on save). */
  id?: string;
  /** In the context menu. */
  menu?: boolean;
  /** The name the menus and buttons show (a built-in's is fixed). */
  name: string;
  /** In the in-page panel. */
  panel?: boolean;
  /** In the popup and the side panel. */
  popup?: boolean;
  /** The user's template (empty for a built-in). */
  template?: string;
};

/** A problem with one field of one action. */
export type ActionFieldError = {
  /** `name`, `template` or `list`. */
  field: string;
  /** The action's place in the list (from 0); `None`: the list itself. */
  index?: number | null;
  /** What is wrong and what to do. */
  message: string;
};

/**
 * `check_actions`: every problem of the list, each with its action and field (none: it
 * can be saved).
 */
export type ActionsCheckReply = {
  /** The problems, in list order. */
  errors: ActionFieldError[];
};

/** The saved actions. */
export type ActionsRecord = {
  /** Every action, in menu order. */
  actions: ActionDef[];
  /** What Translate translates into (empty: the browser's language). */
  target_language?: string;
  /** The schema version ([`ACTIONS_VERSION`]). */
  version?: number;
};

/**
 * `get_actions`, `save_actions`: the actions in menu order (built-ins and the user's), and
 * why the saved ones could not be used (the defaults are shown meanwhile).
 */
export type ActionsReply = {
  /** The actions. */
  actions: ActionsRecord;
  /** Why the saved record was not used, if it was not. */
  notice?: string | null;
};

/** A page added to a conversation as a source beside its own page. */
export type AddedPage = {
  /** The number before its first passage's: its passage `i` is `p{base + i + 1}`. */
  base: number;
  /** Its id in the read pages. */
  id: number;
  /** Its passages when added: the numbers `base + 1` to `base + passages` are its own. */
  passages: number;
  /** Whether the user removed it from the conversation (kept, so its numbers stay its). */
  removed?: boolean;
  /** Its site. */
  site: string;
  /** The tab it was read in, when known. */
  tab?: number | null;
  /** Its title. */
  title: string;
  /** Its URL. */
  url: string;
};

/** One event with the run's progress. */
export type AgentEvent = {
  /** The step bound. */
  max_steps: number;
  /**
   * The session's persisted revision when the event was emitted (increases across
   * worker restarts).
   */
  rev?: number;
  /**
   * The run's event counter. `(rev, seq)` orders every event and snapshot of a session:
   * the UI applies only what is newer than what it shows.
   */
  seq?: number;
  /** The current step (0 before the first). */
  step: number;
  /** Tokens so far. */
  usage: UsageView;
} & ({
  /** The question. */
  question: string;
  type: "run_started";
} | {
  type: "step_started";
} | {
  type: "thinking";
} | {
  /** The tool. */
  tool: string;
  type: "executing";
} | {
  /** The tool. */
  tool: string;
  type: "tool_completed";
} | {
  /** What went wrong. */
  error: string;
  /** The tool. */
  tool: string;
  type: "tool_failed";
} | {
  type: "analyzing";
} | {
  type: "synthesizing";
} | {
  type: "reflecting";
} | {
  /** The new text. */
  text: string;
  type: "answer_delta";
} | {
  type: "answer_reset";
} | {
  /** The budget. */
  budget: number;
  type: "budget_warning";
  /** Tokens used. */
  used: number;
} | {
  /** The text. */
  message: string;
  type: "notice";
} | {
  /** The partial answer. */
  answer: string;
  /** The sources it cites. */
  sources: Source[];
  type: "stopped";
} | {
  /** The answer. */
  answer: string;
  /** Whether it is partial (bounds or budget reached). */
  partial: boolean;
  /** The sources it cites. */
  sources: Source[];
  type: "completed";
} | {
  /** The best partial answer (may be empty). */
  answer: string;
  /** What failed and how to fix it. */
  error: ErrorInfo;
  /** The sources it cites. */
  sources: Source[];
  type: "failed";
} | {
  /** The question. */
  question: string;
  /** Names the question in the acknowledgement and the answer. */
  request_id: string;
  type: "awaiting_input";
} | {
  /** The best partial answer (may be empty). */
  answer: string;
  /** Which wait ran out. */
  error: ErrorInfo;
  /** The sources it cites. */
  sources: Source[];
  type: "timed_out";
} | {
  type: "compacting";
} | {
  /** The query. */
  query: string;
  type: "searching";
} | {
  /** How many results this call grades. */
  count: number;
  type: "grading";
} | {
  type: "rewriting";
} | {
  /** Sections of the page. */
  of: number;
  /** The section being summarised (`None`: the summaries are being combined). */
  section?: number | null;
  type: "summarizing";
} | {
  /** The entry. */
  item: StepView;
  type: "step_item";
});

/** `answer_input`: the answer was handed to the run. */
export type AnswerReply = {
  /** Always true (a refused answer is an error). */
  accepted: boolean;
};

/** A failed request. */
export type ApiError = {
  /** The kind. */
  kind: ApiErrorKind;
  /** What went wrong and what to do. */
  message: string;
};

/** Kinds of request failures. */
export type ApiErrorKind = "bad_request" | "forbidden" | "invalid_settings" | "busy" | "not_found" | "storage" | "internal";

/** An archived conversation as `history` lists it. */
export type ArchiveSummary = {
  /** `conv:<session>:<n>`. */
  id: string;
  /** The session it was archived from. */
  session: string;
  /** Its first question (cut to [`TITLE_CHARS`] characters). */
  title: string;
  /** Questions asked in it. */
  turns: number;
  /** Its last change (ms). */
  updated_at: number;
};

/**
 * What a provider (and model) supports. The engine adapts: without native tools, tools
 * are described in the prompt and calls are read from the text; without constrained
 * output, control blocks are parsed from prose.
 */
export type Capabilities = {
  /** JSON-schema constrained output (`response_format`, Ollama's `format`, ...). */
  constrained_output: boolean;
  /** Context window in tokens (prompt plus reply). */
  context_window: number;
  /** Image inputs (false: the model is known to take text only). */
  images: boolean;
  /** Tool definitions in the request and structured tool calls in the reply. */
  native_tools: boolean;
  /** Incremental replies. */
  streaming: boolean;
};

/** `clear_history`: how many archived conversations were deleted. */
export type ClearedReply = {
  /** Conversations deleted. */
  cleared: number;
};

/**
 * What a request asks for. Its schema (`schemars`, for the generated typedefs and
 * docs/protocol.md) is the wire form [`Request::parse`] reads: `{"type": "ask", ...}`.
 */
export type Command = {
  /** Session key. */
  session: SessionKey;
  type: "snapshot";
} | {
  /** Step bound for this run. */
  max_steps?: number | null;
  /** The question. */
  question: string;
  /**
   * Research mode with at most this many subtopics (checked: 2 to 6); `None`: a
   * question answered by the loop.
   */
  research?: ResearchAsk | null;
  /** Session key. */
  session: SessionKey;
  /** The tab whose text is the context. */
  tab_id?: number | null;
  type: "ask";
} | {
  /** Session key. */
  session: SessionKey;
  type: "stop";
} | {
  /** Session key. */
  session: SessionKey;
  type: "export";
} | {
  /** The question's id. */
  request_id: string;
  /** Session key. */
  session: SessionKey;
  type: "ack_input";
} | {
  /** The answer. */
  answer: string;
  /** The question's id. */
  request_id: string;
  /** Session key. */
  session: SessionKey;
  type: "answer_input";
} | {
  type: "get_settings";
} | {
  /** The new settings. */
  settings: Settings;
  type: "save_settings";
} | {
  /** The settings to try. */
  settings: Settings;
  type: "test_connection";
} | {
  /** The settings to ask with. */
  settings: Settings;
  type: "list_models";
} | {
  /** Session key. */
  session: SessionKey;
  type: "new_conversation";
} | {
  type: "history";
} | {
  /** Which one (`conv:<session>:<n>`, as `history` lists it). */
  conversation: ConversationId;
  type: "open_conversation";
} | {
  type: "clear_history";
} | {
  /** Step bound for this run. */
  max_steps?: number | null;
  /** The selection, checked and capped ([`Selection::checked`]). */
  selection: Selection;
  /** Session key. */
  session: SessionKey;
  /** The tab the selection is in (its text is read as for a question). */
  tab_id?: number | null;
  type: "explain";
} | {
  /** The settings to try. */
  settings: Settings;
  type: "test_search";
} | {
  /** "Turn on" or "Not now". */
  answer: SearchOfferAnswer;
  type: "search_offer";
} | {
  /**
   * For a passage of a page added to the conversation: its id (the view's `added`);
   * the passage is looked for in the tab that page was read in.
   */
  page?: number | null;
  /** Session key (its tab is the one searched). */
  session: SessionKey;
  /** The passage's text (a page source's `excerpt`), trimmed and capped. */
  text: string;
  type: "locate_passage";
} | {
  type: "find_local_models";
} | {
  /** Session key. */
  session: SessionKey;
  type: "read_pages";
} | {
  /** Ids from `read_pages`. */
  pages: number[];
  /** Session key. */
  session: SessionKey;
  type: "add_pages";
} | {
  /** Its id (from the view's `added`). */
  page: number;
  /** Session key. */
  session: SessionKey;
  type: "remove_page";
} | {
  /**
   * The action's id: a built-in's (`explain`, `summarize`, `translate`, `define`,
   * `simplify`) or one of the user's actions.
   */
  action: string;
  /**
   * The browser's language, by name ("French"): what Translate translates into
   * unless Options chose another (letters, spaces, `-` and parentheses, at most 40).
   */
  language?: string | null;
  /** Step bound for this run. */
  max_steps?: number | null;
  /** The selection, checked and capped ([`Selection::checked`]). */
  selection: Selection;
  /** Session key. */
  session: SessionKey;
  /** The tab the selection is in (its text is read as for a question). */
  tab_id?: number | null;
  type: "run_action";
} | {
  type: "get_actions";
} | {
  /** The list. */
  actions: ActionsRecord;
  type: "check_actions";
} | {
  /** The list. */
  actions: ActionsRecord;
  type: "save_actions";
} | {
  /** The file's text. */
  text: string;
  type: "import_actions";
};

export type Confidence = number;

/** A working connection (`ok: true`). */
export type Connected = {
  /** What the provider and model can do. */
  capabilities: Capabilities;
  /** How long the call took. */
  latency_ms: number;
  /** The model called. */
  model: string;
  /** Always true. */
  ok: boolean;
  /** The provider called. */
  provider: Provider;
  /** The model's reply (at most 200 characters). */
  reply: string;
};

/** A failed connection (`ok: false`) and what to do about it. */
export type ConnectionFailed = {
  /** The doctor's reading. */
  diagnosis: Diagnosis;
  /** How long the call took to fail. */
  latency_ms: number;
  /** Always false. */
  ok: boolean;
};

/** `test_connection`: the model answered, or the doctor says why not. */
export type ConnectionReply = Connected | ConnectionFailed;

export type ConversationId = string;

/** What the run's tokens cost so far: an estimate from the prices it was started with. */
export type CostView = {
  /** `table` (the built-in dated prices) or `settings` (the user's prices). */
  source: PriceSource;
  /** US dollars. */
  usd: Finite;
};

/** A failure explained: the problem, one line to show, and the steps that fix it. */
export type Diagnosis = {
  /** What the server itself said, if anything. */
  detail?: string | null;
  /** An origin to request host permission for (the UI shows a button), if that fixes it. */
  permission_origin?: string | null;
  /** What kind of problem it is. */
  problem: Problem;
  /** What to do, in order; commands are exact. */
  steps: string[];
  /** Model names the server offers that are nearest to the one set. */
  suggestions: string[];
  /** One line: what failed and where. */
  summary: string;
};

/** The reply to one request: `{id, ok: true, data}` or `{id, ok: false, error}`. */
export type Envelope = {
  /** The reply, when it did. */
  data?: Response | null;
  /** The error, when it did not. */
  error?: ApiError | null;
  /** The request's id, echoed. */
  id: unknown;
  /** Whether the request succeeded. */
  ok: boolean;
};

/** An error as the UI and the export show it. */
export type ErrorInfo = {
  /** Machine-readable kind (`network`, `auth`, `rate_limited`, `empty_reply`, ...). */
  kind: RunErrorKind;
  /** Actionable text. */
  message: string;
};

/**
 * An event addressed to a session, as broadcast to the UI:
 * `{"type": "event", "session": "tab:12", "event": {...}}`.
 */
export type EventEnvelope = {
  /** The event. */
  event: AgentEvent;
  /** The run of the session it is about (the in-page panel shows only its own run's). */
  run: number;
  /** The session key. */
  session: string;
  /** Always `"event"`. */
  type: string;
};

/** `export`: the trajectory document, ready to download. */
export type ExportReply = {
  /** A file name for the download. */
  filename: string;
  /** The document, pretty-printed JSON. */
  json: string;
};

/**
 * A finite number (never NaN or infinite), so that it compares as `Eq`: prices, costs
 * and shares on the wire, as a plain JSON number.
 */
export type Finite = number;

/** A model server found on this computer. */
export type FoundServer = {
  /** The Base URL to save for it. */
  base_url: string;
  /** The models it listed (may be empty). */
  models: string[];
  /** Its name as users know it ("Ollama", "LM Studio"). */
  name: string;
  /** The provider that speaks its API. */
  provider: Provider;
};

/** A graded web search result, as the Steps view shows it. */
export type GradeView = {
  /** How sure the grader was, in [0, 1] (`None`: ungraded). */
  confidence?: Confidence | null;
  /** `relevant`, `not_relevant` or `ungraded`. */
  grade: string;
  /** Why, in one line. */
  reason: string;
  /** The result's title. */
  title: string;
  /** Its address. */
  url: string;
};

/** `history`: the archived conversations of every tab, newest first. */
export type HistoryReply = {
  /** At most [`HistoryReply::MAX`] of them. */
  conversations: ArchiveSummary[];
};

/**
 * `import_actions`: the list a file holds (migrated, new actions given ids), and its
 * problems; nothing is saved until Options saves it.
 */
export type ImportActionsReply = {
  /** The list. */
  actions: ActionsRecord;
  /** Its problems, as `check_actions` gives them. */
  errors: ActionFieldError[];
};

/** `find_local_models`: the model servers that answered on this computer, with their models. */
export type LocalModelsReply = {
  /** In the order of the probe list ([`crate::llm::local::USUAL_SERVERS`]). */
  servers: FoundServer[];
};

/**
 * `locate_passage`: whether the passage was found on the page (it was then scrolled into
 * view and highlighted).
 */
export type LocateReply = {
  /** The passage's beginning is on the page. */
  found: boolean;
  /**
   * For a passage of an added page: the tab it was found in (the popup switches to it);
   * not found there (the tab was closed or shows another page), the popup opens the
   * page's URL.
   */
  tab?: number | null;
};

/** `list_models`: the models the provider offers. */
export type ModelsReply = {
  /** Why listing failed, when it was tried. */
  diagnosis?: Diagnosis | null;
  /** Whether the provider listed them. */
  listed: boolean;
  /** The model names (empty when the provider cannot say). */
  models: string[];
};

/** The page as the UI sees it (without its text). */
export type PageView = {
  /** Whether its text was captured. */
  has_text: boolean;
  /** Title. */
  title: string;
  /** URL. */
  url: string;
};

/** An action button of the panel. */
export type PanelAction = {
  /** The action's id (what `run_action` sends). */
  id: string;
  /** Its name (the button's). */
  name: string;
};

/** `snapshot` (a panel request): the panel's run, and nothing else of the session. */
export type PanelView = {
  /**
   * The actions the panel offers as buttons (those shown in the panel, Explain aside), in
   * order.
   */
  actions?: PanelAction[];
  /** The answer it settled on. */
  answer: string;
  /** The answer streamed so far, while it runs. */
  draft: string;
  /** The error it ended with. */
  error?: ErrorInfo | null;
  /** With `seq`, orders the view against the run's events (as [`super::SessionView`]). */
  rev: number;
  /** The run. */
  run: number;
  /** See `rev`. */
  seq: number;
  /** Its status. */
  status: RunStatus;
};

/** A question from the run to the user, as the popup shows it. */
export type PendingInputView = {
  /** Whether a UI has acknowledged showing it. */
  acknowledged: boolean;
  /** The question. */
  question: string;
  /** Send it back with the acknowledgement and the answer. */
  request_id: string;
};

/** Where a run's prices come from. */
export type PriceSource = "table" | "settings";

/** What `err` is about, when the run or the connection test fails. */
export type Problem = "ollama_origin" | "unreachable" | "host_permission" | "auth" | "not_found" | "rate_limited" | "server" | "bad_request" | "context_too_long" | "timeout" | "config" | "builtin_unavailable";

/**
 * One provider's connection fields, remembered so that switching providers back and forth
 * in Options loses nothing.
 */
export type Profile = {
  /** API key. */
  api_key?: string;
  /** Base URL. */
  base_url?: string;
  /** Context window in tokens (0: the model's default). */
  context_window?: number;
  /** Model name. */
  model?: string;
  /** The user's prices for the model. */
  prices?: UserPrices;
};

/** A provider's wire format. */
export type Provider = "openai_compatible" | "ollama" | "anthropic" | "gemini" | "chrome_builtin";

/** A read page as "Add pages" lists it. */
export type ReadPageView = {
  /** Whether the conversation uses it already. */
  added: boolean;
  /** Its id (what `add_pages` names). */
  id: number;
  /** When it was read (ms). */
  read_at: number;
  /** Its site (host). */
  site: string;
  /** Its title. */
  title: string;
  /** Its URL. */
  url: string;
};

/**
 * `read_pages`: the pages read in this browser session that the conversation may add
 * (never incognito tabs'), most recently read first; not the session's own page.
 */
export type ReadPagesReply = {
  /** The pages. */
  pages: ReadPageView[];
};

/** `"research": {"subtopics": 4}` of an `ask`: answer it in research mode. */
export type ResearchAsk = {
  /** Most subtopics to research (2 to 6; default 4). */
  subtopics?: number;
};

/** The data of a successful reply: one variant per reply type. */
export type Response = SessionView | StopReply | AckReply | AnswerReply | ExportReply | SettingsReply | ConnectionReply | ModelsReply | LocalModelsReply | SearchCheckReply | SearchOfferReply | HistoryReply | ClearedReply | LocateReply | ReadPagesReply | PanelView | ActionsReply | ActionsCheckReply | ImportActionsReply;

export type RunErrorKind = "network" | "timeout" | "rate_limited" | "server" | "auth" | "not_found" | "bad_request" | "context_too_long" | "config" | "unavailable" | "deadline" | "empty_reply" | "interrupted" | "internal" | "input_timeout" | "unknown";

/** Whether a run is going on, and how it ended. */
export type RunStatus = "idle" | "running" | "completed" | "stopped" | "failed" | "timed_out";

/** A failed search (`ok: false`): the error says what happened and what to do. */
export type SearchCheckFailed = {
  /** The error (kind, message with the remedy, HTTP status, what the server said). */
  error: SearchError;
  /** How long the search took to fail, in ms. */
  latency_ms: number;
  /** Always false. */
  ok: boolean;
};

/** `test_search`: the search worked, or why not. */
export type SearchCheckReply = SearchFound | SearchCheckFailed;

/**
 * A failed search: the kind, a message for the user that says what to do, and what the
 * server said.
 */
export type SearchError = {
  /** What the server or the platform said, verbatim (cut short). */
  detail?: string | null;
  /** What went wrong. */
  kind: SearchErrorKind;
  /** One or two sentences for the user, ending with what to do. */
  message: string;
  /** The HTTP status, when one was received. */
  status?: number | null;
};

/** What went wrong, as a closed set: the one place retryability is decided. */
export type SearchErrorKind = "network" | "timeout" | "status" | "malformed" | "json_disabled" | "unauthorized" | "config";

/** A working search (`ok: true`). */
export type SearchFound = {
  /** How many results came back. */
  count: number;
  /** How long the search took, in ms. */
  latency_ms: number;
  /** Always true. */
  ok: boolean;
  /** The provider's name. */
  provider: string;
  /** What was searched for. */
  query: string;
  /** The titles of the first few. */
  titles: string[];
};

/** The answers to the popup's offer to search the web. */
export type SearchOfferAnswer = "turn_on" | "not_now";

/** `search_offer`: web search as it is now that the offer is answered. */
export type SearchOfferReply = {
  /** Always true: the offer is not made again. */
  search_offered: boolean;
  /** The setting "Search provider" (`wikipedia` after "Turn on"). */
  search_provider: WebSearch;
};

/**
 * Selected text on a page and where it sits, as the capture script reports it and as an
 * explanation run keeps it (checked and capped by [`Selection::checked`]).
 */
export type Selection = {
  /** The enclosing paragraph or block (at most [`MAX_CONTEXT_CHARS`]). */
  context?: string;
  /** Characters of the whole selection before any cut. */
  full_length?: number;
  /** The heading path above the selection, outermost first. */
  headings?: string[];
  /** The page language (`""` when unknown). */
  lang?: string;
  /** The selected text (at most [`MAX_SELECTION_CHARS`]). */
  text?: string;
  /** The page title. */
  title?: string;
  /** Whether `text` is only the start of the selection. */
  truncated?: boolean;
  /** The page URL, without query string or fragment. */
  url?: string;
};

export type SessionKey = string;

/** What the popup renders for a session. */
export type SessionView = {
  /**
   * The pages the user added to this conversation as sources beside its page
   * ("Also using: …"), in the order added.
   */
  added?: AddedPage[];
  /** The answer (final or partial) the run has settled on; see `draft` for streamed text. */
  answer: string;
  /**
   * An archived conversation, shown read-only (`open_conversation`); false for a live
   * session.
   */
  archived?: boolean;
  /** Whether the budget warning fired. */
  budget_warned: boolean;
  /** The share (0..1) of the model's context window the last request used. */
  context_share?: Finite | null;
  /** What the run's tokens cost (`None`: no price known for the model). */
  cost?: CostView | null;
  /**
   * The answer streamed so far (since the last `answer_reset`) while running; empty when
   * the view comes from storage (the draft is never saved).
   */
  draft?: string;
  /** The error the run ended with. */
  error?: ErrorInfo | null;
  /** Whether the run explains a selection. */
  explain?: boolean;
  /** Step bound. */
  max_steps: number;
  /** Notices. */
  notices: string[];
  /** The page. */
  page?: PageView | null;
  /** Whether it is partial. */
  partial: boolean;
  /** The question the run is waiting for the user to answer. */
  pending_input?: PendingInputView | null;
  /** Current phase while running. */
  phase?: string | null;
  /** The question (for an explanation: the selected text). */
  question: string;
  /** The session's persisted revision this view reflects. */
  rev?: number;
  /** The session's current (or last) run. */
  run: number;
  /**
   * Set on the reply to `ask` while web search is off and its offer was never answered:
   * the popup offers to turn it on (`search_offer`).
   */
  search_offer?: boolean;
  /**
   * The last event this view reflects: with `rev`, it orders the view against events
   * (the UI applies only events newer than `(rev, seq)`).
   */
  seq?: number;
  /** Session key. */
  session: string;
  /**
   * The saved settings cannot be used (unreadable, invalid, or from a newer version), so
   * runs use the defaults: what happened and what to do, for the popup to show with a way
   * to Options. `None` when they are fine (or none are saved).
   */
  settings_notice?: string | null;
  /** No model is set up yet: the popup shows its setup card. */
  setup_needed?: boolean;
  /** The sources the answer cites, in the order it first cites them. */
  sources?: Source[];
  /** Run status. */
  status: RunStatus;
  /** Current step. */
  step: number;
  /** The trajectory, summarized for display (long texts cut). */
  steps: StepView[];
  /** Tool in use. */
  tool?: string | null;
  /** Trajectory entries recorded. */
  trajectory_len: number;
  /** Earlier turns. */
  turns: Turn[];
  /** Last change (ms). */
  updated_at: number;
  /** Tokens. */
  usage: UsageView;
};

/** The settings. */
export type Settings = {
  /** Its API key (may be empty). */
  api_key?: string;
  /** Its base URL (with the version path where the provider has one). */
  base_url?: string;
  /**
   * "Compact at": the share of the context window (percent, 50 to 95) from which the
   * older conversation is compacted.
   */
  compact_at_percent?: number;
  /** Its context window in tokens (0: the model's default). */
  context_window?: number;
  /** How long a question from the agent may wait to be shown (s; default 300). */
  input_ack_timeout_secs?: number;
  /** How long a shown question may wait for the answer (s; 60 to 86,400, default 1,800). */
  input_answer_timeout_secs?: number;
  /** Its model name. */
  model?: string;
  /**
   * "Model call deadline": the longest one model call may take in all, however steadily
   * the server keeps sending (s, 10 to 3,600; default 300). A record without it (any
   * version) reads as the default.
   */
  model_deadline_secs?: number;
  /** Its prices, if the user set them. */
  prices?: UserPrices;
  /** The connection fields last saved for each provider (the one in use included). */
  profiles?: Partial<Record<Provider, Profile>>;
  /** The provider in use. */
  provider?: Provider;
  /**
   * How answers are pitched: `simple`, `standard` or `expert` (checked by
   * [`Settings::validated`], so an unknown value is a validation error naming the field).
   */
  reading_level?: string;
  /** "Search API key" (Brave, Tavily). */
  search_api_key?: string;
  /** "Search base URL": empty means the provider's default. */
  search_base_url?: string;
  /**
   * Whether the user answered the popup's offer to search the web ("Turn on" or "Not
   * now"): it is made once, and never again after an answer.
   */
  search_offered?: boolean;
  /** "Search provider" (default off). */
  search_provider?: WebSearch;
  /** Stream replies. */
  stream?: boolean;
  /** Token budget per run. */
  token_budget?: number;
  /** Schema version. */
  version?: number;
};

/**
 * `get_settings` and `save_settings`: the settings, whether any were saved, and why a saved
 * record was not used (`get_settings`) or why the API keys were left out (`save_settings`).
 */
export type SettingsReply = {
  /** Its API key (may be empty). */
  api_key?: string;
  /** Its base URL (with the version path where the provider has one). */
  base_url?: string;
  /**
   * "Compact at": the share of the context window (percent, 50 to 95) from which the
   * older conversation is compacted.
   */
  compact_at_percent?: number;
  /** Whether a settings record exists. */
  configured: boolean;
  /** Its context window in tokens (0: the model's default). */
  context_window?: number;
  /** How long a question from the agent may wait to be shown (s; default 300). */
  input_ack_timeout_secs?: number;
  /** How long a shown question may wait for the answer (s; 60 to 86,400, default 1,800). */
  input_answer_timeout_secs?: number;
  /** Its model name. */
  model?: string;
  /**
   * "Model call deadline": the longest one model call may take in all, however steadily
   * the server keeps sending (s, 10 to 3,600; default 300). A record without it (any
   * version) reads as the default.
   */
  model_deadline_secs?: number;
  /** Why the saved record was not used (the defaults are shown instead). */
  notice?: string | null;
  /** Its prices, if the user set them. */
  prices?: UserPrices;
  /** The connection fields last saved for each provider (the one in use included). */
  profiles?: Partial<Record<Provider, Profile>>;
  /** The provider in use. */
  provider?: Provider;
  /**
   * How answers are pitched: `simple`, `standard` or `expert` (checked by
   * [`Settings::validated`], so an unknown value is a validation error naming the field).
   */
  reading_level?: string;
  /** "Search API key" (Brave, Tavily). */
  search_api_key?: string;
  /** "Search base URL": empty means the provider's default. */
  search_base_url?: string;
  /**
   * Whether the user answered the popup's offer to search the web ("Turn on" or "Not
   * now"): it is made once, and never again after an answer.
   */
  search_offered?: boolean;
  /** "Search provider" (default off). */
  search_provider?: WebSearch;
  /** Stream replies. */
  stream?: boolean;
  /** Token budget per run. */
  token_budget?: number;
  /** Schema version. */
  version?: number;
};

/** A source an answer cites. */
export type Source = {
  /** Whether it is a passage of a page added to the conversation, not of its own page. */
  added?: boolean;
  /** One past a page passage's last character. */
  end?: number | null;
  /**
   * A web result's first characters (at most `state::sources::EXCERPT_CHARS`); a
   * passage's text.
   */
  excerpt: string;
  /** What the answer cites: `p1` for a page passage, `1` for a web result. */
  id: string;
  /** What it is. */
  kind: SourceKind;
  /** A PDF passage's page (from 1): the UI shows "page 4" and opens the PDF there. */
  page?: number | null;
  /** A page passage's first character. */
  start?: number | null;
  /**
   * For a passage of a page added to the conversation (questions across pages): the tab
   * it was read in ("Show on page" switches to it while it is open, else opens `url`).
   */
  tab?: number | null;
  /** Its title. */
  title: string;
  /** Its address. */
  url: string;
};

/** What a source is. */
export type SourceKind = "page" | "web";

/**
 * One trajectory entry as the UI lists it: in `SessionView.steps` and in `step_item`
 * events. Long texts are cut to [`StepView::MAX_CHARS`] characters; their full length is
 * kept beside them.
 */
export type StepView = {
  /** A tool call's JSON arguments, cut to [`StepView::MAX_CHARS`] characters. */
  arguments?: string | null;
  /** The length of the whole arguments, in characters. */
  arguments_chars?: number | null;
  /** When it was recorded (ms since the epoch). */
  at_ms: number;
  /** Whether it records a failure. */
  failed: boolean;
  /** A `grades` entry's results with their grades, in order. */
  grades?: GradeView[] | null;
  /**
   * Position in the run's trajectory (0-based): unique per run, so a list built from a
   * snapshot and later `step_item` events has no duplicates.
   */
  index: number;
  /**
   * `thought`, `tool_call`, `tool_result`, `observation`, `reflection`, `error`,
   * `section_summary` (and the web search's kinds) or `answer`.
   */
  kind: string;
  /** Whether the run retries after this error. */
  retrying: boolean;
  /** The step it belongs to. */
  step: number;
  /** What it says, cut to [`StepView::MAX_CHARS`] characters. */
  text: string;
  /** The length of the whole text, in characters. */
  text_chars: number;
  /** The tool (tool calls and results). */
  tool?: string | null;
};

/** `stop`: whether a run of this worker was told to stop. */
export type StopReply = {
  /** A run was going on and will stop. */
  stopping: boolean;
};

/** A finished question of this session, kept as conversation history. */
export type Turn = {
  /**
   * The selection action it applied (its name), when it was not an explanation
   * (`explain` is then true too: `question` is the selected text).
   */
  action?: string | null;
  /** The answer it got (maybe partial or empty). */
  answer: string;
  /** Whether it explained a selection (`question` is then the selected text). */
  explain?: boolean;
  /**
   * The passages past the page block's lead its first request gave that no earlier turn
   * had (page order). Every later request on the page repeats them before its question,
   * so it starts with that request's bytes (the model server's prompt cache). Empty once
   * the session moves to another page.
   */
  passages?: number[];
  /** The question. */
  question: string;
  /**
   * How many of the page's passages the model had seen, when its request said so (a
   * question about a cut page); repeated with its passages.
   */
  seen?: number | null;
  /** How it ended. */
  status: RunStatus;
};

/** Token usage as the UI sees it. */
export type UsageView = {
  /** The run's token budget. */
  budget: number;
  /** The part of `input` the provider read from its prompt cache (absent when none). */
  cached_input?: number;
  /** Prompt tokens so far. */
  input: number;
  /** Generated tokens so far. */
  output: number;
};

/**
 * The user's prices for a provider's model, US$ per million tokens (`None`: not set).
 * Input and output are set together; they then win over the built-in price table.
 */
export type UserPrices = {
  /** Prompt tokens served from the provider's cache. */
  cached_input?: Finite | null;
  /** Prompt tokens. */
  input?: Finite | null;
  /** Generated tokens. */
  output?: Finite | null;
};

/**
 * The setting "Search provider": off (the default: searching sends the question to a third
 * party), or the provider that answers.
 */
export type WebSearch = "off" | "wikipedia" | "searxng" | "brave" | "tavily";
