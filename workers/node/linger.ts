import type { ServerType } from '@hono/node-server';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

// An answer given before the request's body was all read (a 413 on its Content-Length, a 415,
// a 401) must reach the client. Node ends such a connection as soon as the answer is written
// when either side asked for `Connection: close`, and closing a socket with unread input
// sends a TCP reset, which can make the client's stack drop the answer it had not read yet
// (a 5 MiB enqueue saw a reset instead of its 413 about one time in five). So the close
// lingers: FIN after the answer, then the rest of the upload is read and discarded, and the
// socket is destroyed once the client closes its side, or at these bounds.

export type LingerBounds = { /** ms */ maxMs: number; /** bytes read after the answer */ maxBytes: number };

export const LINGER: LingerBounds = { maxMs: 2000, maxBytes: 16 * 1024 * 1024 };

const lingering = new WeakSet<Socket>();

const linger = (socket: Socket, req: IncomingMessage, b: LingerBounds): void => {
  if (lingering.has(socket) || socket.destroyed) return;
  lingering.add(socket);
  const from = socket.bytesRead;
  const started = Date.now();
  // The body is discarded, whoever was reading it (the parser keeps going while the socket reads).
  req.resume();
  socket.end();
  const check = setInterval(() => {
    if (Date.now() - started >= b.maxMs || socket.bytesRead - from > b.maxBytes) socket.destroy();
  }, 25);
  check.unref();
  socket.once('close', () => clearInterval(check));
};

/** Every request of `server` whose answer ends before its body was read gets a lingering close. */
export const lingerOnEarlyAnswers = (server: ServerType, b: LingerBounds = LINGER): void => {
  // HTTP/1.1 only (howk-api and howk-dev serve no HTTP/2).
  (server as Server).on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'GET' || req.method === 'HEAD') return;
    // 'prefinish' comes before Node's own 'finish' handler, which would destroy the socket.
    res.once('prefinish', () => {
      if (req.complete) return;
      const socket = req.socket;
      const destroySoon = socket.destroySoon.bind(socket);
      socket.destroySoon = () => (req.complete ? destroySoon() : linger(socket, req, b));
    });
  });
};
