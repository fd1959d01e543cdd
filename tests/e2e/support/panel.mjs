// The in-page panel, as tests and pkg-scripts/run.mjs read it: panel.html in a frame of the
// extension's origin (out of the page's process, so the page's own accessibility tree does
// not include it), read over a CDP session attached to that frame's target.

/** The region the panel's status and answer are in. */
export const PANEL_REGION = 'KnowledgeLens explanation';

/** The panel's frame in `page`, when one is there. */
export const panelFrame = (page) =>
  page.frames().find((f) => new URL(f.url() || 'about:blank').pathname === '/panel.html') ?? null;

/** What reads the panel of `page`: pass it to panelTree; `detach()` when done. */
export function panelHandle(page) {
  const handle = { page, frame: null, cdp: null };
  handle.detach = () => handle.cdp?.detach().catch(() => {});
  return handle;
}

/**
 * The panel frame's accessibility tree: {byId, region} (the region named PANEL_REGION), or
 * null when there is no frame or no region yet. The CDP session is made when the frame is
 * there, and again when the frame was replaced (a new run navigates it).
 */
export async function panelTree(handle) {
  const frame = panelFrame(handle.page);
  if (!frame) return null;
  if (handle.frame !== frame) {
    handle.frame = frame;
    handle.cdp = await handle.page.context().newCDPSession(frame);
    await handle.cdp.send('Accessibility.enable');
  }
  let nodes;
  try {
    ({ nodes } = await handle.cdp.send('Accessibility.getFullAXTree'));
  } catch {
    handle.frame = null; // the frame went away: attach again next time
    return null;
  }
  const byId = new Map(nodes.map((n) => [n.nodeId, n]));
  const region = nodes.find((n) => !n.ignored && n.role?.value === 'region' && n.name?.value === PANEL_REGION);
  return region ? { byId, region } : null;
}
