import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { measure } from '../../scripts/bench/load';

/**
 * A server that answers the second hundred requests it gets 40 ms late and every other one at once: with three paced
 * runs of 100 requests, the second run is the slow one (and, finishing last, the one with the lowest rate).
 */
async function serverSlowInSecondRun(): Promise<{ url: string; close(): Promise<void> }> {
  let seen = 0;
  const server = http.createServer((req, res) => {
    const slow = seen >= 100 && seen < 200;
    seen++;
    req.resume();
    // The 40 ms are the latency the row must report, not a wait of the test's: nothing here waits on it to happen first.
    req.on('end', () => (slow ? setTimeout(() => res.end('{}'), 40) : res.end('{}')));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

test('when a paced row has several runs, then its percentiles are those of every request of every run', async () => {
  const server = await serverSlowInSecondRun();
  try {
    const r = await measure(
      { url: server.url, rate: 100, connections: 10 },
      { durationS: 1, warmupS: 0, runs: 3, connections: 10 },
    );
    expect(r.completedAll).toBe(300);
    // A third of the requests took 40 ms or more: the p99 is one of them, the p50 is not.
    expect(r.p99).toBeGreaterThanOrEqual(40);
    expect(r.p50).toBeLessThan(40);
  } finally {
    await server.close();
  }
}, 30_000);

test('when a paced run gets errors and unexpected statuses, then the row says how many of each kind', async () => {
  // Every 10th request is refused with 503, every 25th has its socket destroyed without an answer.
  let seen = 0;
  const server = http.createServer((req, res) => {
    const n = ++seen;
    req.resume();
    req.on('end', () => {
      if (n % 25 === 0) req.socket.destroy();
      else if (n % 10 === 0) res.writeHead(503).end('{}');
      else res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    const r = await measure(
      { url: `http://127.0.0.1:${port}/`, rate: 100, connections: 10 },
      { durationS: 1, warmupS: 0, runs: 2, connections: 10 },
    );
    // 200 requests: 20 multiples of 10, 8 of 25, 4 of both (destroyed).
    expect(r.errorKinds).toEqual({ 'status 503': 16, ECONNRESET: 8 });
    expect([r.unexpected, r.errors]).toEqual([16, 8]);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}, 30_000);

test('when a paced run with a body template warms up first, then the ids it sent are told apart: the warm-up ones not counted, the others counted', async () => {
  // Each body the server gets names its id; the warm-up's 50 go first (they are due first).
  const received: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string }).id);
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const sentAt = new Map<string, number>();
  const warmSentAt = new Map<string, number>();
  try {
    const r = await measure(
      {
        url: `http://127.0.0.1:${port}/`,
        method: 'POST',
        template: '{"id":"{{id}}"}',
        sentAt,
        warmSentAt,
        rate: 50,
        connections: 5,
      },
      { durationS: 1, warmupS: 1, runs: 1, connections: 5 },
    );
    expect(r.completedAll).toBe(50);
    expect([warmSentAt.size, sentAt.size]).toEqual([50, 50]);
    expect(new Set(received)).toEqual(new Set([...warmSentAt.keys(), ...sentAt.keys()]));
    expect(Math.max(...warmSentAt.values())).toBeLessThanOrEqual(Math.min(...sentAt.values()));
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}, 30_000);
