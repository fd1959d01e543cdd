// The answer renderer (extension/markdown.js) in real Chromium, loaded from the built extension
// (its CSP, its vendored marked): 1,000 streamed deltas, watched by a MutationObserver, must
// never touch a top-level block once a later block exists, render at most once per frame, and
// end equal to a one-shot render; hostile markdown must not run. One browser for the file.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { launchExtension } from './support/browser.mjs';

let kl;
let page;

before(async () => {
  kl = await launchExtension({ logName: 'markdown' });
  page = await kl.context.newPage();
  // Any extension page will do: the module is imported from the extension's origin, as the
  // popup and side panel import it. The test's nodes live in a container of their own.
  await page.goto(`chrome-extension://${kl.extId}/options.html`);
  await page.evaluate(async () => {
    window.__md = await import(chrome.runtime.getURL('markdown.js'));
  });
});

after(async () => {
  await kl?.close();
});

/** mulberry32: a small seeded PRNG, so the document and its deltas are the same every run. */
function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** About `size` characters of the Markdown a model writes: every construct the renderer knows. */
function mixedMarkdown(next, size) {
  const pick = (list) => list[Math.floor(next() * list.length)];
  const words = ['tide', 'moon', 'the', 'gravity', 'pulls', 'ocean', 'water', 'bulge', 'orbit', 'spring',
    'neap', 'lunar', 'coast', 'harbour', 'rises', 'falls', 'twice', 'daily', 'and', 'of'];
  const inline = () => pick([
    () => pick(words), () => pick(words), () => pick(words), () => pick(words),
    () => `*${pick(words)}*`, () => `**${pick(words)} ${pick(words)}**`, () => `\`${pick(words)}()\``,
    () => `[${pick(words)}](https://example.org/${pick(words)})`, () => '[1]', () => '[p1]', () => '[9]',
    () => '<img src=x onerror=alert(1)>', () => `~~${pick(words)}~~`, () => 'https://auto.example/x',
  ])();
  const sentence = () => {
    const n = 3 + Math.floor(next() * 12);
    const s = Array.from({ length: n }, inline).join(' ');
    return `${s[0].toUpperCase()}${s.slice(1)}.`;
  };
  const para = () => Array.from({ length: 1 + Math.floor(next() * 3) }, sentence).join(' ');
  const blocks = [
    () => para(),
    () => para(),
    () => `${'#'.repeat(1 + Math.floor(next() * 4))} ${sentence()}`,
    () => Array.from({ length: 2 + Math.floor(next() * 4) }, () =>
      (next() < 0.3 ? `- ${sentence()}\n  - ${sentence()}` : `- ${sentence()}`)).join('\n'),
    () => Array.from({ length: 2 + Math.floor(next() * 4) }, (_, i) => `${i + 1}. ${sentence()}`).join('\n'),
    () => `\`\`\`js\nconst ${pick(words)} = ${Math.floor(next() * 100)};\nif (a < b) { run("${pick(words)}"); }\n\`\`\``,
    () => `> ${sentence()}\n> ${sentence()}`,
    () => `| Name | Value | Note |\n|:-----|------:|:----:|\n` +
      Array.from({ length: 2 + Math.floor(next() * 3) }, () => `| ${pick(words)} | ${Math.floor(next() * 1000)} | ${inline()} |`).join('\n'),
    () => '---',
  ];
  const out = [];
  let length = 0;
  while (length < size) {
    const block = pick(blocks)();
    out.push(block);
    length += block.length + 2;
  }
  return out.join('\n\n');
}

/** `count` prefixes of `text`, cut at random points: what the popup receives delta by delta. */
function prefixes(text, count, next) {
  const cuts = new Set();
  while (cuts.size < count - 1) cuts.add(1 + Math.floor(next() * (text.length - 1)));
  return [...[...cuts].sort((a, b) => a - b), text.length].map((at) => text.slice(0, at));
}

test('1,000 streamed deltas never touch a completed block, render once per frame at most, and end equal to a one-shot render', async (t) => {
  const next = rng(2026);
  const text = mixedMarkdown(next, 20_000);
  const steps = prefixes(text, 1000, next);
  // After each delta: how many frames to wait before the next one (0: same frame).
  const waits = steps.map(() => (next() < 0.7 ? 0 : next() < 0.9 ? 1 : 2));
  assert.ok(text.length >= 20_000 && text.length < 21_000, `document of ${text.length} characters`);

  const result = await page.evaluate(async ({ steps, waits }) => {
    const { createStreamRenderer, renderMarkdown } = window.__md;
    const sources = [
      { id: '1', kind: 'web', title: 'Tides', url: 'https://example.org/tides' },
      { id: 'p1', kind: 'page', title: 'The article', url: 'http://127.0.0.1/a' },
    ];
    const shape = (node) => node.nodeType === Node.TEXT_NODE ? node.data : [
      node.localName,
      Object.fromEntries([...node.attributes].map((a) => [a.name, a.value]).sort()),
      ...[...node.childNodes].map(shape),
    ];
    const frame = requestAnimationFrame.bind(window);
    const nextFrame = () => new Promise((done) => frame(done));

    // The renderer calls the global requestAnimationFrame: note the frame of each render.
    const renderFrames = [];
    window.requestAnimationFrame = (cb) => frame((time) => {
      renderFrames.push(time);
      cb(time);
    });

    const container = document.createElement('div');
    document.body.append(container);
    const renderer = createStreamRenderer(container, { sources });

    const completed = new Set(); // top-level nodes that had a later sibling at some frame's end
    const violations = [];
    let mutations = 0;
    const topLevel = (node) => {
      while (node && node.parentNode !== container) node = node.parentNode;
      return node;
    };
    const check = (records, when) => {
      for (const r of records) {
        mutations++;
        if (r.target === container) {
          for (const n of r.removedNodes) {
            if (completed.has(n)) violations.push(`${when}: completed <${n.localName}> removed: ${n.textContent.slice(0, 60)}`);
          }
        } else {
          const block = topLevel(r.target);
          if (block === null || completed.has(block)) {
            const where = block === null ? 'outside the rendered blocks' : 'inside a completed block';
            violations.push(`${when}: ${r.type} ${where}: ${r.target.textContent?.slice(0, 60)}`);
          }
        }
      }
    };
    // Records reach the callback right after the renderer's frame callback (a microtask
    // checkpoint), before this test's own callback of that frame marks more blocks completed.
    let frameNo = 0;
    const observer = new MutationObserver((records) => check(records, `frame ${frameNo}`));
    observer.observe(container, { childList: true, subtree: true, characterData: true, attributes: true });
    const settle = (when) => {
      check(observer.takeRecords(), when);
      frameNo++;
      const kids = [...container.childNodes];
      kids.slice(0, -1).forEach((n) => completed.add(n));
    };

    for (let i = 0; i < steps.length; i++) {
      renderer.update(steps[i]);
      for (let w = 0; w < waits[i]; w++) {
        await nextFrame(); // runs after the renderer's callback of the same frame
        settle(`delta ${i}`);
      }
    }
    await nextFrame();
    await nextFrame();
    settle('streamed');
    const streamedBlocks = container.childNodes.length;
    const beforeFinish = [...container.childNodes];

    renderer.finish(steps.at(-1));
    settle('finish');
    observer.disconnect();
    const oneShot = document.createElement('div');
    oneShot.append(renderMarkdown(steps.at(-1), { sources }));
    return {
      violations,
      mutations,
      completed: completed.size,
      streamedBlocks,
      keptAtFinish: beforeFinish.filter((n, i) => container.childNodes[i] === n).length,
      renders: renderFrames.length,
      distinctRenderFrames: new Set(renderFrames).size,
      final: [...container.childNodes].map(shape),
      expected: [...oneShot.childNodes].map(shape),
      kinds: [...new Set([...container.querySelectorAll('*')].map((n) => n.localName))].sort(),
    };
  }, { steps, waits });

  t.diagnostic(`${text.length} characters in 1,000 deltas; ${result.renders} renders in distinct frames; ` +
    `${result.mutations} mutation records; ${result.completed} blocks completed under observation`);
  assert.deepEqual(result.violations.slice(0, 10), [], 'a completed block was changed');
  assert.deepEqual(result.final, result.expected, 'the final DOM differs from a one-shot render');
  // The test watched something real: many blocks completed under observation, many renders.
  assert.ok(result.completed > 100, `${result.completed} completed blocks`);
  assert.ok(result.mutations > 300, `${result.mutations} mutation records`);
  assert.ok(result.renders > 250 && result.renders < 1000, `${result.renders} renders for 1,000 deltas`);
  assert.equal(result.distinctRenderFrames, result.renders, 'two renders in one animation frame');
  assert.equal(result.keptAtFinish, result.streamedBlocks, 'finish replaced blocks the stream had already shown');
  for (const kind of ['a', 'blockquote', 'code', 'del', 'em', 'h1', 'li', 'ol', 'p', 'pre', 'strong', 'table', 'td', 'th', 'ul', 'hr']) {
    assert.ok(result.kinds.includes(kind), `no <${kind}> in the rendered document`);
  }
});

test('hostile markdown renders as text in Chromium and nothing runs or loads', async () => {
  const hostile = [
    '<img src=x onerror="window.__pwned = 1">',
    '<script>window.__pwned = 2</script>',
    'text <svg onload="window.__pwned = 3"></svg> and <iframe src="javascript:window.__pwned=4"></iframe>',
    '[click](javascript:window.__pwned=5) ![pic](https://127.0.0.1:1/never.png)',
    '<details open ontoggle="window.__pwned = 6">x</details>',
    '| <img src=x onerror="window.__pwned=7"> | [ok](https://example.org) |\n|---|---|\n| a | b |',
  ].join('\n\n');
  const result = await page.evaluate(async (text) => {
    const requested = [];
    const observer = new PerformanceObserver((list) => requested.push(...list.getEntries().map((e) => e.name)));
    observer.observe({ type: 'resource' });
    const container = document.createElement('div');
    document.body.append(container);
    container.append(window.__md.renderMarkdown(text, { sources: [] }));
    // Event handlers would fire within a few frames (image errors, toggles); wait on frames.
    for (let i = 0; i < 5; i++) await new Promise((done) => requestAnimationFrame(done));
    observer.disconnect();
    const elements = [...container.querySelectorAll('*')];
    return {
      pwned: window.__pwned ?? null,
      requested: requested.filter((u) => !u.startsWith('chrome-extension:')),
      tags: [...new Set(elements.map((n) => n.localName))].sort(),
      handlers: elements.flatMap((n) => [...n.attributes].map((a) => a.name)).filter((n) => n.startsWith('on')),
      links: [...container.querySelectorAll('a')].map((a) => [a.textContent, a.href, a.target, a.rel]),
      text: container.textContent,
    };
  }, hostile);
  assert.equal(result.pwned, null);
  assert.deepEqual(result.requested, []);
  assert.deepEqual(result.handlers, []);
  for (const bad of ['img', 'script', 'svg', 'iframe', 'details']) assert.ok(!result.tags.includes(bad), `<${bad}> rendered`);
  assert.ok(result.tags.includes('table'), 'the table renders');
  assert.deepEqual(result.links, [
    ['pic (127.0.0.1:1)', 'https://127.0.0.1:1/never.png', '_blank', 'noopener noreferrer'],
    ['ok (example.org)', 'https://example.org/', '_blank', 'noopener noreferrer'],
  ]);
  assert.match(result.text, /<img src=x onerror="window.__pwned = 1">/);
  assert.match(result.text, /<script>window.__pwned = 2<\/script>/);
});

test('extension pages run under the strict policy: no plugins, no frames or images from elsewhere, no <base>', async () => {
  const policy = await page.evaluate(() => chrome.runtime.getManifest().content_security_policy?.extension_pages);
  assert.equal(policy, "script-src 'self' 'wasm-unsafe-eval'; object-src 'none'; frame-src 'self'; img-src 'self' data:; base-uri 'none'");
  // Enforced, not only declared: an image and a frame from another origin, and a <base>, are
  // each refused with a violation report, and a data: image and one of ours are not.
  const violated = await page.evaluate(async () => {
    const seen = [];
    const listener = (event) => seen.push(event.violatedDirective.split(' ')[0]);
    document.addEventListener('securitypolicyviolation', listener);
    const box = document.createElement('div');
    document.body.append(box);
    const img = document.createElement('img');
    img.src = 'https://127.0.0.1:1/never.png';
    const frame = document.createElement('iframe');
    frame.src = 'https://127.0.0.1:1/never.html';
    const base = document.createElement('base');
    base.href = 'https://127.0.0.1:1/';
    const ours = document.createElement('img');
    ours.src = 'icons/icon-16.png';
    const inline = document.createElement('img');
    inline.src = 'data:image/gif;base64,R0lGODlhAQABAAAAACw=';
    box.append(img, frame, base, ours, inline);
    for (let i = 0; i < 20 && seen.length < 3; i++) await new Promise((done) => setTimeout(done, 50));
    document.removeEventListener('securitypolicyviolation', listener);
    box.remove();
    return [...new Set(seen)].sort();
  });
  assert.deepEqual(violated, ['base-uri', 'frame-src', 'img-src']);
});
