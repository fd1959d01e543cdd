// The answer renderer (extension/markdown.js) under node --test, on jsdom's DOM.
//
// jsdom rather than linkedom: these tests are about what the DOM ends up holding (attributes,
// element kinds, isEqualNode, replaced nodes), and jsdom follows the DOM spec closely enough
// that a pass here means the same in Chromium; linkedom is lighter but cuts corners there.
// It is a devDependency only; the browser test (tests/e2e/markdown.test.mjs) runs in Chromium.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { JSDOM } from 'jsdom';
import { createStreamRenderer, renderMarkdown, safeHref } from '../../extension/markdown.js';

const { document } = new JSDOM('<!doctype html><body></body>').window;
const SOURCES = [
  { id: '1', kind: 'web', title: 'Tides explained', url: 'https://example.org/tides' },
  { id: 'p1', kind: 'page', title: 'The article', url: 'http://127.0.0.1/a' },
  { id: '2', kind: 'web', title: 'Bad', url: 'javascript:alert(1)' },
];

const render = (text, sources = SOURCES) => {
  const div = document.createElement('div');
  div.append(renderMarkdown(text, { sources, document }));
  return div;
};

/** A plain structure of a node tree: [tag, {attrs}, ...children] or the text of a text node. */
function shape(node) {
  if (node.nodeType === 3) return node.data;
  const attrs = Object.fromEntries([...node.attributes].map((a) => [a.name, a.value]).sort());
  return [node.nodeName.toLowerCase(), attrs, ...[...node.childNodes].map(shape)];
}
const shapes = (div) => [...div.childNodes].map(shape);

/** Fails when anything in `root` could run or load: the renderer's safety contract. */
function assertInert(root, input) {
  const why = (msg) => `${msg} for input ${JSON.stringify(input)}`;
  for (const node of root.querySelectorAll('*')) {
    const tag = node.localName;
    assert.ok(!['script', 'iframe', 'img', 'object', 'embed', 'svg', 'style', 'link', 'form', 'input',
      'frame', 'video', 'audio', 'source', 'base', 'meta'].includes(tag), why(`<${tag}> element`));
    for (const { name, value } of node.attributes) {
      assert.ok(!name.startsWith('on'), why(`${name} attribute`));
      assert.ok(!['src', 'srcset', 'srcdoc', 'action', 'formaction', 'xlink:href'].includes(name), why(`${name} attribute`));
      if (name === 'href') {
        assert.ok(/^(https?:|mailto:|#source-)/.test(value), why(`href ${value}`));
      }
    }
    if (tag === 'a' && node.getAttribute('target') === '_blank') {
      assert.equal(node.getAttribute('rel'), 'noopener noreferrer', why('rel'));
    }
  }
}

// ---- constructs ----------------------------------------------------------------------------

test('paragraphs, emphasis, strong, strikethrough, line breaks', () => {
  const div = render('One *em* and **strong** and ~~gone~~.  \nNext line.\n\nSecond _para_.');
  assert.deepEqual(shapes(div), [
    ['p', {}, 'One ', ['em', {}, 'em'], ' and ', ['strong', {}, 'strong'], ' and ', ['del', {}, 'gone'], '.',
      ['br', {}], 'Next line.'],
    ['p', {}, 'Second ', ['em', {}, 'para'], '.'],
  ]);
});

test('headings of every depth', () => {
  const div = render('# A\n## B\n### C\n#### D\n##### E\n###### F\n\nSetext\n======');
  assert.deepEqual([...div.children].map((h) => `${h.localName}:${h.textContent}`),
    ['h1:A', 'h2:B', 'h3:C', 'h4:D', 'h5:E', 'h6:F', 'h1:Setext']);
});

test('unordered, ordered and nested lists, and task items', () => {
  const div = render('- a\n- b\n  1. b1\n  2. b2\n     - deep\n\n3. three\n4. four\n\n- [x] done\n- [ ] todo');
  const [ul, ol, tasks] = div.children;
  assert.equal(ul.localName, 'ul');
  assert.deepEqual([...ul.children].map((li) => li.localName), ['li', 'li']);
  const nested = ul.children[1].querySelector('ol');
  assert.ok(nested, 'nested ordered list');
  assert.deepEqual([...nested.children].map((li) => li.firstChild.textContent), ['b1', 'b2']);
  assert.equal(nested.querySelector('ul > li').textContent, 'deep');
  assert.equal(ol.localName, 'ol');
  assert.equal(ol.getAttribute('start'), '3');
  const boxes = [...tasks.querySelectorAll('[role="img"]')].map((b) => b.getAttribute('aria-label'));
  assert.deepEqual(boxes, ['Done', 'Not done']);
  assert.equal(tasks.children[0].textContent, '\u2611 done');
});

test('loose list items hold paragraphs', () => {
  const div = render('- one\n\n- two');
  assert.deepEqual(shapes(div), [['ul', {}, ['li', {}, ['p', {}, 'one']], ['li', {}, ['p', {}, 'two']]]]);
});

test('inline code and code blocks keep their text verbatim', () => {
  const div = render('Use `a<b && c>d` here.\n\n```js\nif (a < b) { alert("x"); }\n```\n\n    indented <i>\n');
  assert.deepEqual(shapes(div), [
    ['p', {}, 'Use ', ['code', {}, 'a<b && c>d'], ' here.'],
    ['pre', {}, ['code', { class: 'language-js' }, 'if (a < b) { alert("x"); }']],
    ['pre', {}, ['code', {}, 'indented <i>']],
  ]);
});

test('a hostile code block language is dropped', () => {
  const div = render('```x" onclick="alert(1)\ncode\n```');
  assert.deepEqual(shapes(div), [['pre', {}, ['code', {}, 'code']]]);
});

test('block quotes, nested, with other blocks inside', () => {
  const div = render('> Quote *one*\n>\n> - item\n>\n> > inner');
  assert.deepEqual(shapes(div), [['blockquote', {},
    ['p', {}, 'Quote ', ['em', {}, 'one']],
    ['ul', {}, ['li', {}, 'item']],
    ['blockquote', {}, ['p', {}, 'inner']],
  ]]);
});

test('tables with header, alignment and inline content', () => {
  const div = render('| Name | Value | Mid |\n|:-----|------:|:---:|\n| `x` | **1** | m |\n| y | 2 |');
  const table = div.firstChild;
  assert.equal(table.localName, 'table');
  assert.deepEqual([...table.querySelectorAll('th')].map((th) => [th.textContent, th.style.textAlign]),
    [['Name', 'left'], ['Value', 'right'], ['Mid', 'center']]);
  const rows = [...table.querySelectorAll('tbody tr')].map((tr) => [...tr.children].map((td) => td.textContent));
  assert.deepEqual(rows, [['x', '1', 'm'], ['y', '2', '']]);
  assert.equal(table.querySelector('tbody td code').textContent, 'x');
  assert.equal(table.querySelector('tbody td strong').textContent, '1');
});

test('links: http, https, mailto and autolinks open in a new tab', () => {
  const div = render('[a](https://example.org/x?q=1 "T") [b](http://127.0.0.1:8080/) [c](mailto:me@example.org) ' +
    '<https://auto.example> www.example.com');
  const links = [...div.querySelectorAll('a')].map((a) =>
    [a.textContent, a.getAttribute('href'), a.getAttribute('target'), a.getAttribute('rel')]);
  const nt = ['_blank', 'noopener noreferrer'];
  assert.deepEqual(links, [
    ['a (example.org)', 'https://example.org/x?q=1', ...nt],
    ['b (127.0.0.1:8080)', 'http://127.0.0.1:8080/', ...nt],
    ['c (me@example.org)', 'mailto:me@example.org', ...nt],
    ['https://auto.example', 'https://auto.example/', ...nt],
    ['www.example.com', 'http://www.example.com/', ...nt],
  ]);
});

// ---- links the model chose ------------------------------------------------------

test('a link whose text is not its address shows the host beside its text, inside the link', () => {
  const div = render('Read [the docs](https://docs.example.org/guide?x=1), not [https://bank.example](https://evil.example/login). ' +
    '![a chart](https://img.example/c.png)');
  const [docs, liar, image] = div.querySelectorAll('a');
  assert.deepEqual(shape(docs), ['a', { href: 'https://docs.example.org/guide?x=1', rel: 'noopener noreferrer', target: '_blank' },
    'the docs', ['span', { class: 'md-link-host' }, ' (docs.example.org)']]);
  // Text that looks like another address names where the link really goes.
  assert.equal(liar.textContent, 'https://bank.example (evil.example)');
  assert.equal(image.textContent, 'a chart (img.example)');
  // A host in another script is shown as the browser reads it (punycode), not as a look-alike.
  assert.equal(render('[shop](https://\u0430pple.example/)').textContent, 'shop (xn--pple-43d.example)');
});

test('a link whose text is its address, with or without the scheme, does not repeat the host', () => {
  const div = render('<https://auto.example> www.example.com [https://example.org/x](https://example.org/x) ' +
    '[example.org/x/](https://example.org/x) [Example.org](https://www.example.org/) <me@example.org> ' +
    '[HTTP://Example.org/A](http://example.org/A) ![](https://img.example/d.png)');
  assert.equal(div.querySelectorAll('a').length, 8);
  assert.equal(div.querySelector('.md-link-host'), null, div.innerHTML);
});

test('the title the model gave a link or an image is never rendered', () => {
  const div = render('[a](https://example.org/x "Safe, click me") ![b](https://example.org/i.png "Trust me") ' +
    '[c][ref]\n\n[ref]: https://example.org/r "Also safe"');
  assert.equal(div.querySelectorAll('a').length, 3);
  assert.equal(div.querySelectorAll('[title]').length, 0);
  assert.doesNotMatch(div.textContent, /safe|trust/i);
});

// The page and conversation text the view holds: a passage, and the question.
const PASSAGE = 'Bellhaven Light stands on a basalt stack eleven kilometres off the Marrow coast.\n\n' +
  'The lamp at Bellhaven burned 412 litres of\ncolza oil each winter.';
const QUESTION = 'Which oil did the lamp burn each winter, and how much of it?';
const KNOWN = `${QUESTION}\n${PASSAGE}`;
const RUN_41 = 'lamp at Bellhaven burned 412 litres of co';
const RUN_40 = RUN_41.slice(0, 40);
// 81 characters and more of the passage (a path is held to more than 80).
const RUN_81 = 'Bellhaven Light stands on a basalt stack eleven kilometres off the Marrow coast. The lamp';
const withKnown = (text, known = KNOWN, urls = []) => {
  const div = document.createElement('div');
  div.append(renderMarkdown(text, { sources: [], known, urls, document }));
  return div;
};

test('a link whose host, query or fragment holds more than 40 characters of known text, or its path more than 80, is text', () => {
  assert.equal(RUN_41.length, 41);
  const encoded = encodeURIComponent(RUN_41.toUpperCase()).replace(/%20/g, '+');
  const cases = [
    `[log](https://collect.example/log?d=${encoded}&x=1)`, // query, other case, + for spaces
    `[log](https://collect.example/log?d=${encodeURIComponent(encodeURIComponent(RUN_41))})`, // encoded twice
    `[log](<https://collect.example/#${QUESTION}>)`, // fragment: the question
    `[log](https://collect.example/p/${RUN_81.replace(/ /g, '_')})`, // path, _ for spaces
    `[log](https://collect.example/${RUN_81.replace(/ /g, '-').replace('-stack-', '/stack/')})`, // across a /
    `[log](https://${RUN_41.replace(/ /g, '-')}.collect.example/)`, // a host name
    `![log](https://collect.example/i.png?${encodeURIComponent(RUN_41)})`, // an image's address
  ];
  for (const text of cases) {
    const div = withKnown(text);
    assert.equal(div.querySelector('a'), null, text);
    assertInert(div, text);
    assert.match(div.textContent, /^log \(link to [^ ]*collect\.example removed: it carried text from this session\)$/, text);
  }
});

test('a 40-character run of known text, an unrelated long query, or an address the known text spells out stay links', () => {
  assert.equal(RUN_40.length, 40);
  const known = `${KNOWN}\nThe log is at https://docs.example.org/keepers/agnes-tull/logbook-of-the-light-1902-1931 online.`;
  const div = withKnown([
    `[a](https://collect.example/log?d=${encodeURIComponent(RUN_40)}&x=1)`,
    '[b](https://search.example/?q=tides+and+the+moon+explained+for+children+with+pictures+and+diagrams)',
    '[c](https://docs.example.org/keepers/agnes-tull/logbook-of-the-light-1902-1931)',
  ].join(' '), known);
  assert.deepEqual([...div.querySelectorAll('a')].map((a) => a.firstChild.data), ['a', 'b', 'c']);
  // With no known text given, nothing is held back.
  assert.equal(withKnown(`[a](https://collect.example/log?d=${encodeURIComponent(RUN_41)})`, '').querySelectorAll('a').length, 1);
});

test('links are checked quickly against a long known text', () => {
  const words = ['tide', 'moon', 'salt', 'lamp', 'oil', 'keeper', 'stack', 'coast', 'storm', 'glass'];
  let known = '';
  for (let i = 0; known.length < 400_000; i++) known += `${words[i % 7]} ${words[i % 10]} ${i} `;
  const links = Array.from({ length: 50 }, (_, i) => `[l${i}](https://x.example/?q=${'unrelated+words+'.repeat(8)}${i})`).join(' ');
  const started = performance.now();
  for (let i = 0; i < 20; i++) withKnown(links, known);
  const took = performance.now() - started;
  assert.equal(withKnown(links, known).querySelectorAll('a').length, 50);
  assert.ok(took < 3000, `${Math.round(took)} ms for 20 renders of 50 links against 400 KB`);
});

test('horizontal rules and named entities', () => {
  const div = render('AT&amp;T &lt;b&gt; &#65;\n\n---\n\nafter');
  assert.deepEqual(shapes(div), [['p', {}, 'AT&T <b> A'], ['hr', {}], ['p', {}, 'after']]);
});

test('images are not loaded: alt text, or a link when the URL is safe', () => {
  const div = render('![a chart](https://example.org/c.png) ![](https://example.org/d.png) ![x](javascript:alert(1))');
  assert.equal(div.querySelector('img'), null);
  assert.deepEqual([...div.querySelectorAll('a')].map((a) => [a.textContent, a.getAttribute('href')]), [
    ['a chart (example.org)', 'https://example.org/c.png'],
    ['https://example.org/d.png', 'https://example.org/d.png'],
  ]);
  assert.match(div.textContent, /x$/);
});

test('empty and whitespace-only text render nothing', () => {
  for (const text of ['', '   ', '\n\n\n', undefined, null]) {
    assert.equal(render(text).childNodes.length, 0, JSON.stringify(text));
  }
});

// ---- hostile input ---------------------------------------------------------------------------

const HOSTILE = [
  '<img src=x onerror=alert(1)>',
  'text <img src=x onerror=alert(1)> inline',
  '<script>alert(1)</script>',
  '<iframe src="javascript:alert(1)"></iframe>',
  '<svg onload=alert(1)>',
  '<a href="javascript:alert(1)">click</a>',
  '<div onclick="alert(1)">\n*md*\n</div>',
  '[x](javascript:alert(1))',
  '[x](JaVaScRiPt:alert(1))',
  '[x]( javascript:alert(1) )',
  '[x](java&#09;script:alert(1))',
  '[x](&#106;avascript:alert(1))',
  '[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)',
  '[x](vbscript:msgbox(1))',
  '[x](file:///etc/passwd)',
  '[x](/relative) [y](#frag) [z](//evil.example)',
  '<javascript:alert(1)>',
  '![x](javascript:alert(1))',
  '![x](https://example.org/a.png" onerror="alert(1))',
  '[ref]\n\n[ref]: javascript:alert(1)',
  '```html\n<script>alert(1)</script>\n```',
  '| <img src=x onerror=alert(1)> | [a](javascript:b) |\n|---|---|\n| <script>x</script> | c |',
  '> <style>body{display:none}</style>',
  '- <object data=x></object>',
  '<details open ontoggle=alert(1)>',
  '[<img src=x onerror=alert(1)>](https://example.org)',
];

test('raw HTML and unsafe links come out as inert text', () => {
  for (const input of HOSTILE) {
    const div = render(input);
    assertInert(div, input);
  }
});

test('raw HTML is shown as the text the model wrote', () => {
  const div = render('Before <img src=x onerror=alert(1)> after\n\n<script>alert(1)</script>');
  assert.deepEqual(shapes(div), [
    ['p', {}, 'Before ', '<img src=x onerror=alert(1)>', ' after'],
    ['pre', { class: 'md-raw' }, '<script>alert(1)</script>'],
  ]);
});

test('an unsafe link keeps its text and loses its target', () => {
  const div = render('see [the docs](javascript:alert(1)) and [data](data:text/html,x)');
  assert.equal(div.querySelector('a'), null);
  assert.equal(div.textContent, 'see the docs and data');
});

test('safeHref allows http, https and mailto only', () => {
  assert.equal(safeHref('https://a.example/b'), 'https://a.example/b');
  assert.equal(safeHref(' http://a.example '), 'http://a.example/');
  assert.equal(safeHref('mailto:x@y.z'), 'mailto:x@y.z');
  for (const bad of ['javascript:alert(1)', ' jav\tascript:x', 'data:,x', 'blob:https://a/b', '/rel', '#x', '',
    'chrome-extension://abc/popup.html', 'ftp://x', null, undefined, 42]) {
    assert.equal(safeHref(bad), null, String(bad));
  }
});

test('the renderer never builds HTML from strings', () => {
  for (const file of ['markdown.js', 'links.js']) {
    const source = readFileSync(new URL(`../../extension/${file}`, import.meta.url), 'utf8');
    for (const sink of ['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'document.write', 'DOMParser',
      'createContextualFragment', 'Parser', 'parse(', 'srcdoc']) {
      assert.ok(!source.includes(sink), `${file} mentions ${sink}`);
    }
  }
});

// ---- citations -----------------------------------------------------------------------------

test('web and page citations link to their sources, with a name that says so', () => {
  const div = render('Tides rise [1]. The page says so [p1].');
  const [web, page] = div.querySelectorAll('a');
  assert.deepEqual(shape(web), ['a', {
    'aria-label': 'Source 1: Tides explained', class: 'md-citation', href: 'https://example.org/tides',
    rel: 'noopener noreferrer', target: '_blank',
  }, '[1]']);
  assert.deepEqual(shape(page), ['a', { 'aria-label': 'Source p1: The article', class: 'md-citation', href: '#source-p1' }, '[p1]']);
  assert.equal(div.textContent, 'Tides rise [1]. The page says so [p1].');
});

test('citations naming no given source, or the wrong kind, stay text', () => {
  const div = render('Unknown [7] and [p9], wrong kind [p2]... [2] has a javascript: URL.',
    [...SOURCES, { id: 'p2', kind: 'web', title: 'x', url: 'https://x.example' }]);
  assert.equal(div.querySelector('a'), null);
  assert.equal(div.textContent, 'Unknown [7] and [p9], wrong kind [p2]... [2] has a javascript: URL.');
  assert.equal(render('No sources at all [1] [p1].', []).querySelector('a'), null);
});

test('citations back to back, in emphasis, lists and tables; not in code or links', () => {
  const div = render('**Both [1][p1]**\n\n- item [1]\n\n| a |\n|---|\n| [p1] |\n\n`[1]` [link [1]](https://x.example)');
  const cites = [...div.querySelectorAll('a.md-citation')].map((a) => a.textContent);
  assert.deepEqual(cites, ['[1]', '[p1]', '[1]', '[p1]']);
  assert.equal(div.querySelector('code').textContent, '[1]');
  assert.equal(div.querySelectorAll('a a').length, 0);
  assert.equal(div.querySelector('a[href="https://x.example/"]').textContent, 'link [1] (x.example)');
});

test('numeric source ids match their citation text', () => {
  const div = render('See [3].', [{ id: 3, kind: 'web', title: 'Three', url: 'https://three.example' }]);
  assert.equal(div.querySelector('a').getAttribute('aria-label'), 'Source 3: Three');
});

test('hostile source titles end up as text in the name only', () => {
  const div = render('x [1]', [{ id: '1', kind: 'web', title: '"><img src=x onerror=alert(1)>', url: 'https://a.example' }]);
  assertInert(div, 'title');
  assert.equal(div.querySelector('a').getAttribute('aria-label'), 'Source 1: "><img src=x onerror=alert(1)>');
});

// ---- streaming -----------------------------------------------------------------------------

/** A manual animation-frame clock. */
function frames() {
  const queue = new Map();
  let next = 1;
  return {
    requestFrame: (cb) => { queue.set(next, cb); return next++; },
    cancelFrame: (id) => queue.delete(id),
    pending: () => queue.size,
    run() {
      const due = [...queue.values()];
      queue.clear();
      due.forEach((cb) => cb());
    },
  };
}

function streamer(options = {}) {
  const container = document.createElement('div');
  const clock = frames();
  const r = createStreamRenderer(container, { sources: SOURCES, ...clock, ...options });
  return { container, clock, r };
}

test('updates within one frame render once, with the latest text', () => {
  const { container, clock, r } = streamer();
  r.update('Hel');
  r.update('Hello');
  r.update('Hello *wor');
  assert.equal(clock.pending(), 1);
  assert.equal(container.childNodes.length, 0);
  clock.run();
  assert.equal(container.textContent, 'Hello *wor');
  r.update('Hello *world*');
  clock.run();
  assert.deepEqual(shapes(container), [['p', {}, 'Hello ', ['em', {}, 'world']]]);
});

test('completed blocks keep their nodes while the last block grows', () => {
  const { container, clock, r } = streamer();
  r.update('# Title\n\nFirst para.\n\n- a');
  clock.run();
  const [h1, p] = container.children;
  for (const more of ['\n- b', '\n- c [1]', '\n\nTail', ' grows']) {
    r.update(`# Title\n\nFirst para.\n\n- a${more}`);
    clock.run();
    assert.equal(container.children[0], h1);
    assert.equal(container.children[1], p);
  }
});

test('finish makes the DOM equal a one-shot render, replacing the draft where it differs', () => {
  const { container, clock, r } = streamer();
  const draft = 'Para [1] [9].\n\n> quote\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nlast';
  r.update(draft);
  clock.run();
  const firstQuote = container.children[1];
  const final = 'Para [1].\n\n> quote\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nlast [p1]';
  r.finish(final);
  assert.equal(clock.pending(), 0);
  assert.deepEqual(shapes(container), shapes(render(final)));
  assert.equal(container.children[1], firstQuote, 'an unchanged block keeps its node');
});

test('finish may bring the sources: only the blocks with citations change', () => {
  const container = document.createElement('div');
  const clock = frames();
  const r = createStreamRenderer(container, { ...clock }); // the draft streams without sources
  const text = '# Tides\n\nThe moon pulls [1].\n\nNo citation here.';
  r.update(text);
  clock.run();
  const [h1, cited, plain] = container.children;
  assert.equal(cited.querySelector('a'), null);
  r.finish(text, { sources: SOURCES });
  assert.deepEqual(shapes(container), shapes(render(text)));
  assert.equal(container.children[0], h1);
  assert.notEqual(container.children[1], cited);
  assert.equal(container.children[2], plain);
  assert.equal(container.querySelector('a.md-citation').getAttribute('href'), 'https://example.org/tides');
});

test('finish takes link definitions further down into account', () => {
  const { container, clock, r } = streamer();
  const text = 'See [docs].\n\nMore.\n\n[docs]: https://docs.example';
  r.update(text.slice(0, 20));
  clock.run();
  r.finish(text);
  assert.deepEqual(shapes(container), shapes(render(text)));
  assert.equal(container.querySelector('a').getAttribute('href'), 'https://docs.example/');
});

test('with draftLinks off, a draft\'s links are text with their host until finish, which checks them against the known text', () => {
  const { container, clock, r } = streamer({ draftLinks: false, known: QUESTION });
  const text = `See [the docs](https://docs.example.org/a) and [log](https://collect.example/?d=${encodeURIComponent(RUN_41)}).`;
  r.update(text);
  clock.run();
  assert.equal(container.querySelector('a'), null, 'a draft link is live');
  assert.equal(container.textContent,
    'See the docs (docs.example.org) and log (collect.example).');
  // The final render: live links, checked against the known text the finished view holds.
  r.finish(text, { known: KNOWN });
  assert.deepEqual(shapes(container), shapes(withKnown(text)));
  assert.deepEqual([...container.querySelectorAll('a')].map((a) => a.textContent), ['the docs (docs.example.org)']);
});

test('finish without any frame, and a shrinking text, both end equal to a one-shot render', () => {
  const a = streamer();
  a.r.update('never shown');
  a.r.finish('# Done\n\ntext');
  assert.deepEqual(shapes(a.container), shapes(render('# Done\n\ntext')));
  const b = streamer();
  b.r.update('one\n\ntwo\n\nthree');
  b.clock.run();
  b.r.finish('one');
  assert.deepEqual(shapes(b.container), [['p', {}, 'one']]);
});

test('the renderer empties its container first', () => {
  const container = document.createElement('div');
  container.append(document.createElement('span'));
  const clock = frames();
  const r = createStreamRenderer(container, { ...clock });
  assert.equal(container.childNodes.length, 0);
  r.finish('x');
  assert.deepEqual(shapes(container), [['p', {}, 'x']]);
});

// ---- fuzz ----------------------------------------------------------------------------------

/** mulberry32: a small seeded PRNG, so a failure prints a seed that reproduces it. */
function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = ['*', '**', '_', '`', '```', '~', '#', '# ', '>', '> ', '-', '- ', '+ ', '1. ', '2) ', '|', '|---|',
  ':', '[', ']', '(', ')', '!', '<', '>', '&', ';', '&amp;', '\\', '\n', '\n\n', ' ', '    ', '\t', '=', '===',
  'a', 'word', '[1]', '[p1]', '[p9]', 'http://x.example', 'javascript:', 'mailto:a@b.c', '<img src=x onerror=y>',
  '<script>', '</script>', '"', "'", '[x]: http://d.example', '- [ ] ', '\u00e9', '\u{1F600}', '\r\n', '\0'];

function randomMarkdown(next, length) {
  let s = '';
  while (s.length < length) s += PIECES[Math.floor(next() * PIECES.length)];
  return s;
}

test('random markdown punctuation never throws and is always inert', () => {
  const seed = Number(process.env.KL_FUZZ_SEED ?? 12);
  const next = rng(seed);
  for (let i = 0; i < 400; i++) {
    const input = randomMarkdown(next, 1 + Math.floor(next() * 200));
    let div;
    assert.doesNotThrow(() => { div = render(input); }, `seed ${seed}, case ${i}: ${JSON.stringify(input)}`);
    assertInert(div, input);
  }
});

test('random text streamed in random pieces ends equal to a one-shot render', () => {
  const seed = Number(process.env.KL_FUZZ_SEED ?? 34);
  const next = rng(seed);
  for (let i = 0; i < 60; i++) {
    const input = randomMarkdown(next, 50 + Math.floor(next() * 400));
    const { container, clock, r } = streamer();
    let at = 0;
    while (at < input.length) {
      at = Math.min(input.length, at + 1 + Math.floor(next() * 12));
      r.update(input.slice(0, at));
      if (next() < 0.5) clock.run();
    }
    r.finish(input);
    assert.deepEqual(shapes(container), shapes(render(input)), `seed ${seed}, case ${i}: ${JSON.stringify(input)}`);
  }
});

// ---- the vendored parser -------------------------------------------------------------------

test('extension/vendor/marked is the pinned marked package, unmodified', () => {
  const require = createRequire(import.meta.url);
  const pkg = require('marked/package.json');
  const pinned = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).devDependencies.marked;
  assert.equal(pkg.version, pinned);
  const fromPackage = readFileSync(join(dirname(require.resolve('marked/package.json')), 'lib', 'marked.esm.js'));
  const vendored = readFileSync(new URL('../../extension/vendor/marked/marked.esm.js', import.meta.url));
  assert.ok(vendored.equals(fromPackage), 'extension/vendor/marked/marked.esm.js differs from node_modules/marked');
  assert.match(vendored.subarray(0, 200).toString(), new RegExp(`marked v${pinned.replace(/\./g, '\\.')} `));
});

test('an address with a user name, a long host, or mailto: recipients shows where it really goes', () => {
  const lie = 'https://paypal.com@evil.example/login';
  assert.equal(render(`[${lie}](${lie}) <${lie}>`).textContent, `${lie} (evil.example) ${lie} (evil.example)`);
  const long = `${'a'.repeat(70)}.secure-login.evil.example`;
  assert.equal(render(`[sign in](https://${long}/)`).querySelector('.md-link-host').textContent, ` (…${long.slice(-79)})`);
  assert.equal(render('[me@example.org](mailto:me@example.org?cc=spy@evil.example&BCC=a@evil.example,b@evil.example)').textContent,
    'me@example.org (me@example.org, cc: spy@evil.example, bcc: a@evil.example, bcc: b@evil.example)');
});

test('a page title in a link\'s path stays a link; the session\'s own addresses always do', () => {
  const known = `${KNOWN}\nList of tallest buildings in the United States`;
  const wiki = 'https://en.wikipedia.org/wiki/List_of_tallest_buildings_in_the_United_States';
  assert.equal(withKnown(`[tallest](${wiki})`, known).querySelectorAll('a').length, 1);
  const own = `https://news.example/${RUN_81.replace(/ /g, '-')}`;
  assert.equal(withKnown(`[story](${own})`).querySelector('a'), null);
  assert.equal(withKnown(`[story](${own})`, KNOWN, [own]).querySelectorAll('a').length, 1);
  const source = [{ id: '1', kind: 'web', title: 'Story', url: own }];
  assert.equal(renderMarkdown(`[story](${own})`, { sources: source, known: KNOWN, document }).querySelectorAll('a').length, 1);
});
