import { connect, type Socket } from 'node:net';
import {
  anApiKey,
  aProject,
  eventually,
  http,
  startGatewayProcess,
  withDatabase,
  type GatewayProcess,
} from '@platform/testkit';
import { admin, stack } from '../support/stack';

/**
 * Slow clients (slowloris: headers or a body trickled a byte at a time) cannot hold the gateway: HEADERS_TIMEOUT_MS
 * and REQUEST_TIMEOUT_MS cut them off with a 408 problem answer, and other clients are served meanwhile. A gateway
 * process of its own with short timeouts (1 s for headers, 2 s for a whole request).
 */
let gw: GatewayProcess;

beforeAll(async () => {
  gw = await startGatewayProcess(
    stack.env,
    { HEADERS_TIMEOUT_MS: '1000', REQUEST_TIMEOUT_MS: '2000' },
    'gateway-slow-clients',
  );
});
afterAll(async () => {
  await gw?.stop();
});

interface SlowClient {
  socket: Socket;
  received: () => string;
  closed: () => boolean;
  stop: () => void;
}

/** Opens a connection, writes `start`, then one more byte of `trickle` every 200 ms (never finishing). */
function slowClient(start: string, trickle: string): Promise<SlowClient> {
  const port = Number(new URL(gw.url).port);
  return new Promise((resolve, reject) => {
    let data = '';
    let closed = false;
    let i = 0;
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(start);
      resolve({
        socket,
        received: () => data,
        closed: () => closed,
        stop: () => (clearInterval(timer), socket.destroy()),
      });
    });
    const timer = setInterval(() => {
      if (!closed && socket.writable) socket.write(trickle[i++ % trickle.length]!);
    }, 200);
    socket.on('data', (d) => (data += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      closed = true;
      clearInterval(timer);
    });
    socket.once('error', reject);
  });
}

test('when many clients trickle their request headers, then each is answered 408 problem+json and cut off, and other clients are served meanwhile', async () => {
  const clients = await Promise.all(
    Array.from({ length: 40 }, () => slowClient('GET /healthz HTTP/1.1\r\nHost: gateway\r\nX-Slow: ', 'abcdefgh')),
  );
  try {
    // While they hold their connections, an ordinary client is served.
    const ok = await http('GET', `${gw.url}/healthz`);
    expect(ok.status).toBe(200);
    await eventually(() => clients.every((c) => c.closed()), 'every slow client to be cut off', 20_000);
    for (const c of clients) {
      expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
      expect(c.received()).toMatch(/content-type: application\/problem\+json/i);
    }
    expect((await http('GET', `${gw.url}/healthz`)).status).toBe(200);
  } finally {
    for (const c of clients) c.stop();
  }
});

test('when a client sends its headers but trickles its body, then the request is refused with a 4xx and the connection is closed, and nothing is stored', async () => {
  const p = aProject();
  const { key } = await anApiKey(admin, p);
  const body = JSON.stringify({ id: 'slow-body', type: 'slow.tested' });
  const head = `POST /run/v1/events HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length + 1000}\r\n\r\n`;
  const clients = await Promise.all(Array.from({ length: 10 }, () => slowClient(head, ' ')));
  try {
    expect((await http('GET', `${gw.url}/healthz`)).status).toBe(200);
    await eventually(() => clients.every((c) => c.closed()), 'every slow body to be cut off', 20_000);
    for (const c of clients) expect(c.received()).toMatch(/^HTTP\/1\.1 4\d\d /);
  } finally {
    for (const c of clients) c.stop();
  }
  const stored = await withDatabase(stack.env.MONGO_URL!, 'events-ingest', (db) =>
    db.collection('runEvents').countDocuments({ tenantId: p.tenantId, projectId: p.projectId }),
  );
  expect(stored).toBe(0);
});
