import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
  at: number;
}

/** A status, or a status with response headers (for example a redirect's `location` or `retry-after`). */
export type ReceiverAnswer = number | { status: number; headers?: Record<string, string> };

export interface Receiver {
  url: string;
  received: ReceivedRequest[];
  /** TCP connections accepted so far (a refused delivery must leave this at 0). */
  readonly connections: number;
  /** Answer the next requests with these (then the default, 200 unless `respondAlways` changed it). */
  respondWith(...answers: ReceiverAnswer[]): void;
  /** Answer every request (after queued ones) with this. */
  respondAlways(answer: ReceiverAnswer): void;
  /** Holds the answers of the requests that come from now on (they are recorded at once) until `release`. */
  hold(): void;
  /** Answers the held requests and stops holding. */
  release(): void;
  /** Requests being held now. */
  readonly held: number;
  /** Waits until `predicate` matches `count` requests. */
  waitFor(predicate: (r: ReceivedRequest) => boolean, count?: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

/** A local webhook receiver on 127.0.0.1 that records what it gets. */
export async function startReceiver(): Promise<Receiver> {
  const received: ReceivedRequest[] = [];
  const queue: ReceiverAnswer[] = [];
  let fallback: ReceiverAnswer = 200;
  const waiters = new Set<() => void>();
  let holding = false;
  const held: Array<() => void> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const answer = queue.shift() ?? fallback;
      const { status, headers } =
        typeof answer === 'number' ? { status: answer, headers: {} } : { headers: {}, ...answer };
      received.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        json,
        at: Date.now(),
      });
      for (const w of waiters) w();
      const reply = () => res.writeHead(status, { 'content-type': 'application/json', ...headers }).end('{"ok":true}');
      if (holding) held.push(reply);
      else reply();
    });
  });
  let connections = 0;
  server.on('connection', () => connections++);
  server.keepAliveTimeout = 1000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    url,
    received,
    get connections() {
      return connections;
    },
    respondWith(...answers) {
      queue.push(...answers);
    },
    respondAlways(answer) {
      fallback = answer;
    },
    hold() {
      holding = true;
    },
    release() {
      holding = false;
      for (const reply of held.splice(0)) reply();
    },
    get held() {
      return held.length;
    },
    async waitFor(predicate, count = 1, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const hits = received.filter(predicate);
        if (hits.length >= count) return hits;
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`receiver got ${hits.length} of ${count} expected requests`);
        await new Promise<void>((r) => {
          const done = () => {
            waiters.delete(done);
            clearTimeout(t);
            r();
          };
          const t = setTimeout(done, Math.min(left, 250));
          waiters.add(done);
        });
      }
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
