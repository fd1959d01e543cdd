// A static file server on 127.0.0.1 (random port) for fixture and sample pages.
// Loopback pages are covered by the extension's host permissions, so the backend can read them.

import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { extname, join, normalize, sep } from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * Serves `root` until `close()`. `url(path)` gives a page's address.
 * @returns {Promise<{origin: string, url: (path?: string) => string, close: () => Promise<void>}>}
 */
export async function serveDirectory(root) {
  const base = normalize(root + sep);
  const server = createServer(async (req, res) => {
    const { pathname } = new URL(req.url, 'http://127.0.0.1');
    const relative = decodeURIComponent(pathname).replace(/^\/+/, '') || 'index.html';
    const file = normalize(join(base, relative.endsWith('/') ? `${relative}index.html` : relative));
    if (!file.startsWith(base) || req.method !== 'GET') {
      res.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
      res.end(body);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`not found: ${pathname}`);
    }
  });
  return listenOnLoopback(server);
}

/**
 * Starts `server` on `host` (127.0.0.1 unless given; random port): its `origin`, `url(path)` and `close()`, which
 * also ends open connections, so a hanging request never blocks a test's end.
 * @param {import('node:http').Server} server
 */
export async function listenOnLoopback(server, host = '127.0.0.1') {
  const sockets = new Set();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise((done) => server.listen(0, host, done));
  const origin = `http://${host}:${server.address().port}`;
  return {
    origin,
    url: (path = '') => `${origin}/${path.replace(/^\/+/, '')}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((done) => server.close(() => done()));
    },
  };
}

/** A loopback port with nothing listening on it (for "provider unreachable"). */
export async function closedPort() {
  const server = createServer();
  await new Promise((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address();
  await new Promise((done) => server.close(() => done()));
  return port;
}
