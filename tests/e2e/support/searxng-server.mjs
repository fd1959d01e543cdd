// A scripted SearXNG instance on loopback: `GET /search?q=...&format=json` answered in the
// shape of SearXNG's search API (https://docs.searxng.org/dev/search_api.html): `query`,
// `number_of_results`, `results[]` of {url, title, content, engine, engines, positions,
// score, category}, and the empty `answers`, `corrections`, `infoboxes`, `suggestions` and
// `unresponsive_engines` lists. Like a real instance it sends no CORS headers (the
// extension's host permission covers loopback).
//
// Scriptable per query: `results` maps a query to its results ([{title, url, content}]),
// `fallback` answers any other query. `failures` maps a query (or '*' for any) to a queue of
// failures served before the results, each one of:
//   'json_disabled'  403 with SearXNG's HTML error page (JSON is not in `search.formats`)
//   'server_error'   500 with a short HTML body
//   'not_json'       200 with an HTML page instead of JSON
// Every request is recorded in `requests` (URL objects) with `queries()` listing the `q`s.

import { createServer } from 'node:http';

/** The results a query gets when the script says nothing about it. */
export const FALLBACK = [
  {
    title: 'SearXNG - a privacy-respecting metasearch engine',
    url: 'https://docs.searxng.org/',
    content: 'SearXNG is a free internet metasearch engine which aggregates results from search services.',
  },
];

const HTML_PAGE = '<!DOCTYPE html><html><head><title>SearXNG</title></head><body><p>%s</p></body></html>';

/** One result as a SearXNG instance lists it. */
function shaped({ title, url, content = '', engine = 'duckduckgo' }, position) {
  const parsed = new URL(url);
  return {
    url,
    title,
    content,
    engine,
    parsed_url: [parsed.protocol.replace(':', ''), parsed.host, parsed.pathname, '', parsed.search.slice(1), ''],
    template: 'default.html',
    engines: [engine],
    positions: [position],
    score: 1 / position,
    category: 'general',
  };
}

/**
 * Starts the server; `url` is its base (what "Search base URL" takes).
 * @param {{results?: Record<string, object[]>, fallback?: object[], failures?: Record<string, string[]>}} [script]
 */
export async function startScriptedSearxng({ results = {}, fallback = FALLBACK, failures = {} } = {}) {
  const state = { results: { ...results }, fallback, failures: structuredClone(failures) };
  const requests = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    requests.push(url);
    const html = (status, text) => {
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
      res.end(HTML_PAGE.replace('%s', text));
    };
    if (url.pathname !== '/search') {
      html(404, 'Not Found');
      return;
    }
    const q = url.searchParams.get('q') ?? '';
    const failure = (state.failures[q] ?? state.failures['*'] ?? []).shift();
    if (failure === 'json_disabled' || (!failure && url.searchParams.get('format') !== 'json')) {
      html(403, 'Forbidden');
      return;
    }
    if (failure === 'server_error') {
      html(500, 'Internal Server Error');
      return;
    }
    if (failure === 'not_json') {
      html(200, `Results for ${q}`);
      return;
    }
    const listed = (state.results[q] ?? state.fallback).map((r, i) => shaped(r, i + 1));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({
      query: q,
      number_of_results: 0,
      results: listed,
      answers: [],
      corrections: [],
      infoboxes: [],
      suggestions: [],
      unresponsive_engines: [],
    }));
  });
  await new Promise((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    /** The `q` of every search request so far. */
    queries: () => requests.filter((u) => u.pathname === '/search').map((u) => u.searchParams.get('q')),
    /** Sets the results of `query`. */
    answer(query, list) {
      state.results[query] = list;
    },
    /** Queues failures ('json_disabled', 'server_error', 'not_json') for `query` ('*': any). */
    fail(query, ...kinds) {
      state.failures[query] = [...(state.failures[query] ?? []), ...kinds];
    },
    close: () => new Promise((done) => server.close(() => done())),
  };
}
