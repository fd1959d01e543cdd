// @ts-check
// Port client shared by the popup and the options page.
//
// One long-lived Port (named PORT_NAME, from protocol.gen.js) to the service worker. Requests carry a numeric id
// and resolve with the `data` of the matching envelope ({id, ok, data} | {id, ok:false, error}).
// Event messages ({type:'event', session, event}) go to `onEvent`. When the worker is stopped
// the port disconnects: pending requests are rejected, and the client reconnects after a short
// delay and calls `onConnect` again so the page can fetch a fresh snapshot.

import { PORT_NAME } from './protocol.gen.js';

/** @typedef {import('./protocol.gen.js').RequestType} RequestType */
/** @typedef {import('./protocol.gen.js').EventEnvelope} EventEnvelope */

/** An error envelope from the backend, or a request lost to a disconnect (kind 'disconnected'). */
export class BackendError extends Error {
  constructor(kind, message) {
    super(message);
    this.name = 'BackendError';
    this.kind = kind;
  }
}

const DISCONNECTED_MESSAGE =
  'The KnowledgeLens background worker stopped before answering this request. ' +
  'It has been restarted; please try again.';

export class Connection {
  /**
   * @param {object} handlers
   * @param {(message: EventEnvelope) => void} [handlers.onEvent] event broadcasts from the backend
   * @param {(info: {reconnected: boolean}) => void} [handlers.onConnect] after every (re)connect
   * @param {() => void} [handlers.onDisconnect] when the port is lost
   */
  constructor({ onEvent = () => {}, onConnect = () => {}, onDisconnect = () => {} } = {}) {
    this.onEvent = onEvent;
    this.onConnect = onConnect;
    this.onDisconnect = onDisconnect;
    this.port = null;
    this.nextId = 1;
    /** @type {Map<number, {resolve: Function, reject: Function, type: string}>} */
    this.pending = new Map();
    this.connects = 0;
    this.retryDelayMs = 250;
  }

  /** Opens the port (and reopens it whenever it is lost). */
  start() {
    let port;
    try {
      port = chrome.runtime.connect({ name: PORT_NAME });
    } catch (err) {
      // The extension context can be invalid for a moment (e.g. while the worker restarts).
      console.warn('KnowledgeLens: could not connect, retrying:', err);
      this.scheduleReconnect();
      return;
    }
    this.port = port;
    port.onMessage.addListener((message) => this.receive(message));
    port.onDisconnect.addListener(() => this.lost(port));
    const reconnected = this.connects > 0;
    this.connects += 1;
    this.retryDelayMs = 250;
    this.onConnect({ reconnected });
  }

  scheduleReconnect() {
    const delay = this.retryDelayMs;
    this.retryDelayMs = Math.min(this.retryDelayMs * 2, 4000);
    setTimeout(() => this.start(), delay);
  }

  lost(port) {
    // Reading lastError marks it as checked (otherwise Chrome logs it as unchecked).
    void chrome.runtime.lastError;
    if (this.port !== port) return;
    this.port = null;
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const request of pending) {
      request.reject(new BackendError('disconnected', DISCONNECTED_MESSAGE));
    }
    this.onDisconnect();
    this.scheduleReconnect();
  }

  receive(message) {
    if (!message || typeof message !== 'object') return;
    if (message.type === 'event') {
      this.onEvent(message);
      return;
    }
    const request = this.pending.get(message.id);
    if (!request) return;
    this.pending.delete(message.id);
    if (message.ok) {
      request.resolve(message.data);
    } else {
      const error = message.error || {};
      request.reject(
        new BackendError(error.kind || 'internal', error.message || 'The request failed.'),
      );
    }
  }

  /**
   * Sends `{id, type, ...fields}` and resolves with the envelope's data: the request's and the
   * reply's types are generated from the Rust types (protocol.gen.d.ts).
   * @template {RequestType} T
   * @param {T} type
   * @param {import('./protocol.gen.js').RequestFields<T>} [fields]
   * @returns {Promise<import('./protocol.gen.js').ReplyOf<T>>}
   */
  request(type, fields) {
    const port = this.port;
    if (!port) {
      return Promise.reject(new BackendError('disconnected', DISCONNECTED_MESSAGE));
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, type });
      try {
        port.postMessage({ ...fields, id, type });
      } catch (err) {
        this.pending.delete(id);
        reject(new BackendError('disconnected', DISCONNECTED_MESSAGE));
      }
    });
  }
}
