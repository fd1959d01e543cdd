// The options page's checks of typed addresses, before the backend validates them again
// (src/llm/provider.rs, src/types/secrets.rs): each returns a message a user can act on, or
// says which addresses are this computer.

/** A friendly message for an unusable Base URL, or null. The backend validates again. */
export function urlProblem(text, example) {
  if (!text) return `Enter the Base URL of your provider, e.g. ${example}.`;
  let url;
  try {
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

/** Hosts that are this computer: localhost (and its subdomains), 127.0.0.0/8, ::1. */
export function isLoopbackHost(hostname) {
  return hostname === 'localhost' || hostname.endsWith('.localhost') || hostname === '[::1]' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** Whether `key` would go over plain http:// to another computer (the backend refuses it). */
export function keyInClear(url, key) {
  return Boolean(key) && url.protocol === 'http:' && !isLoopbackHost(url.hostname);
}
