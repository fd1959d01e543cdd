// A bare HTTP server on 127.0.0.1 that records every request it receives (method, path,
// headers) and answers with `answer(req, record)`'s {status, headers, body} (by default 404):
// a redirect target that must never see a key, or a server that redirects elsewhere.

import { createServer } from 'node:http';

export class RecordingServer {
  constructor(answer) {
    this.answer = answer ?? (() => ({ status: 404, body: 'nothing here' }));
    /** @type {{method: string, path: string, headers: object}[]} */
    this.requests = [];
    this.sockets = new Set();
    this.server = createServer((req, res) => {
      const record = { method: req.method, path: req.url, headers: { ...req.headers } };
      this.requests.push(record);
      req.resume();
      req.on('end', () => {
        const { status = 200, headers = {}, body = '' } = this.answer(req, record);
        res.writeHead(status, headers);
        res.end(body);
      });
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  /** Starts listening on 127.0.0.1 (random port). */
  async listen() {
    await new Promise((done) => this.server.listen(0, '127.0.0.1', done));
    this.port = this.server.address().port;
    return this;
  }

  async close() {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((done) => this.server.close(() => done()));
  }
}

/** Starts a recording server answering with `answer` (see RecordingServer). */
export function startRecordingServer(answer) {
  return new RecordingServer(answer).listen();
}
