// The size report (pkg-scripts/bench.sh): what each part of the shipped wasm costs.
//
//   node pkg-scripts/bench-size.mjs NAMED_WASM SHIPPED_WASM GLUE OUT_TXT
//
// NAMED_WASM is the shipped build with its names kept: the same cargo output, wasm-bindgen
// and wasm-opt flags as pkg-scripts/build.sh, but wasm-opt told to keep the name section
// (--debuginfo) instead of stripping it. Its code and data are the shipped ones byte for byte
// (checked below: every item but the name section adds up to SHIPPED_WASM's size).
//
// `twiggy top` (~/.cargo/bin/twiggy) lists every item with its size and demangled name. Each
// item goes to one area by its name: the first `knowledgelens::<module>` path in it decides
// (so serde's code generated for, say, a provider's reply type counts as that provider's, and
// `drop_in_place<knowledgelens::state::..>` as state's); names without one go by the crates
// they name (schemars, serde and serde_json, wasm-bindgen, core/alloc/std). Data segments are
// "data", except the prompt templates' text (src/**/*.tpl, found verbatim), which
// counts as templates. The gzip column estimates each area's share of the shipped wasm's
// gzip -9 size: each area's bytes (function bodies and data, read from NAMED_WASM) are
// gzipped on their own and the shipped size is split in proportion.
//
// Writes OUT_TXT (the ten largest items, the areas, the dominator tree's top) and prints
// {"areas": {key: bytes}, "gz_estimate": {key: bytes}, ...} on stdout.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

const [named, shipped, glue, outTxt] = process.argv.slice(2);
if (!outTxt) throw new Error('usage: bench-size.mjs NAMED_WASM SHIPPED_WASM GLUE OUT_TXT');
const twiggy = process.env.TWIGGY || join(homedir(), '.cargo/bin/twiggy');
const srcDir = new URL('../src/', import.meta.url);
if (!existsSync(twiggy)) {
  throw new Error(`twiggy is not at ${twiggy}: install it (cargo install twiggy) or set TWIGGY to its path`);
}

// [key, label, prefixes of the path after `knowledgelens::`], first match wins.
const OWN = [
  ['search', 'web search', ['search::', 'state::search', 'types::search', 'service::search_check', 'tools::search', 'agent::step::search']],
  ['providers', 'providers (src/llm)', ['llm::']],
  ['templates', 'templates, prompts', ['agent::prompts', 'template::']],
  ['page_index', 'page index (src/page)', ['page::', 'service::locate']],
  ['context', 'context (window, compaction, reflexion, tokens)', ['agent::context', 'agent::step::compact', 'agent::step::reflect', 'state::memory', 'types::tokens']],
  ['tools', 'tools and schemas (schemars)', ['tools::']],
  ['state', 'state, persistence', ['state::']],
  ['protocol_service', 'protocol, service, settings', ['protocol::', 'service::', 'settings::']],
  ['web', 'web layer (src/web, wasm-bindgen, js-sys)', ['web::']],
  ['engine', 'agent engine (src/agent)', ['agent::']],
];
// Names without a knowledgelens path: [key, crates], first match wins.
const CRATES = [
  ['tools', ['schemars']],
  ['serde_json', ['kljson', 'serde_json', 'serde_core', 'serde_path_to_error', 'serde', 'itoa', 'ryu', 'zmij']],
  ['web', ['wasm_bindgen_futures', 'wasm_bindgen', 'js_sys', 'web_sys', 'serde_wasm_bindgen', 'gloo_timers', 'getrandom']],
  ['std_alloc', ['core', 'alloc', 'std', 'hashbrown', 'dlmalloc', 'compiler_builtins', 'memchr']],
];
const LABELS = {
  ...Object.fromEntries(OWN.map(([key, label]) => [key, label])),
  serde_json: 'kljson, serde, serde_json (names without our types)',
  std_alloc: 'std, core, alloc',
  data: 'data (other strings, tables)',
  other: 'other (our types, ports, futures, shims, tables)',
};
const ORDER = ['providers', 'templates', 'tools', 'search', 'context', 'page_index', 'state',
  'protocol_service', 'engine', 'web', 'serde_json', 'std_alloc', 'data', 'other'];

function classify(name) {
  if (/^"?data segment|^data\[/.test(name)) return 'data';
  const own = /knowledgelens(?:\[[0-9a-f]+\])?::([A-Za-z0-9_:]+)/.exec(name);
  if (own) {
    const path = own[1];
    return OWN.find(([, , prefixes]) => prefixes.some((p) => path.startsWith(p)))?.[0] ?? 'other';
  }
  if (/externref shim|^__externref|^__wbindgen|^import |^export /.test(name)) return 'web';
  for (const [key, crates] of CRATES) {
    if (crates.some((c) => new RegExp(`(^|[^A-Za-z0-9_])${c}(\\[[0-9a-f]+\\])?::`).test(name))) return key;
  }
  return 'other';
}

// ---- twiggy: every item, its size and name ----
function csvRows(text) {
  const rows = [];
  let row = [''];
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { row[row.length - 1] += '"'; i += 1; } else if (c === '"') quoted = false;
      else row[row.length - 1] += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') row.push('');
    else if (c === '\n') { rows.push(row); row = ['']; } else row[row.length - 1] += c;
  }
  if (row.length > 1 || row[0]) rows.push(row);
  return rows;
}
const run = (args) => execFileSync(twiggy, args, { encoding: 'utf8', maxBuffer: 1 << 28 });
// The named build's functions are named `f<place> <name>` (pkg-scripts/lib/function-order.mjs
// --keep-names, so that they come out in the shipped order): the place is dropped here.
const ownName = (name) => name.replace(/^f\d+ /, '');
const items = csvRows(run(['top', '-n', '1000000', '--format', 'csv', named])).slice(1)
  .map(([name, size]) => ({ name: ownName(name), size: Number(size) }));
const isNames = (name) => /subsection$|^custom section 'name' headers$/.test(name);
const shippedSize = readFileSync(shipped).length;
const namesBytes = items.filter((i) => isNames(i.name)).reduce((s, i) => s + i.size, 0);
const kept = items.filter((i) => !isNames(i.name));
const keptBytes = kept.reduce((s, i) => s + i.size, 0);
// twiggy leaves section headers out of its items; the named build's other bytes must be the
// shipped ones, give or take those headers.
const shippedItems = csvRows(run(['top', '-n', '1000000', '--format', 'csv', shipped])).slice(1)
  .reduce((s, [, size]) => s + Number(size), 0);
if (keptBytes !== shippedItems) {
  throw new Error(`the named build is not the shipped one: ${keptBytes} bytes of items, shipped ${shippedItems}`);
}

// ---- the templates' text inside the data segments ----
// Every template file: the loop's own, each capability's, the tools' and the prompted tools'.
const templates = readdirSync(srcDir, { recursive: true }).filter((f) => f.endsWith('.tpl'))
  .map((f) => readFileSync(new URL(f, srcDir)));

// ---- the named wasm's function bodies and data, for the gzip estimate ----
function parseWasm(buf) {
  let p = 8;
  const leb = () => { let r = 0; let s = 0; let b; do { b = buf[p++]; r += (b & 0x7f) * 2 ** s; s += 7; } while (b & 0x80); return r; };
  const bytes = () => { const n = leb(); const out = buf.subarray(p, p + n); p += n; return out; };
  const skipExpr = () => { while (buf[p++] !== 0x0b) { /* i32.const / global.get operands are LEBs without 0x0b bytes */ } };
  const fnNames = new Map();
  const dataNames = new Map();
  const bodies = [];
  const data = [];
  let imported = 0;
  while (p < buf.length) {
    const id = buf[p++];
    const size = leb();
    const end = p + size;
    if (id === 2) {
      for (let n = leb(); n > 0; n -= 1) {
        bytes(); bytes();
        const kind = buf[p++];
        if (kind === 0) { leb(); imported += 1; } else if (kind === 1) { p += 1; const f = leb(); leb(); if (f & 1) leb(); } else if (kind === 2) { const f = leb(); leb(); if (f & 1) leb(); } else if (kind === 3) p += 2;
        else if (kind === 4) { p += 1; leb(); }
      }
    } else if (id === 10) {
      for (let n = leb(); n > 0; n -= 1) bodies.push(bytes());
    } else if (id === 11) {
      for (let n = leb(); n > 0; n -= 1) {
        const flag = leb();
        if (flag === 2) leb();
        if (flag !== 1) skipExpr();
        data.push(bytes());
      }
    } else if (id === 0 && new TextDecoder().decode(bytes()) === 'name') {
      while (p < end) {
        const sub = buf[p++];
        const length = leb();
        const subEnd = p + length;
        const into = sub === 1 ? fnNames : sub === 9 ? dataNames : null;
        if (into) for (let n = leb(); n > 0; n -= 1) { const idx = leb(); into.set(idx, new TextDecoder().decode(bytes())); }
        p = subEnd;
      }
    }
    p = end;
  }
  return {
    functions: bodies.map((body, i) => ({ name: ownName(fnNames.get(imported + i) ?? `code[${i}]`), body })),
    data: data.map((body, i) => ({ name: dataNames.get(i) ?? `data[${i}]`, body })),
  };
}

const wasm = parseWasm(readFileSync(named));
const groups = Object.fromEntries(ORDER.map((k) => [k, []]));
for (const f of wasm.functions) groups[classify(f.name)].push(f.body);
let templateBytes = 0;
for (const d of wasm.data) {
  let rest = Buffer.from(d.body);
  for (const t of templates) {
    const at = rest.indexOf(t);
    if (at < 0) continue;
    groups.templates.push(t);
    templateBytes += t.length;
    rest = Buffer.concat([rest.subarray(0, at), rest.subarray(at + t.length)]);
  }
  groups.data.push(rest);
}
if (templateBytes === 0) throw new Error('no prompt template found in the data segments');

// ---- areas: raw bytes from twiggy, the serde-generated part, the gzip estimate ----
const areas = Object.fromEntries(ORDER.map((k) => [k, 0]));
const serdeIn = Object.fromEntries(ORDER.map((k) => [k, 0]));
for (const { name, size } of kept) {
  const key = classify(name);
  areas[key] += size;
  if (/serde|FromJson|ToJson/.test(name) && key !== 'serde_json') serdeIn[key] += size;
}
areas.data -= templateBytes;
areas.templates += templateBytes;
const gzOf = Object.fromEntries(ORDER.map((k) => [k, gzipSync(Buffer.concat(groups[k]), { level: 9 }).length]));
const gzSum = Object.values(gzOf).reduce((s, x) => s + x, 0);
// gzip -9 itself, as pkg-scripts/build.sh and core/wasm_glue_gz_bytes measure (zlib's level 9
// comes out about 1% larger).
const gzip9 = (file) => execFileSync('gzip', ['-9', '-c', file], { maxBuffer: 1 << 28 }).length;
const shippedGz = gzip9(shipped);
const glueGz = gzip9(glue);
const gzEstimate = Object.fromEntries(ORDER.map((k) => [k, Math.round((gzOf[k] / gzSum) * shippedGz)]));

// ---- the report ----
const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'Cargo.toml', 'Cargo.lock'], { encoding: 'utf8' }).trim() ? ' (with uncommitted changes)' : '';
const n = (x) => x.toLocaleString('en-US');
const pct = (x, of) => `${((100 * x) / of).toFixed(1)}%`;
const shorten = (name) => name.replace(/::h[0-9a-f]{16}$/, '').replace(/\[[0-9a-f]{16}\]/g, '');
const top = kept.filter((i) => !/^"?data segment/.test(i.name)).slice(0, 10);
const lines = [
  `KnowledgeLens wasm size report (pkg-scripts/bench.sh), ${new Date().toISOString().slice(0, 10)}, commit ${commit}${dirty}`,
  '',
  `shipped wasm: ${n(shippedSize)} bytes, ${n(shippedGz)} gzip -9; glue ${n(readFileSync(glue).length)} bytes, ${n(glueGz)} gzip -9`,
  `named build:  the same items (${n(keptBytes)} bytes as twiggy counts them) plus ${n(namesBytes)} bytes of names`,
  '',
  'Ten largest functions (twiggy top; data segments aside):',
  ...top.map((i, k) => `${String(k + 1).padStart(3)}. ${n(i.size).padStart(7)} B  ${shorten(i.name)}`),
  '',
  'Bytes per area (by name: see pkg-scripts/bench-size.mjs):',
  `${'area'.padEnd(50)} ${'bytes'.padStart(9)} ${'share'.padStart(6)} ${'serde in it'.padStart(11)} ${'gzip est.'.padStart(9)}`,
  ...ORDER.map((k) => `${LABELS[k].padEnd(50)} ${n(areas[k]).padStart(9)} ${pct(areas[k], keptBytes).padStart(6)} ${n(serdeIn[k]).padStart(11)} ${n(gzEstimate[k]).padStart(9)}`),
  `${'total'.padEnd(50)} ${n(keptBytes).padStart(9)} ${'100%'.padStart(6)} ${n(Object.values(serdeIn).reduce((s, x) => s + x, 0)).padStart(11)} ${n(shippedGz).padStart(9)}`,
  '',
  '"serde in it": bytes of functions in the area whose names mention serde, FromJson or ToJson',
  '(the decoders and encoders of the area\'s types). "gzip est.": the shipped gzip -9 size split in',
  'proportion to each area\'s bytes gzipped on their own. Templates: agent::prompts, template',
  `plus the .tpl text found in the data (${n(templateBytes)} bytes). "kljson, serde, serde_json": the`,
  'JSON crate (crates/kljson) and serde_json\'s Value, where no type of ours is in the name.',
  '',
  'Dominator tree, top (twiggy dominators -d 3 -r 25):',
  run(['dominators', '-d', '3', '-r', '25', named]).trimEnd().replace(/⤷ f\d+ /g, '⤷ '),
  '',
];
writeFileSync(outTxt, lines.join('\n'));
console.log(JSON.stringify({ areas, gz_estimate: gzEstimate, serde_in: serdeIn, shipped_gz: shippedGz, glue_gz: glueGz, names_bytes: namesBytes }));
