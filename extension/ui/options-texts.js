// @ts-check
// The options page's words: how each provider's and search provider's fields are explained.

/** How each provider's fields are explained (its defaults come from protocol.gen.js). */
export const PROVIDER_TEXTS = {
  openai_compatible: {
    hint: 'Any server that speaks OpenAI\'s chat completions: OpenAI, OpenRouter, Groq, LM Studio, llama.cpp\'s server, vLLM, or Ollama\'s /v1.',
    urlHint: 'The address that serves /chat/completions, including the version path: e.g. http://localhost:11434/v1 (Ollama), http://localhost:1234/v1 (LM Studio) or https://api.openai.com/v1.',
    keyHint: 'Leave empty for local servers that need none. Stored on this device only.',
    modelPlaceholder: 'e.g. llama3.2 or gpt-4o-mini',
  },
  ollama: {
    hint: 'Ollama\'s own API on this computer (or your network). On this computer KnowledgeLens gets past Ollama\'s origin check by itself; on another computer Ollama must allow the extension\'s origin: Test connection explains how.',
    urlHint: 'The server\'s root, without /v1: e.g. http://localhost:11434.',
    keyHint: 'Ollama needs no key; leave empty unless a proxy in front of it asks for one.',
    modelPlaceholder: 'e.g. llama3.2',
  },
  anthropic: {
    hint: 'Claude models through Anthropic\'s Messages API. Needs an API key.',
    urlHint: 'Keep https://api.anthropic.com/v1 unless you use a proxy.',
    keyHint: 'Required: a key from console.anthropic.com. Stored on this device only.',
    modelPlaceholder: 'e.g. claude-sonnet-4-5',
  },
  gemini: {
    hint: 'Gemini models through Google\'s Gemini API. Needs an API key.',
    urlHint: 'Keep https://generativelanguage.googleapis.com/v1beta unless you use a proxy.',
    keyHint: 'Required: a key from aistudio.google.com. Stored on this device only.',
    modelPlaceholder: 'e.g. gemini-2.5-flash',
  },
  chrome_builtin: {
    hint: 'Chrome\'s own on-device model (Gemini Nano, through the Prompt API): no key, and nothing leaves this computer. It needs a recent Chrome on a capable device: Test connection tells you what is missing.',
    urlHint: '',
    keyHint: '',
    modelPlaceholder: '',
  },
};

/** What each provider starts from, and how its fields are explained. */
/** How each search provider's fields are explained (defaults from protocol.gen.js). */
export const SEARCH_TEXTS = {
  off: {
    hint: 'No web search: questions are answered from the page and the model alone.',
    urlHint: 'Used once you choose a search provider.',
    keyHint: 'Used by Brave Search and Tavily only.',
  },
  wikipedia: {
    hint: 'Wikipedia, in the page\'s language (else the browser\'s). No key and no account; the question is sent to Wikipedia.',
    urlHint: 'Leave empty for Wikipedia; or the address of another MediaWiki, e.g. https://en.wikipedia.org.',
    keyHint: 'Wikipedia needs no key.',
  },
  searxng: {
    hint: 'Your own SearXNG instance, with JSON output turned on (search.formats: [html, json]).',
    urlHint: 'Required: the address of your instance, e.g. http://localhost:8888.',
    keyHint: 'SearXNG needs no key.',
  },
  brave: {
    hint: 'The Brave Search API. Needs an API key.',
    urlHint: 'Leave empty for https://api.search.brave.com unless you use a proxy.',
    keyHint: 'Required: a key from api-dashboard.search.brave.com. Stored on this device only.',
  },
  tavily: {
    hint: 'Tavily\'s search API. Needs an API key.',
    urlHint: 'Leave empty for https://api.tavily.com unless you use a proxy.',
    keyHint: 'Required: a key from app.tavily.com. Stored on this device only.',
  },
};
