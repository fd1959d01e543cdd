// @ts-check
// KnowledgeLens page reader, injected by chrome.scripting.executeScript({files}) from the
// backend after content/constants.gen.js (the page cap, generated from Rust),
// vendor/readability/Readability-readerable.js, vendor/readability/Readability.js and
// content/visible.js (see EXTRACT_SCRIPTS in src/web/pages.rs). It only reads the page:
// nothing is written to the live DOM, nothing is left behind.
//
// Only text the user can see is read (content/visible.js decides, on the live DOM). The main
// content comes from Mozilla's Readability, run on a clone of the document from which every
// hidden subtree and unreadable text (a text node's hidden part too) was removed first: the live tree and its clone are
// walked side by side, so the live page is never marked. When the page is not readable
// (isProbablyReaderable says no, Readability fails, or its result is short), the visible text
// of the main article (or of the body) is read instead.
//
// The script's completion value is its result: the last expression statement below,
// {title, url, text, reader, lang, pdf} with reader "readability" or "visible-text"; `pdf`
// says the tab shows a PDF (then there is no text: the worker reads the PDF itself). Everything lives in
// a block so that injecting it again into the same isolated world does not collide.
//
// Headings (h1-h6) are written as Markdown heading lines, each its own paragraph:
// "## Section title" (the passage splitter, src/page/passages.rs, relies on them).
{
  const MAX_CHARS = globalThis.__klContent.MAX_PAGE_CHARS;
  // The raw text is cut here before normalising, so a huge page costs no huge regex pass.
  const RAW_CAP = MAX_CHARS + MAX_CHARS / 4;
  const MIN_MAIN_CHARS = 200;
  // Readability's article is used only when it has at least this much text.
  const MIN_READABLE_CHARS = 500;
  const BLOCK_TAGS = new Set(['ADDRESS', 'ARTICLE', 'ASIDE', 'BLOCKQUOTE', 'DD', 'DIV', 'DL', 'DT', 'FIGCAPTION',
    'FIGURE', 'FOOTER', 'FORM', 'HEADER', 'HR', 'LI', 'MAIN', 'NAV', 'OL', 'PRE', 'SECTION', 'TABLE', 'TR', 'UL']);
  const PARAGRAPH_TAGS = new Set(['P']);
  const HEADING_LEVEL = { H1: 1, H2: 2, H3: 3, H4: 4, H5: 5, H6: 6 };

  const vis = globalThis.__klVisibility();

  // A clone of the document without what the user cannot see (the live DOM is untouched).
  const visibleClone = () => {
    const clone = /** @type {Document} */ (document.cloneNode(true));
    const drop = [];
    const walk = (live, copy) => {
      const liveKids = live.childNodes;
      const copyKids = copy.childNodes;
      for (let i = 0; i < liveKids.length && i < copyKids.length; i += 1) {
        const node = liveKids[i];
        if (node.nodeType === 1) {
          if (vis.hiddenElement(node)) drop.push(copyKids[i]);
          else walk(node, copyKids[i]);
        } else if (node.nodeType === 3 && node.nodeValue.trim()) {
          // Only the part that shows (a clamped or clipped text loses the rest).
          const shown = vis.shownText(node, live);
          if (!shown.trim()) drop.push(copyKids[i]);
          else if (shown !== node.nodeValue) copyKids[i].nodeValue = shown;
        }
      }
    };
    if (document.body && !vis.hiddenWithAncestors(document.body)) {
      walk(document.body, clone.body);
    } else if (clone.body) {
      drop.push(...clone.body.childNodes);
    }
    for (const node of drop) node.remove();
    return clone;
  };

  // The text of a Readability article element, paragraphs kept apart, stopping at RAW_CAP.
  const articleText = (root) => {
    const out = [];
    let length = 0;
    const walk = (node) => {
      for (const child of node.childNodes) {
        if (length >= RAW_CAP) return;
        if (child.nodeType === 3) {
          out.push(child.nodeValue);
          length += child.nodeValue.length;
        } else if (child.nodeType === 1) {
          if (child.tagName === 'BR') { out.push('\n'); continue; }
          const level = HEADING_LEVEL[child.tagName];
          if (level) {
            const title = child.textContent.replace(/\s+/g, ' ').trim();
            const line = title ? `\n\n${'#'.repeat(level)} ${title}\n\n` : '';
            out.push(line);
            length += line.length;
            continue;
          }
          const brk = PARAGRAPH_TAGS.has(child.tagName) ? '\n\n'
            : BLOCK_TAGS.has(child.tagName) ? '\n' : child.tagName === 'TD' || child.tagName === 'TH' ? ' ' : '';
          out.push(brk);
          walk(child);
          out.push(brk);
        }
      }
    };
    walk(root);
    return out.join('').slice(0, RAW_CAP);
  };

  const readable = () => {
    if (typeof Readability !== 'function') return null;
    const visible = (node) => !vis.hiddenWithAncestors(node);
    if (typeof isProbablyReaderable === 'function' && !isProbablyReaderable(document, { visibilityChecker: visible })) {
      return null;
    }
    try {
      const article = new Readability(visibleClone(), { serializer: (el) => el, charThreshold: MIN_READABLE_CHARS }).parse();
      if (!article || !article.content) return null;
      const raw = articleText(article.content);
      return raw.trim().length >= MIN_READABLE_CHARS ? raw : null;
    } catch (err) {
      console.warn('KnowledgeLens: Readability failed, reading the visible text:', err);
      return null;
    }
  };

  // The visible article / main with the most visible text, else the visible text of the body.
  // Lengths are counted with whitespace runs as one space (the line breaks of blocks whose
  // text is unreadable are not text).
  const visibleFallback = () => {
    const size = (text) => text.replace(/\s+/g, ' ').trim().length;
    let [best, bestSize] = ['', 0];
    for (const node of document.querySelectorAll('article, main, [role="main"]')) {
      const text = vis.visibleText(node, RAW_CAP, { headings: true });
      const n = size(text);
      if (n > bestSize) [best, bestSize] = [text, n];
    }
    return bestSize >= MIN_MAIN_CHARS ? best : vis.visibleText(document.body, RAW_CAP, { headings: true });
  };

  // Chrome's PDF viewer: the worker reads the PDF itself (src/web/pdf.rs).
  const pdf = document.contentType === 'application/pdf';
  const fromReadability = pdf ? null : readable();
  const reader = fromReadability === null ? 'visible-text' : 'readability';
  const raw = pdf ? '' : fromReadability ?? visibleFallback();
  const text = vis.normalize(raw.slice(0, RAW_CAP)).slice(0, MAX_CHARS);

  // The title and the address are the page's to make as long as it likes: cut here (and
  // again in Rust), never split inside a surrogate pair.
  const cap = (value, max) => {
    const cut = String(value ?? '').slice(0, max);
    return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
  };
  const { MAX_TITLE_CHARS, MAX_URL_CHARS } = globalThis.__klContent;
  ({ title: cap(document.title, MAX_TITLE_CHARS), url: cap(location.href, MAX_URL_CHARS), text, reader, lang: document.documentElement.lang || '', pdf });
}
