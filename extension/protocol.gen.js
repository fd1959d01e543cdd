// Generated from the Rust crate by `knowledgelens::protocol::gen::protocol_js()`: do not
// edit. Regenerate with `KL_BLESS=1 cargo test --test native protocol_gen::`.

/** The name of the Port between the extension's pages and the worker. */
export const PORT_NAME = "knowledgelens";

/** The name of the Port between the in-page explanation panel and the worker. */
export const PANEL_PORT_NAME = "knowledgelens-panel";

/** The name of the Port between a PDF tab's downloader and the offscreen document that extracts the PDF's text. */
export const PDF_PORT_NAME = "knowledgelens-pdf";

/** Largest PDF read, in bytes. */
export const MAX_PDF_BYTES = 31457280;

/** The requests the in-page panel may send (each about its own tab's session only). */
export const PANEL_REQUESTS = Object.freeze([
  "snapshot",
  "stop",
  "run_action"
]);

/** Request types (`type` of a request), by name. */
export const REQUESTS = Object.freeze({
  "ACK_INPUT": "ack_input",
  "ADD_PAGES": "add_pages",
  "ANSWER_INPUT": "answer_input",
  "ASK": "ask",
  "CHECK_ACTIONS": "check_actions",
  "CLEAR_HISTORY": "clear_history",
  "EXPLAIN": "explain",
  "EXPORT": "export",
  "FIND_LOCAL_MODELS": "find_local_models",
  "GET_ACTIONS": "get_actions",
  "GET_SETTINGS": "get_settings",
  "HISTORY": "history",
  "IMPORT_ACTIONS": "import_actions",
  "LIST_MODELS": "list_models",
  "LOCATE_PASSAGE": "locate_passage",
  "NEW_CONVERSATION": "new_conversation",
  "OPEN_CONVERSATION": "open_conversation",
  "READ_PAGES": "read_pages",
  "REMOVE_PAGE": "remove_page",
  "RUN_ACTION": "run_action",
  "SAVE_ACTIONS": "save_actions",
  "SAVE_SETTINGS": "save_settings",
  "SEARCH_OFFER": "search_offer",
  "SNAPSHOT": "snapshot",
  "STOP": "stop",
  "TEST_CONNECTION": "test_connection",
  "TEST_SEARCH": "test_search"
});

/** Every event type a run emits. */
export const EVENTS = Object.freeze([
  "run_started",
  "step_started",
  "thinking",
  "executing",
  "tool_completed",
  "tool_failed",
  "analyzing",
  "synthesizing",
  "reflecting",
  "answer_delta",
  "answer_reset",
  "budget_warning",
  "notice",
  "stopped",
  "completed",
  "failed",
  "awaiting_input",
  "timed_out",
  "compacting",
  "searching",
  "grading",
  "rewriting",
  "summarizing",
  "step_item"
]);

/** Run statuses after which a run is over (also the names of the events that end it). */
export const TERMINAL_STATUSES = Object.freeze([
  "completed",
  "stopped",
  "failed",
  "timed_out"
]);

/** Error kinds of a failed request (`error.kind` of a reply). */
export const API_ERROR_KINDS = Object.freeze([
  "bad_request",
  "forbidden",
  "invalid_settings",
  "busy",
  "not_found",
  "storage",
  "internal"
]);

/** Error kinds of a failed run (`error.kind` of a view or event). */
export const RUN_ERROR_KINDS = Object.freeze([
  "network",
  "timeout",
  "rate_limited",
  "server",
  "auth",
  "not_found",
  "bad_request",
  "context_too_long",
  "config",
  "unavailable",
  "deadline",
  "empty_reply",
  "interrupted",
  "internal",
  "input_timeout",
  "unknown"
]);

/** Error kinds whose fix is usually in the provider settings. */
export const SETTINGS_ERROR_KINDS = Object.freeze([
  "invalid_settings",
  "network",
  "auth",
  "not_found",
  "config",
  "unavailable"
]);

/** Steps a run takes when the question does not say. */
export const MAX_STEPS_DEFAULT = 5;

/** Most steps a question may ask for. */
export const MAX_STEPS_LIMIT = 20;

/** Fewest, default and most subtopics of a research question. */
export const RESEARCH_SUBTOPICS = Object.freeze({
  "default": 4,
  "max": 6,
  "min": 2
});

/** Rounds (model call + tools) of each subtopic's research: a research question of n subtopics takes at most 1 + n × this + 2 rounds. */
export const RESEARCH_SUBTOPIC_ROUNDS = 3;

/** Longest question, or answer to the agent's question, in characters. */
export const MAX_QUESTION_CHARS = 20000;

/** Longest selected text an explanation works on, in characters (the rest is cut). */
export const MAX_SELECTION_CHARS = 4000;

/** Longest enclosing paragraph of a selection, in characters. */
export const MAX_CONTEXT_CHARS = 4000;

/** Longest page text kept, in characters (the page reader cuts there too). */
export const MAX_PAGE_CHARS = 2000000;

/** Longest passage text a `locate_passage` request carries, in characters (longer is cut). */
export const MAX_LOCATE_CHARS = 4000;

/** How long reading a tab's text may take before a run goes on without it (ms). */
export const PAGE_READ_TIMEOUT_MS = 10000;

/** The built-in selection actions, in menu order: their ids and names (buttons and menu entries). */
export const BUILTIN_ACTIONS = Object.freeze([
  {
    "id": "explain",
    "name": "Explain"
  },
  {
    "id": "summarize",
    "name": "Summarize"
  },
  {
    "id": "translate",
    "name": "Translate"
  },
  {
    "id": "define",
    "name": "Define"
  },
  {
    "id": "simplify",
    "name": "Simplify"
  }
]);

/** The values of the setting "Reading level", in the order to list them. */
export const READING_LEVELS = Object.freeze([
  "simple",
  "standard",
  "expert"
]);

/** Token budget per run: the default and the bounds a setting must keep. */
export const TOKEN_BUDGET = Object.freeze({
  "default": 32000,
  "max": 10000000,
  "min": 1000
});

/** "Compact at" (percent of the context window): the default and the bounds a setting must keep. */
export const COMPACT_AT = Object.freeze({
  "default": 80,
  "max": 95,
  "min": 50
});

/** How long a shown question waits for the answer (s): the default and the bounds a setting must keep. */
export const INPUT_ANSWER_TIMEOUT = Object.freeze({
  "default": 1800,
  "max": 86400,
  "min": 60
});

/** "Model call deadline" (seconds): the default and the bounds a setting must keep. */
export const MODEL_DEADLINE = Object.freeze({
  "default": 300,
  "max": 3600,
  "min": 10
});

/** Context window bounds a setting must keep (0: the model's default). */
export const CONTEXT_WINDOW = Object.freeze({
  "max": 10000000,
  "min": 1024
});

/** Price per million tokens (US$) bounds a setting must keep (empty: the built-in prices). */
export const PRICE_PER_MILLION = Object.freeze({
  "max": 10000.0,
  "min": 0
});

/** Longest text (and tool arguments) of a step view, in characters. */
export const STEP_TEXT_MAX_CHARS = 4000;

/** Each provider: its label, default base URL and what it needs. */
export const PROVIDERS = Object.freeze({
  "anthropic": {
    "base_url": "https://api.anthropic.com/v1",
    "label": "Anthropic",
    "lists_models": true,
    "requires_key": true,
    "uses_http": true
  },
  "chrome_builtin": {
    "base_url": "",
    "label": "Chrome built-in",
    "lists_models": false,
    "requires_key": false,
    "uses_http": false
  },
  "gemini": {
    "base_url": "https://generativelanguage.googleapis.com/v1beta",
    "label": "Gemini",
    "lists_models": true,
    "requires_key": true,
    "uses_http": true
  },
  "ollama": {
    "base_url": "http://localhost:11434",
    "label": "Ollama",
    "lists_models": true,
    "requires_key": false,
    "uses_http": true
  },
  "openai_compatible": {
    "base_url": "http://localhost:11434/v1",
    "label": "OpenAI-compatible",
    "lists_models": true,
    "requires_key": false,
    "uses_http": true
  }
});

/** Each value of the setting "Search provider", in the order to list them: its label, default base URL (Wikipedia's follows the page's language) and what it needs. */
export const SEARCH_PROVIDERS = Object.freeze({
  "brave": {
    "base_url": "https://api.search.brave.com",
    "label": "Brave Search",
    "needs_base_url": false,
    "needs_key": true
  },
  "off": {
    "base_url": "",
    "label": "Off",
    "needs_base_url": false,
    "needs_key": false
  },
  "searxng": {
    "base_url": "",
    "label": "SearXNG",
    "needs_base_url": true,
    "needs_key": false
  },
  "tavily": {
    "base_url": "https://api.tavily.com",
    "label": "Tavily",
    "needs_base_url": false,
    "needs_key": true
  },
  "wikipedia": {
    "base_url": "https://en.wikipedia.org",
    "label": "Wikipedia",
    "needs_base_url": false,
    "needs_key": false
  }
});

/** The answers to the popup's offer to search the web (`answer` of `search_offer`), by name. */
export const SEARCH_OFFER_ANSWERS = Object.freeze({
  "NOT_NOW": "not_now",
  "TURN_ON": "turn_on"
});

/** The settings a fresh install starts from. */
export const DEFAULT_SETTINGS = Object.freeze({
  "api_key": "",
  "base_url": "http://localhost:11434/v1",
  "compact_at_percent": 80,
  "context_window": 0,
  "input_ack_timeout_secs": 300,
  "input_answer_timeout_secs": 1800,
  "model": "",
  "model_deadline_secs": 300,
  "prices": {
    "cached_input": null,
    "input": null,
    "output": null
  },
  "profiles": {},
  "provider": "openai_compatible",
  "reading_level": "standard",
  "search_api_key": "",
  "search_base_url": "",
  "search_offered": false,
  "search_provider": "off",
  "stream": true,
  "token_budget": 32000,
  "version": 3
});
