#!/usr/bin/env node
// Writes tests/fixtures/tokens.json: the fixture the token estimator (src/types/tokens.rs) is
// checked and benchmarked against. Dev-time only: js-tiktoken (a pinned devDependency whose
// o200k_base ranks ship in the npm package) is never part of the extension.
//
//   npm ci && node pkg-scripts/token-fixture.mjs
//
// Three scripts, at least 20 texts of at least 1,000 o200k_base tokens each:
//   prose  paragraphs of README.md and the seed documents in ../shared/seeds (fenced code and
//          table rows left out), in consecutive chunks
//   code   the first ~1,100 tokens of the larger src/**/*.rs and extension/**/*.js files
//   cjk    original Chinese and Japanese sentences (pkg-scripts/token-fixture/{zh,ja}.txt,
//          written for this fixture, with digits and Latin words mixed in as real pages
//          have), composed into texts by a seeded shuffle: 12 Chinese, 12 Japanese
// Regenerating after the sources changed changes the texts; rerun the estimator tests
// (`cargo test --features testing --test tokens`) and update docs/performance.md ("Token estimates and compaction").
import { readFileSync, readdirSync, existsSync, writeFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { getEncoding } from 'js-tiktoken';

const root = new URL('..', import.meta.url).pathname;
const enc = getEncoding('o200k_base');
const count = (text) => enc.encode(text).length;
const MIN = 1050; // a little above 1,000 so every text clears it
const PER_SCRIPT = 24;

function walk(dir, ext, out = []) {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (name === 'vendor' || name === 'node_modules') continue;
    if (statSync(path).isDirectory()) walk(path, ext, out);
    else if (name.endsWith(ext)) out.push(path);
  }
  return out;
}

// Prose: paragraphs without code blocks or tables, accumulated into chunks of >= MIN tokens.
function prose() {
  const seeds = join(root, '..', 'shared', 'seeds');
  const files = [join(root, 'README.md')];
  if (existsSync(seeds)) files.push(...walk(seeds, '.txt'));
  const texts = [];
  for (const file of files) {
    const body = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
    const paragraphs = body
      .split(/\n\s*\n/)
      .map((p) => p.split('\n').filter((l) => !l.trim().startsWith('|')).join('\n').trim())
      .filter((p) => p.length > 0);
    let chunk = [];
    for (const p of paragraphs) {
      chunk.push(p);
      const text = chunk.join('\n\n');
      if (count(text) >= MIN) {
        texts.push({ source: relative(root, file), text });
        chunk = [];
      }
    }
  }
  return texts;
}

// Code: the first lines of a file, up to >= MIN tokens; Rust and JS files alternate.
function code() {
  const firstLines = (file) => {
    const lines = readFileSync(file, 'utf8').split('\n');
    for (let n = 1; n <= lines.length; n++) {
      const text = lines.slice(0, n).join('\n');
      if (count(text) >= MIN) return text;
    }
    return null;
  };
  const pick = (files) =>
    files
      .map((f) => ({ source: relative(root, f), text: firstLines(f) }))
      .filter((t) => t.text !== null);
  const rs = pick(walk(join(root, 'src'), '.rs'));
  const js = pick(walk(join(root, 'extension'), '.js'));
  const texts = [];
  for (let i = 0; texts.length < PER_SCRIPT && (i < rs.length || i < js.length); i++) {
    if (i < rs.length) texts.push(rs[i]);
    if (i < js.length && texts.length < PER_SCRIPT) texts.push(js[i]);
  }
  return texts;
}

// CJK: sentences shuffled with a seeded generator, joined into texts of >= MIN tokens.
function cjk() {
  let seed = 14;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const texts = [];
  for (const lang of ['zh', 'ja']) {
    const sentences = readFileSync(join(root, 'pkg-scripts', 'token-fixture', `${lang}.txt`), 'utf8')
      .split('\n')
      .filter((s) => s.trim().length > 0);
    for (let k = 0; k < PER_SCRIPT / 2; k++) {
      const order = sentences.map((s) => [random(), s]).sort((a, b) => a[0] - b[0]);
      let text = '';
      for (const [i, [, s]] of order.entries()) {
        // Paragraph breaks every few sentences, as a page has.
        text += s + (i % 4 === 3 ? '\n\n' : '');
        if (count(text) >= MIN) break;
      }
      texts.push({ source: `pkg-scripts/token-fixture/${lang}.txt#${k}`, text: text.trim() });
    }
  }
  return texts;
}

const scripts = { prose: prose().slice(0, PER_SCRIPT), code: code(), cjk: cjk() };
const texts = [];
for (const [script, list] of Object.entries(scripts)) {
  if (list.length < 20) throw new Error(`only ${list.length} ${script} texts`);
  for (const t of list) {
    const tokens = count(t.text);
    if (tokens < 1000) throw new Error(`${t.source}: only ${tokens} tokens`);
    texts.push({ script, source: t.source, tokens, text: t.text });
  }
}
const out = join(root, 'tests', 'fixtures', 'tokens.json');
const fixture = { encoding: 'o200k_base', generator: 'pkg-scripts/token-fixture.mjs', texts };
writeFileSync(out, JSON.stringify(fixture, null, 1) + '\n');
for (const [script, list] of Object.entries(scripts)) console.log(`${script}: ${list.length} texts`);
console.log(`wrote ${relative(root, out)}`);
