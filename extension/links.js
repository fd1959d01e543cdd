// The links a model writes into an answer (issue 33): what one shows beside its text, and
// whether its address carries the session's text away. Pure functions; markdown.js uses them.
//
// Model output is untrusted: a page can make the model write a link whose text lies about
// where it goes, or one whose address holds the page or the conversation, for a click (or a
// prefetch) to deliver to someone else.
// - `destination(url, text)`: the host (for mailto:, the address) a link shows after its
//   text, or '' when the text already is the URL (with or without its scheme, `www.` or a
//   last `/`) or its host. A host in another script shows as the browser reads it (punycode).
// - `carriesKnownText(url, known)`: whether the decoded address (host, path, query and
//   fragment, percent-decoded up to three times) holds a run of more than 40 characters of
//   `known`, the text the view holds (questions, answers, passages). Case is ignored, and any
//   run of characters other than letters and digits counts as one space, so `+`, `_`, `-` or
//   `%20` for a space change nothing; a run starts and ends with a letter or a digit. An
//   address the known text spells out whole (a URL written on the page) is not taken away.
//   Text encoded otherwise (base64, a cipher) is not recognised.

/** A run of known text an address may hold: more is taken for the text itself. */
export const MAX_KNOWN_RUN = 40;

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

/** The last known text and its windows: a draft renders many times against the same one. */
let memo = { known: '', normalized: '', shingles: new Set() };

function shinglesOf(known) {
  if (memo.known !== known) {
    const normalized = normalize(known);
    memo = { known, normalized, shingles: new Set(windows(normalized)) };
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
  const address = normalize(decoded(url.href.slice(url.protocol.length)));
  if (address.length < WINDOW) return false;
  const { normalized, shingles } = shinglesOf(known);
  for (const window of windows(address)) {
    if (shingles.has(window)) return !normalized.includes(address);
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

/** Where the link `url` (a URL) goes, to show after its `text`; '' when the text says it. */
export function destination(url, text) {
  const shown = bare(text);
  const host = url.protocol === 'mailto:' ? decoded(url.pathname) : url.host;
  const same = [url.href, decoded(url.href), host].some((form) => bare(form) === shown);
  if (same && shown) return '';
  return host.length > 80 ? `${host.slice(0, 79)}…` : host;
}
