// A scripted MediaWiki on loopback: the two Action API queries KnowledgeLens sends
// (`list=search` for hits, `prop=extracts` for plain-text intros), answered from a fixed set
// of pages in the shapes https://www.mediawiki.org/wiki/API:Search and
// https://www.mediawiki.org/wiki/Extension:TextExtracts#API document (formatversion=2), with
// the anonymous-CORS header that `origin=*` asks for. Every request is recorded.
// By default every search finds all of `pages`; `searches` (or `answer(query, pages)`) gives
// a query its own pages (title -> intro), found in that order.

import { createServer } from 'node:http';

/** The pages this wiki knows: title -> intro. */
export const PAGES = {
  'Web browser': 'A web browser is an application for accessing websites.',
  Chromium: 'Chromium is a free and open-source web browser project.',
};

/** Starts the server; `url` is its base (what "Search base URL" takes), `requests` what it saw. */
export async function startScriptedMediaWiki({ pages = PAGES, searches = {} } = {}) {
  const requests = [];
  const byQuery = { ...searches };
  const intro = (title) => Object.values(byQuery).find((p) => title in p)?.[title] ?? pages[title];
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    requests.push(url);
    const params = url.searchParams;
    const send = (status, body) => {
      res.writeHead(status, {
        'content-type': 'application/json; charset=utf-8',
        'access-control-allow-origin': '*',
      });
      res.end(JSON.stringify(body));
    };
    if (url.pathname !== '/w/api.php' || params.get('action') !== 'query') {
      send(404, { error: { code: 'badpath', info: `No API at ${url.pathname}` } });
    } else if (params.get('list') === 'search') {
      const limit = Number(params.get('srlimit') ?? 10);
      const found = byQuery[params.get('srsearch') ?? ''] ?? pages;
      const search = Object.keys(found).slice(0, limit).map((title, i) => ({
        ns: 0,
        title,
        pageid: i + 1,
        snippet: `<span class="searchmatch">${title}</span>`,
      }));
      send(200, { batchcomplete: true, query: { searchinfo: { totalhits: search.length }, search } });
    } else if (params.get('prop') === 'extracts') {
      const titles = (params.get('titles') ?? '').split('|');
      send(200, {
        batchcomplete: true,
        query: {
          pages: titles.map((title, i) => ({ pageid: i + 1, ns: 0, title, extract: intro(title) ?? '' })),
        },
      });
    } else {
      send(200, { error: { code: 'badvalue', info: 'Unrecognized query.' } });
    }
  });
  await new Promise((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    /** Gives `query` its own pages (title -> intro). */
    answer(query, found) {
      byQuery[query] = found;
    },
    close: () => new Promise((done) => server.close(() => done())),
  };
}
