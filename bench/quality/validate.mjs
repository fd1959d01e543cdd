#!/usr/bin/env node
// Validator for the KnowledgeLens quality question set (bench/quality/questions.json).
//
//   node bench/quality/validate.mjs --pages DIR [--questions FILE]
//
// DIR is a copy of Mozilla Readability's `test/test-pages` directory at the
// commit recorded in questions.json. The script checks page hashes, that every
// answer span / key fact / selection occurs in the text of the page's
// expected.html, that recorded offsets match first occurrences, and the
// set-level counts. Exit code 0 = valid, 1 = problems found, 2 = usage error.
//
// The helpers `normalise`, `pageText`, `normaliseWithMap`, `firstOffset` and
// `loadQuestions` are exported for reuse by the benchmark harness.

import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { JSDOM, VirtualConsole } from "jsdom";

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const DEFAULT_QUESTIONS = path.join(HERE, "questions.json");

/** Matching normalisation: lowercase, every non-letter/digit char -> space, collapse spaces, trim. */
export function normalise(s) {
  return String(s ?? "")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .replace(/ +/g, " ")
    .trim();
}

/** Collapse whitespace runs to one space and trim. */
export function collapseWhitespace(s) {
  return String(s ?? "").replace(/\s+/g, " ").trim();
}

/**
 * Text of a page as the set was written against: jsdom `textContent` of
 * <body>, whitespace collapsed. Pass the contents of a page's expected.html
 * (Readability's extracted article).
 */
export function pageText(html) {
  const dom = new JSDOM(String(html), { virtualConsole: new VirtualConsole() });
  try {
    return collapseWhitespace(dom.window.document.body?.textContent ?? "");
  } finally {
    dom.window.close();
  }
}

/**
 * Normalise `text` (same result as `normalise(text)`) and return, for each
 * char of the normalised string, its index in `text`.
 */
export function normaliseWithMap(text) {
  const out = [];
  const map = [];
  for (let i = 0; i < text.length; ) {
    const ch = String.fromCodePoint(text.codePointAt(i));
    if (/[\p{L}\p{N}]/u.test(ch)) {
      for (const c of ch.toLowerCase()) {
        out.push(c);
        map.push(i);
      }
    } else if (out.length && out[out.length - 1] !== " ") {
      out.push(" ");
      map.push(i);
    }
    i += ch.length;
  }
  while (out.length && out[out.length - 1] === " ") {
    out.pop();
    map.pop();
  }
  return { norm: out.join(""), map };
}

/**
 * Index in `text` (whitespace-collapsed page text) of the first occurrence of
 * `span` under normalisation, or -1. `nm` may be a precomputed normaliseWithMap(text).
 */
export function firstOffset(text, span, nm = normaliseWithMap(text)) {
  const n = normalise(span);
  if (!n) return -1;
  const i = nm.norm.indexOf(n);
  return i < 0 ? -1 : nm.map[i];
}

/** True if a (model) answer contains any of the reference spans after normalisation. */
export function answerMatches(answer, spans) {
  const a = normalise(answer);
  return spans.some((s) => {
    const n = normalise(s);
    return n.length > 0 && a.includes(n);
  });
}

export function loadQuestions(file = DEFAULT_QUESTIONS) {
  return JSON.parse(fs.readFileSync(file, "utf8"));
}

const sha256 = (buf) => crypto.createHash("sha256").update(buf).digest("hex");
const words = (s) => (normalise(s) ? normalise(s).split(" ").length : 0);
const OFFSET_TOLERANCE = 50;

/** Validate a question set against a test-pages dir. Returns { errors, warnings, rows, totals }. */
export function validate(doc, pagesDir) {
  const errors = [];
  const warnings = [];
  const err = (m) => errors.push(m);
  const excerpt = Number.isInteger(doc.excerpt_chars) ? doc.excerpt_chars : 6000;
  if (!Number.isInteger(doc.excerpt_chars)) err(`excerpt_chars missing or not an integer`);
  if (!/^[0-9a-f]{40}$/.test(doc.readability_commit ?? "")) err(`readability_commit missing or not a 40-hex commit`);
  if (!Array.isArray(doc.pages) || !Array.isArray(doc.items)) {
    err(`questions file must have "pages" and "items" arrays`);
    return { errors, warnings, rows: [], totals: {} };
  }

  // Pages.
  const pages = new Map();
  for (const p of doc.pages) {
    if (!p.id || pages.has(p.id)) {
      err(`page entry with missing or duplicate id: ${JSON.stringify(p.id)}`);
      continue;
    }
    const entry = { ...p, text: null, nm: null };
    pages.set(p.id, entry);
    const src = path.join(pagesDir, p.file ?? "");
    if (!p.file || !fs.existsSync(src)) {
      err(`[${p.id}] page file not found: ${src}`);
      continue;
    }
    const digest = sha256(fs.readFileSync(src));
    if (digest !== p.sha256) err(`[${p.id}] sha256 mismatch for ${src}: expected ${p.sha256}, got ${digest}`);
    const exp = path.join(path.dirname(src), "expected.html");
    if (!fs.existsSync(exp)) {
      err(`[${p.id}] expected.html not found: ${exp}`);
      continue;
    }
    entry.text = pageText(fs.readFileSync(exp, "utf8"));
    entry.nm = normaliseWithMap(entry.text);
    if (entry.text.length !== p.text_chars) {
      warnings.push(`[${p.id}] text_chars is ${p.text_chars} but extracted text has ${entry.text.length} chars`);
    }
  }

  // Items.
  const ids = new Set();
  for (const it of doc.items) {
    const tag = `[${it.id ?? "?"}]`;
    if (!it.id || ids.has(it.id)) err(`${tag} missing or duplicate item id`);
    ids.add(it.id);
    const page = pages.get(it.page);
    if (!page) {
      err(`${tag} unknown page "${it.page}"`);
      continue;
    }
    if (page.text == null) continue; // page already reported missing
    const { text, nm } = page;
    const occurs = (s) => firstOffset(text, s, nm);

    const checkOffset = (actual, what) => {
      if (!Number.isInteger(it.offset)) return err(`${tag} missing integer offset`);
      if (Math.abs(it.offset - actual) >= OFFSET_TOLERANCE)
        err(`${tag} offset ${it.offset} does not match first occurrence of ${what} at ${actual}`);
      if (it.past_excerpt !== actual > excerpt)
        err(`${tag} past_excerpt is ${it.past_excerpt} but first occurrence of ${what} is at ${actual} (excerpt ${excerpt})`);
    };

    if (it.kind === "question") {
      if (typeof it.question !== "string" || !it.question.trim()) err(`${tag} empty question`);
      if (typeof it.answerable !== "boolean") {
        err(`${tag} "answerable" must be true or false`);
        continue;
      }
      if (it.answerable) {
        if (!Array.isArray(it.answers) || it.answers.length < 1 || it.answers.length > 3) {
          err(`${tag} answerable question needs 1-3 answer spans`);
          continue;
        }
        const qn = ` ${normalise(it.question)} `;
        const offs = [];
        for (const s of it.answers) {
          const w = words(s);
          if (w < 1 || w > 5) err(`${tag} answer span "${s}" should be 1-5 words (has ${w})`);
          if (qn.includes(` ${normalise(s)} `)) err(`${tag} answer span "${s}" appears in the question itself`);
          const o = occurs(s);
          if (o < 0) err(`${tag} answer span "${s}" not found in page text`);
          offs.push(o);
        }
        if (offs[0] >= 0) checkOffset(offs[0], `"${it.answers[0]}"`);
        if (it.past_excerpt === true) {
          it.answers.forEach((s, i) => {
            if (offs[i] >= 0 && offs[i] <= excerpt)
              err(`${tag} marked past_excerpt but alternative span "${s}" already occurs at ${offs[i]}`);
          });
        }
        if ("why_unanswerable" in it) err(`${tag} answerable question must not have why_unanswerable`);
      } else {
        if ("answers" in it) err(`${tag} unanswerable question must not have answers`);
        if (typeof it.why_unanswerable !== "string" || !it.why_unanswerable.trim())
          err(`${tag} unanswerable question needs why_unanswerable`);
        if ("past_excerpt" in it && it.past_excerpt) err(`${tag} unanswerable question cannot be past_excerpt`);
      }
    } else if (it.kind === "explain") {
      const sel = it.selection;
      if (typeof sel !== "string") {
        err(`${tag} explain item needs a selection`);
        continue;
      }
      if (sel.length < 40 || sel.length > 300) err(`${tag} selection length ${sel.length} outside 40-300`);
      const at = text.indexOf(collapseWhitespace(sel));
      if (at < 0) err(`${tag} selection not found verbatim in page text`);
      else checkOffset(at, "the selection");
      if (!Array.isArray(it.key_facts) || it.key_facts.length < 2 || it.key_facts.length > 3) {
        err(`${tag} key_facts must list 2-3 facts`);
        continue;
      }
      const selN = ` ${normalise(sel)} `;
      it.key_facts.forEach((fact, i) => {
        if (!Array.isArray(fact) || fact.length < 1) return err(`${tag} key_facts[${i}] must be a non-empty list of spans`);
        for (const s of fact) {
          const w = words(s);
          if (w < 1 || w > 4) err(`${tag} key fact span "${s}" should be 1-4 words (has ${w})`);
          if (occurs(s) < 0) err(`${tag} key fact span "${s}" not found in page text`);
          if (selN.includes(normalise(s)))
            err(`${tag} key fact span "${s}" occurs in the selection itself`);
        }
      });
    } else {
      err(`${tag} unknown kind "${it.kind}"`);
    }
  }

  // Counts.
  const rows = [];
  for (const [id, p] of pages) {
    const its = doc.items.filter((x) => x.page === id);
    const qs = its.filter((x) => x.kind === "question");
    rows.push({
      page: id,
      questions: qs.length,
      unanswerable: qs.filter((x) => x.answerable === false).length,
      past_excerpt: qs.filter((x) => x.answerable === true && x.past_excerpt === true).length,
      explain: its.filter((x) => x.kind === "explain").length,
      text_chars: p.text?.length ?? p.text_chars,
    });
  }
  const qs = doc.items.filter((x) => x.kind === "question");
  const totals = {
    questions: qs.length,
    pages: new Set(qs.map((x) => x.page)).size,
    unanswerable: qs.filter((x) => x.answerable === false).length,
    past_excerpt: qs.filter((x) => x.answerable === true && x.past_excerpt === true).length,
    explain: doc.items.filter((x) => x.kind === "explain").length,
  };
  if (totals.questions < 40) err(`need at least 40 questions, have ${totals.questions}`);
  if (totals.pages < 8) err(`questions must cover at least 8 pages, cover ${totals.pages}`);
  if (totals.unanswerable * 4 < totals.questions)
    err(`at least 25% of questions must be unanswerable: ${totals.unanswerable}/${totals.questions}`);
  if (totals.past_excerpt * 3 < totals.questions)
    err(`at least 1/3 of questions must be answered past the excerpt: ${totals.past_excerpt}/${totals.questions}`);
  if (totals.explain < 10) err(`need at least 10 explain items, have ${totals.explain}`);
  for (const r of rows) if (r.questions === 0 && r.explain === 0) warnings.push(`[${r.page}] page has no items`);

  return { errors, warnings, rows, totals };
}

function printTable(rows, totals) {
  const cols = ["page", "questions", "unanswerable", "past_excerpt", "explain", "text_chars"];
  const all = [...rows, { page: "TOTAL", ...totals, text_chars: rows.reduce((a, r) => a + (r.text_chars || 0), 0) }];
  const width = cols.map((c) => Math.max(c.length, ...all.map((r) => String(r[c] ?? "").length)));
  const line = (r) => cols.map((c, i) => (i === 0 ? String(r[c]).padEnd(width[i]) : String(r[c] ?? "").padStart(width[i]))).join("  ");
  console.log(line(Object.fromEntries(cols.map((c) => [c, c]))));
  console.log(width.map((w) => "-".repeat(w)).join("  "));
  rows.forEach((r) => console.log(line(r)));
  console.log(width.map((w) => "-".repeat(w)).join("  "));
  console.log(line(all[all.length - 1]));
}

function main(argv) {
  let pagesDir = null;
  let qfile = DEFAULT_QUESTIONS;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--pages") pagesDir = argv[++i];
    else if (argv[i] === "--questions") qfile = argv[++i];
    else if (argv[i] === "-h" || argv[i] === "--help") {
      console.log("usage: node bench/quality/validate.mjs --pages <readability>/test/test-pages [--questions FILE]");
      return 0;
    } else {
      console.error(`unknown argument: ${argv[i]}`);
      return 2;
    }
  }
  if (!pagesDir) {
    console.error("usage: node bench/quality/validate.mjs --pages <readability>/test/test-pages [--questions FILE]");
    return 2;
  }
  if (!fs.existsSync(pagesDir)) {
    console.error(`pages directory not found: ${pagesDir}`);
    return 1;
  }
  let doc;
  try {
    doc = loadQuestions(qfile);
  } catch (e) {
    console.error(`cannot read ${qfile}: ${e.message}`);
    return 1;
  }
  const { errors, warnings, rows, totals } = validate(doc, pagesDir);
  printTable(rows, totals);
  for (const w of warnings) console.warn(`warning: ${w}`);
  if (errors.length) {
    console.error(`\n${errors.length} problem(s):`);
    for (const e of errors) console.error(`  - ${e}`);
    return 1;
  }
  console.log(`\nOK: ${qfile} is valid against ${pagesDir} (readability ${doc.readability_commit}).`);
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  process.exitCode = main(process.argv.slice(2));
}
