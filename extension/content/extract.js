// KnowledgeLens page reader, injected by chrome.scripting.executeScript({files}) from the
// backend. It only reads the page: nothing is written to the DOM, nothing is left behind.
//
// The script's completion value is its result: the last expression statement below,
// {title, url, text}. Everything lives in a block so that injecting it again into the same
// isolated world does not collide with the previous run's `const`s.
{
  const MAX_CHARS = 200000;
  const MIN_MAIN_CHARS = 200;

  const visibleText = (node) => (node && typeof node.innerText === 'string' ? node.innerText : '');

  // Prefer the page's main content (the longest article / main), else the whole body.
  const candidates = Array.from(document.querySelectorAll('article, main, [role="main"]'));
  let best = '';
  for (const node of candidates) {
    const text = visibleText(node);
    if (text.length > best.length) best = text;
  }
  const raw = best.trim().length >= MIN_MAIN_CHARS
    ? best
    : visibleText(document.body) || (document.documentElement && document.documentElement.textContent) || '';

  // Collapse runs of spaces within lines, keep single line breaks and at most one blank line
  // between paragraphs (the backend splits passages on them).
  const text = raw
    .replace(/\r\n?/g, '\n')
    .replace(/[^\S\n]+/g, ' ')
    .replace(/ ?\n ?/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim()
    .slice(0, MAX_CHARS);

  ({ title: document.title, url: location.href, text });
}
