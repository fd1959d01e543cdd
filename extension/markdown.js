// @ts-check
// KnowledgeLens answer renderer: Markdown from the model into DOM nodes, one-shot or streamed.
//
// The text is parsed by marked's lexer (vendored, unmodified: extension/vendor/marked/, the
// `marked` version pinned in package.json; tests/unit/markdown.test.mjs checks the copy). Only
// its token tree is used, never its HTML output: every node here is made with createElement and
// filled with textContent, so nothing the model or a page writes is ever parsed as HTML.
// - Raw HTML in the text (`<script>`, `<img onerror=...>`) is shown as text.
// - Links keep only http:, https: and mailto: targets and open in a new tab
//   (`target="_blank" rel="noopener noreferrer"`); any other link shows as its text.
// - A link the model wrote shows where it goes (links.js): its host after its text, inside the
//   link (`Docs (example.com)`, also its accessible name), unless the text is the URL. The
//   model's title is never shown. A link whose address carries more than 40 characters of
//   the `known` text (the page and conversation text the caller's view holds) in its host,
//   query or fragment, or more than 80 in its path, is text, with a note saying so, unless it
//   is one of the session's own addresses (`urls`: the page's, the search results'; and the
//   web sources').
// - Images are never loaded: a safe image URL becomes a link named by its alt text.
// - Citations `[n]` (web) and `[pN]` (page passage) naming a given source become links to it:
//   web sources to their URL in a new tab, page sources to `#source-<id>`. Others stay text.
//
// Streaming: createStreamRenderer keeps one DOM node per top-level block. Each animation frame
// it lexes the whole text again and replaces only blocks whose source changed, which while
// streaming is the last one; `finish` reconciles every block so the DOM equals renderMarkdown.
// With `draftLinks: false` the draft's links are text (with their host) until `finish`.

import { carriesKnownText, destination } from './links.js';
import { Lexer } from './vendor/marked/marked.esm.js';

/** The link protocols an answer may use. */
const SAFE_PROTOCOLS = new Set(['http:', 'https:', 'mailto:']);

/** `[12]` or `[p3]`: a citation inside plain text. */
const CITATION = /\[(p?\d+)\]/g;

/** The few named entities marked leaves in text (it decodes numeric ones itself). */
const ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

/**
 * @typedef {{id: string|number, kind: 'web'|'page', title?: string, url?: string}} Source
 * @typedef {{sources?: Source[], known?: string, urls?: string[], document?: Document}} RenderOptions
 *   `known`: the page and conversation text the view holds, which no link may carry away.
 *   `urls`: the session's own addresses (the page's, the search results'), never held back.
 */

/**
 * Renders `text` as Markdown into a fragment of block nodes (one per top-level block).
 * @param {string} text
 * @param {RenderOptions} [options]
 * @returns {DocumentFragment}
 */
export function renderMarkdown(text, { sources = [], known = '', urls = [], document: doc = globalThis.document } = {}) {
  const ctx = context(doc, sources, known, urls);
  const fragment = doc.createDocumentFragment();
  for (const block of lexBlocks(text)) fragment.append(renderTopLevel(block, ctx));
  return fragment;
}

/**
 * Renders a growing text into `container` (emptied first; the renderer owns its children).
 * `update(fullText)` may be called for every delta: at most once per animation frame the text
 * is rendered again, replacing only the top-level blocks whose source changed (the last one,
 * while an answer streams); nodes of the other blocks stay as they are. `finish(fullText)`
 * renders at once, and afterwards the container's children equal renderMarkdown(fullText).
 * `finish(fullText, {sources, known, urls})` may also bring the sources the completed answer
 * cites and the known text and addresses of the finished view (the draft often streams before they are known);
 * blocks whose rendering is unchanged keep their nodes. `draftLinks: false`: links render as
 * text until `finish`.
 * @param {Element} container
 * @param {RenderOptions & {draftLinks?: boolean, requestFrame?: (cb: () => void) => number,
 *   cancelFrame?: (id: number) => void}} [options]
 * @returns {{update(fullText: string): void,
 *   finish(fullText: string, options?: {sources?: Source[], known?: string, urls?: string[]}): void,
 *   cancel(): void}}
 */
export function createStreamRenderer(container, {
  sources = [],
  known = '',
  urls = [],
  draftLinks = true,
  requestFrame = (cb) => globalThis.requestAnimationFrame(cb),
  cancelFrame = (id) => globalThis.cancelAnimationFrame(id),
} = {}) {
  let ctx = context(container.ownerDocument, sources, known, urls);
  /** @type {{raw: string, node: ChildNode}[]} the rendered blocks, in order */
  const shown = [];
  let pending = '';
  let rendered = null; // the text the DOM shows
  let frame = null;
  container.replaceChildren();

  const render = (text, final) => {
    if (!final && text === rendered) return;
    rendered = text;
    ctx.liveLinks = final || draftLinks;
    const blocks = lexBlocks(text);
    blocks.forEach((block, i) => {
      const old = shown[i];
      // A block whose source is unchanged renders the same (up to link definitions further
      // down, which only `finish` takes into account).
      if (old && !final && old.raw === block.raw) return;
      const node = renderTopLevel(block, ctx);
      if (!old) {
        container.append(node);
        shown.push({ raw: block.raw, node });
      } else if (old.node.isEqualNode(node)) {
        old.raw = block.raw;
      } else {
        old.node.replaceWith(node);
        shown[i] = { raw: block.raw, node };
      }
    });
    for (const gone of shown.splice(blocks.length)) gone.node.remove();
  };

  return {
    update(fullText) {
      pending = fullText;
      if (frame !== null) return;
      frame = requestFrame(() => {
        frame = null;
        render(pending, false);
      });
    },
    finish(fullText, { sources: finalSources, known: finalKnown, urls: finalUrls } = {}) {
      if (frame !== null) cancelFrame(frame);
      frame = null;
      if (finalSources || finalKnown !== undefined || finalUrls) {
        ctx = context(ctx.doc, finalSources ?? sources, finalKnown ?? known, finalUrls ?? urls);
      }
      render(fullText, true);
    },
    /** Drops a render still waiting for its frame (the container is someone else's now). */
    cancel() {
      if (frame !== null) cancelFrame(frame);
      frame = null;
    },
  };
}

// ---- lexing --------------------------------------------------------------------------------

/** The top-level tokens that render to a node (blank lines and link definitions do not). */
function lexBlocks(text) {
  const tokens = new Lexer({ gfm: true }).lex(String(text ?? ''));
  return tokens.filter((t) => t.type !== 'space' && t.type !== 'def');
}

function context(doc, sources, known, urls) {
  const byId = new Map();
  const own = new Set();
  for (const source of sources ?? []) {
    if (source && source.id !== undefined && source.id !== null) byId.set(String(source.id), source);
    if (source?.kind === 'web') own.add(hrefOf(source.url));
  }
  for (const url of urls ?? []) own.add(hrefOf(url));
  own.delete(null);
  return { doc, byId, known: String(known ?? ''), own, liveLinks: true, inLink: false };
}

/** `url` as the browser writes it, or null when it is no URL. */
function hrefOf(url) {
  try {
    return new URL(String(url ?? '')).href;
  } catch {
    return null;
  }
}

// ---- blocks --------------------------------------------------------------------------------

/** One node for one top-level token (a stray inline `text` token becomes a paragraph). */
function renderTopLevel(token, ctx) {
  if (token.type === 'text') return el(ctx, 'p', inlineChildren(token, ctx));
  return renderBlock(token, ctx);
}

function renderBlock(token, ctx) {
  switch (token.type) {
    case 'paragraph':
      return el(ctx, 'p', inlineChildren(token, ctx));
    case 'heading':
      return el(ctx, `h${Math.min(Math.max(token.depth | 0, 1), 6)}`, inlineChildren(token, ctx));
    case 'code':
      return codeBlock(token, ctx);
    case 'blockquote':
      return el(ctx, 'blockquote', blockChildren(token.tokens, ctx));
    case 'list':
      return list(token, ctx);
    case 'table':
      return table(token, ctx);
    case 'hr':
      return el(ctx, 'hr');
    case 'html':
      // Raw HTML is shown as what it is: text.
      return el(ctx, 'pre', [textNode(ctx, token.raw.replace(/\n+$/, ''))], 'md-raw');
    case 'text':
      // Tight list items hold their text as a block-level `text` token: no paragraph.
      return token.tokens ? fragmentOf(ctx, inlineChildren(token, ctx)) : textNode(ctx, decode(token.text));
    case 'checkbox':
      return checkbox(token, ctx);
    default:
      return el(ctx, 'p', [textNode(ctx, token.raw ?? '')]);
  }
}

function blockChildren(tokens, ctx) {
  return (tokens ?? []).filter((t) => t.type !== 'space' && t.type !== 'def').map((t) => renderBlock(t, ctx));
}

function codeBlock(token, ctx) {
  // Indented code keeps its last newline in marked's tokens, fenced code does not.
  const code = el(ctx, 'code', [textNode(ctx, String(token.text ?? '').replace(/\n+$/, ''))]);
  const lang = /^[\w+#.-]{1,40}$/.test(token.lang ?? '') ? token.lang : '';
  if (lang) code.className = `language-${lang}`;
  return el(ctx, 'pre', [code]);
}

function list(token, ctx) {
  const node = el(ctx, token.ordered ? 'ol' : 'ul');
  const start = Number(token.start);
  if (token.ordered && Number.isInteger(start) && start !== 1) node.setAttribute('start', String(start));
  for (const item of token.items ?? []) node.append(el(ctx, 'li', blockChildren(item.tokens, ctx)));
  return node;
}

/** A task list box, as a picture with a name: an input would need a label and does nothing. */
function checkbox(token, ctx) {
  const box = el(ctx, 'span', [textNode(ctx, token.checked ? '\u2611' : '\u2610')], 'md-task');
  box.setAttribute('role', 'img');
  box.setAttribute('aria-label', token.checked ? 'Done' : 'Not done');
  return fragmentOf(ctx, [box, textNode(ctx, ' ')]);
}

function table(token, ctx) {
  const cell = (tag, c) => {
    const node = el(ctx, tag, inlineChildren(c, ctx));
    if (c.align === 'left' || c.align === 'right' || c.align === 'center') node.style.textAlign = c.align;
    return node;
  };
  const head = el(ctx, 'thead', [el(ctx, 'tr', token.header.map((c) => cell('th', c)))]);
  const body = el(ctx, 'tbody', token.rows.map((row) => el(ctx, 'tr', row.map((c) => cell('td', c)))));
  return el(ctx, 'table', token.rows.length ? [head, body] : [head]);
}

// ---- inline --------------------------------------------------------------------------------

function inlineChildren(token, ctx) {
  const tokens = token.tokens ?? [{ type: 'text', text: token.text ?? '' }];
  const nodes = [];
  let run = ''; // adjacent text tokens, joined so a citation split between them is still found
  const flush = () => {
    if (run) nodes.push(...textWithCitations(run, ctx));
    run = '';
  };
  for (const t of tokens) {
    if (t.type === 'text' && !t.tokens) {
      run += decode(t.text);
      continue;
    }
    flush();
    nodes.push(renderInline(t, ctx));
  }
  flush();
  return nodes;
}

function renderInline(token, ctx) {
  switch (token.type) {
    case 'strong':
      return el(ctx, 'strong', inlineChildren(token, ctx));
    case 'em':
      return el(ctx, 'em', inlineChildren(token, ctx));
    case 'del':
      return el(ctx, 'del', inlineChildren(token, ctx));
    case 'codespan':
      return el(ctx, 'code', [textNode(ctx, token.text ?? '')]);
    case 'br':
      return el(ctx, 'br');
    case 'link':
      return link(token, ctx);
    case 'image':
      return image(token, ctx);
    case 'escape':
      return textNode(ctx, token.text ?? '');
    case 'checkbox':
      return checkbox(token, ctx);
    case 'html':
      return textNode(ctx, token.raw ?? '');
    case 'text':
      return fragmentOf(ctx, inlineChildren(token, ctx));
    default:
      return textNode(ctx, token.raw ?? '');
  }
}

function link(token, ctx) {
  const href = safeHref(token.href);
  if (!href || ctx.inLink) return fragmentOf(ctx, inlineChildren(token, ctx));
  let children;
  ctx.inLink = true; // no link (or citation) inside a link
  try {
    children = inlineChildren(token, ctx);
  } finally {
    ctx.inLink = false;
  }
  return modelLink(ctx, href, children);
}

/** Images are not loaded: a safe URL becomes a link named by the alt text, else the alt text. */
function image(token, ctx) {
  const href = safeHref(token.href);
  const alt = decode(token.text ?? '');
  if (!href || ctx.inLink) return textNode(ctx, alt);
  const node = modelLink(ctx, href, [textNode(ctx, alt || href)]);
  if (node.nodeName === 'A') node.className = 'md-image';
  return node;
}

/**
 * A link the model wrote to `href` (safe), showing `children` and then its host unless they
 * are its URL; text instead while links are not live (a draft), and text with a note when the
 * address carries the known text (never one of the session's own addresses). The model's
 * title is never used.
 */
function modelLink(ctx, href, children) {
  const url = new URL(href);
  if (!ctx.own.has(url.href) && carriesKnownText(url, ctx.known)) {
    const note = ` (link to ${destination(url, '')} removed: it carried text from this session)`;
    return fragmentOf(ctx, [...children, el(ctx, 'span', [textNode(ctx, note)], 'md-link-removed')]);
  }
  const host = destination(url, children.map((node) => node.textContent).join(''));
  const shown = host ? [...children, el(ctx, 'span', [textNode(ctx, ` (${host})`)], 'md-link-host')] : children;
  return ctx.liveLinks ? anchor(ctx, href, shown) : fragmentOf(ctx, shown);
}

function textWithCitations(text, ctx) {
  if (ctx.inLink || ctx.byId.size === 0) return [textNode(ctx, text)];
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(CITATION)) {
    const cite = citation(match[1], ctx);
    if (!cite) continue;
    if (match.index > last) nodes.push(textNode(ctx, text.slice(last, match.index)));
    nodes.push(cite);
    last = match.index + match[0].length;
  }
  if (last < text.length) nodes.push(textNode(ctx, text.slice(last)));
  return nodes;
}

/** A link to the source a citation names, or null when it names none (it then stays text). */
function citation(id, ctx) {
  const source = ctx.byId.get(id);
  if (!source) return null;
  const isPage = id.startsWith('p');
  if (source.kind !== (isPage ? 'page' : 'web')) return null;
  let a;
  if (isPage) {
    a = el(ctx, 'a', [textNode(ctx, `[${id}]`)]);
    a.setAttribute('href', `#source-${id}`);
  } else {
    const href = safeHref(source.url);
    if (!href) return null;
    a = anchor(ctx, href, [textNode(ctx, `[${id}]`)]);
  }
  a.className = 'md-citation';
  const title = String(source.title ?? '').trim();
  a.setAttribute('aria-label', title ? `Source ${id}: ${title}` : `Source ${id}`);
  return a;
}

// ---- helpers -------------------------------------------------------------------------------

/** The normalized URL when it is absolute and http:, https: or mailto:, else null. */
export function safeHref(href) {
  if (typeof href !== 'string' || !href.trim()) return null;
  try {
    const url = new URL(href.trim());
    return SAFE_PROTOCOLS.has(url.protocol) ? url.href : null;
  } catch {
    return null;
  }
}

function anchor(ctx, href, children) {
  const a = el(ctx, 'a', children);
  a.setAttribute('href', href);
  a.setAttribute('target', '_blank');
  a.setAttribute('rel', 'noopener noreferrer');
  return a;
}

function decode(text) {
  return String(text ?? '').replace(/&(amp|lt|gt|quot|apos|nbsp);/g, (_, name) => ENTITIES[name]);
}

function el(ctx, tag, children = [], className = '') {
  const node = ctx.doc.createElement(tag);
  if (className) node.className = className;
  node.append(...children);
  return node;
}

function textNode(ctx, text) {
  return ctx.doc.createTextNode(String(text ?? ''));
}

function fragmentOf(ctx, nodes) {
  const fragment = ctx.doc.createDocumentFragment();
  fragment.append(...nodes);
  return fragment;
}
