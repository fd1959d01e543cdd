// @ts-check
// A small element builder for the popup's views. Text goes in with textContent only: page
// text and model output are untrusted and never parsed as HTML.

/**
 * A new element: `h('p', {className: 'x', title: 't'}, 'text', child)`. Properties are set
 * as properties (`className`, `href`, `open`, ...), except `data-*` and `aria-*`, which are
 * attributes. Strings among the children become text nodes; null and false are skipped.
 * @returns {HTMLElement}
 */
export function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null) continue;
    if (key.startsWith('data-') || key.startsWith('aria-')) node.setAttribute(key, String(value));
    else node[key] = value;
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}

/** Replaces `parent`'s children with `nodes` unless they are already exactly those nodes. */
export function setChildren(parent, nodes) {
  const current = parent.children;
  if (current.length === nodes.length && nodes.every((node, i) => current[i] === node)) return;
  parent.replaceChildren(...nodes);
}

/** `n` formatted with thousands separators (en-US, as the token counter). */
export const formatCount = (n) => Number(n ?? 0).toLocaleString('en-US');
