// @ts-check
// The options page's checks of typed addresses, before the backend validates them again
// (src/settings.rs, src/url.rs): each returns a message a user can act on, or says which
// addresses are this computer. Both read addresses with the browser's URL parser, and
// tests/fixtures/urls.json holds them to the same answers.

/** A friendly message for an unusable Base URL, or null. The backend validates again. */
export function urlProblem(text, example) {
  if (!text) return `Enter the Base URL of your provider, e.g. ${example}.`;
  let url;
  try {
    // Chromium's URL reads a space in a host (the standard fails it); the backend refuses it.
    if (/\s/.test(text.trim())) throw new TypeError('white space');
    url = new URL(text);
  } catch {
    return `"${text}" is not a valid URL. Use a full address such as ${example}.`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return 'The Base URL must start with http:// or https://.';
  }
  if (url.username || url.password) {
    return 'Put credentials in the API key field, not in the Base URL.';
  }
  return null;
}

/** A friendly message for an unusable Search base URL, or null. The backend validates again. */
export function searchUrlProblem(text) {
  if (!text) return null;
  let url;
  try {
    if (/\s/.test(text.trim())) throw new TypeError('white space');
    url = new URL(text);
  } catch {
    return `"${text}" is not a valid Search base URL. Use a full address such as http://localhost:8888, or leave it empty.`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return 'The Search base URL must start with http:// or https://.';
  }
  if (url.username || url.password) {
    return 'Put credentials in the Search API key field, not in the Search base URL.';
  }
  return null;
}

/** Loopback origins are covered by the manifest's host_permissions. */
export function isLoopback(url) {
  return url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname === '127.0.0.1');
}

/**
 * Hosts that are this computer, as Chrome decides: localhost and its subdomains (a trailing
 * dot aside), 127.0.0.0/8, [::1]. `hostname` is a URL's (the standard's serialization:
 * lower case, IPv4 in dotted decimal, IPv6 shortened), as src/url.rs checks it.
 */
export function isLoopbackHost(hostname) {
  const host = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  return host === 'localhost' || host.endsWith('.localhost') || host === '[::1]' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** Whether `key` would go over plain http:// to another computer (the backend refuses it). */
export function keyInClear(url, key) {
  return Boolean(key) && url.protocol === 'http:' && !isLoopbackHost(url.hostname);
}
