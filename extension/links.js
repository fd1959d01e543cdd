// @ts-check
// The links a model writes into an answer: what one shows beside its text, and
// whether its address carries the session's text away. Pure functions; markdown.js uses them.
//
// Model output is untrusted: a page can make the model write a link whose text lies about
// where it goes, or one whose address holds the page or the conversation, for a click (or a
// prefetch) to deliver to someone else.
// - `destination(url, text)`: the host (for mailto:, the address, and any `to`, `cc` or `bcc`
//   recipients after it) a link shows after its text, or '' when the text already is the URL
//   (with or without its scheme, `www.` or a last `/`) or its host. An address with a user
//   name or password (`https://paypal.com@evil.example/`) always shows its host. A host in
//   another script shows as the browser reads it (punycode); one longer than 80 characters
//   keeps its right end, where the registrable domain is (`…secure-login.evil.example`).
// - `carriesKnownText(url, known)`: whether the decoded address (percent-decoded up to three
//   times) holds a run of known text: more than 40 characters of `known`, the text the view
//   holds (questions, answers, passages), in its user name, password, host, query or
//   fragment, or more than 80 in its path (a page title in a slug or a wiki path is common
//   and harmless). Case is ignored, and any run of characters other than letters and digits
//   counts as one space, so `+`, `_`, `-`, `/` or `%20` for a space change nothing; a run
//   starts and ends with a letter or a digit. An address the known text spells out whole (a
//   URL written on the page) is not taken away. Text encoded otherwise (base64, a cipher) is
//   not recognised.

/** A run of known text an address may hold: more is taken for the text itself. */
export const MAX_KNOWN_RUN = 40;
/** The same in an address's path. */
export const MAX_KNOWN_PATH_RUN = 80;
/** The longest host shown whole. */
const MAX_HOST_CHARS = 80;

const WINDOW = MAX_KNOWN_RUN + 1;
const NOT_WORD = /[^\p{L}\p{N}]+/gu;

/** `text` lower-cased, with every run of characters other than letters and digits as one space. */
export function normalize(text) {
  return String(text ?? '').toLowerCase().replace(NOT_WORD, ' ').trim();
}

/** Each window of WINDOW characters of `text` that starts and ends with a letter or digit. */
function* windows(text) {
  for (let i = 0; i + WINDOW <= text.length; i++) {
    if (text[i] !== ' ' && text[i + WINDOW - 1] !== ' ') yield text.slice(i, i + WINDOW);
  }
}

/**
 * The last known text, its windows, and the verdicts on addresses checked against it: a draft
 * renders many times against the same one.
 */
let memo = { known: '', normalized: '', shingles: new Set(), verdicts: new Map() };

function shinglesOf(known) {
  if (memo.known !== known) {
    const normalized = normalize(known);
    memo = { known, normalized, shingles: new Set(windows(normalized)), verdicts: new Map() };
  }
  return memo;
}

/** `text` with its percent-escapes decoded (a malformed one stays as written). */
function decodeOnce(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text.replace(/(?:%[0-9a-f]{2})+/gi, (run) => {
      try {
        return decodeURIComponent(run);
      } catch {
        return run;
      }
    });
  }
}

/** `text` decoded until no escape is left, three times at most (text encoded twice is seen). */
function decoded(text) {
  let out = text;
  for (let i = 0; i < 3 && /%[0-9a-f]{2}/i.test(out); i++) {
    const next = decodeOnce(out);
    if (next === out) break;
    out = next;
  }
  return out;
}

/**
 * Whether the address `url` (a URL) holds more than MAX_KNOWN_RUN characters of `known` in a
 * row, as described at the top of this file.
 */
export function carriesKnownText(url, known) {
  if (!known) return false;
  const { verdicts } = shinglesOf(known);
  if (!verdicts.has(url.href)) {
    const parts = [url.username, url.password, url.hostname, url.search, url.hash];
    const carries = holdsRun(normalize(decoded(parts.join(' '))), MAX_KNOWN_RUN)
      || holdsRun(normalize(decoded(url.pathname)), MAX_KNOWN_PATH_RUN);
    verdicts.set(url.href, carries && !memo.normalized.includes(normalize(decoded(url.href.slice(url.protocol.length)))));
  }
  return verdicts.get(url.href);
}

/** Whether the normalized `text` holds more than `max` characters of the known text in a row. */
function holdsRun(text, max) {
  const { normalized, shingles } = memo;
  for (let i = 0; i + max < text.length; i++) {
    if (text[i] === ' ' || !shingles.has(text.slice(i, i + WINDOW))) continue;
    const run = text.slice(i, i + max + 1).trimEnd();
    if (run.length > max && (max < WINDOW || normalized.includes(run))) return true;
  }
  return false;
}

/** `text` as an address to compare: lower case, no scheme, `www.` or last `/`. */
function bare(text) {
  return String(text ?? '').trim().toLowerCase()
    .replace(/^(?:https?:\/\/|mailto:)/, '')
    .replace(/^www\./, '')
    .replace(/\/+$/, '');
}

/** `host` cut to MAX_HOST_CHARS from its right end, where the registrable domain is. */
const rightEnd = (host) => (host.length > MAX_HOST_CHARS ? `…${host.slice(-(MAX_HOST_CHARS - 1))}` : host);

/** The extra recipients of a mailto: link (`to`, `cc`, `bcc` fields), as `cc: a@b.example`. */
function recipients(url) {
  const out = [];
  for (const [name, value] of url.searchParams) {
    const field = name.toLowerCase();
    if (!['to', 'cc', 'bcc'].includes(field)) continue;
    for (const address of value.split(',').map((a) => a.trim()).filter(Boolean)) out.push(`${field}: ${rightEnd(address)}`);
  }
  return out;
}

/** Where the link `url` (a URL) goes, to show after its `text`; '' when the text says it. */
export function destination(url, text) {
  const shown = bare(text);
  if (url.protocol === 'mailto:') {
    const to = decoded(url.pathname);
    const more = recipients(url);
    const same = [to, decoded(url.href)].some((form) => bare(form) === shown);
    if (same && shown && more.length === 0) return '';
    return [...(to ? [rightEnd(to)] : []), ...more].join(', ');
  }
  const host = url.host;
  const same = [url.href, decoded(url.href), host].some((form) => bare(form) === shown);
  // A user name or password before the host makes the text lie about it, whatever it says.
  if (same && shown && !url.username && !url.password) return '';
  return rightEnd(host);
}
