import { connectAs, startNatsServer, type NatsServer } from '@platform/testkit';
import type { connectNats } from '../src';
import { RequestMux } from '../src/request-mux';

let nats: NatsServer;
let nc: Awaited<ReturnType<typeof connectNats>>;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connectAs(nats.url, 'admin', { name: 'request-mux-test', maxReconnectAttempts: 0 });
});

afterAll(async () => {
  await nc?.close();
  await nats?.destroy();
});

const text = (s: string) => new TextEncoder().encode(s);
const read = (d: Uint8Array) => new TextDecoder().decode(d);

test('when many requests are in flight at once, then each gets the answer to its own request', async () => {
  const sub = nc.subscribe('mux.echo', {
    callback: (_err, msg) => setTimeout(() => msg.respond(text(`re:${read(msg.data)}`)), Math.random() * 20),
  });
  const mux = new RequestMux(nc);
  try {
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => mux.request('mux.echo', text(String(i)), { timeout: 5000 })),
    );
    expect(answers.map((m) => read(m.data))).toEqual(Array.from({ length: 200 }, (_, i) => `re:${i}`));
  } finally {
    sub.unsubscribe();
  }
});

test('when nobody listens on the subject, then the request fails at once as "no responders" (code 503), not as a timeout', async () => {
  const mux = new RequestMux(nc);
  await expect(mux.request('mux.nobody', text('x'), { timeout: 30_000 })).rejects.toMatchObject({ code: '503' });
});

test('when the responder never answers, then the request fails with TIMEOUT and a late answer is ignored', async () => {
  let late: (() => void) | undefined;
  const sub = nc.subscribe('mux.slow', { callback: (_err, msg) => (late = () => msg.respond(text('late'))) });
  const mux = new RequestMux(nc);
  try {
    await expect(mux.request('mux.slow', text('x'), { timeout: 200 })).rejects.toMatchObject({ code: 'TIMEOUT' });
    late?.();
    await nc.flush();
    // the mux still serves the next request on the same inbox
    const echo = nc.subscribe('mux.echo2', { callback: (_err, msg) => msg.respond(text('ok')) });
    expect(read((await mux.request('mux.echo2', text('y'), { timeout: 5000 })).data)).toBe('ok');
    echo.unsubscribe();
  } finally {
    sub.unsubscribe();
  }
});

test('when the connection closes while a request waits, then the request fails with CONNECTION_CLOSED', async () => {
  const own = await connectAs(nats.url, 'admin', { name: 'request-mux-close', maxReconnectAttempts: 0 });
  const sub = nc.subscribe('mux.never', { callback: () => undefined });
  await nc.flush(); // the server knows of the listener before the other connection sends
  try {
    const mux = new RequestMux(own);
    const waiting = mux.request('mux.never', text('x'), { timeout: 30_000 });
    await own.flush();
    await own.close();
    await expect(waiting).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' });
  } finally {
    sub.unsubscribe();
  }
});

test('when requests are made from separate callbacks of one turn, then they leave in one socket write and each gets its own answer', async () => {
  // The responder on a connection of its own: only the requests are written on `nc`.
  const responder = await connectAs(nats.url, 'admin', { name: 'request-mux-responder', maxReconnectAttempts: 0 });
  responder.subscribe('mux.turn', { callback: (_err, msg) => msg.respond(text(`re:${read(msg.data)}`)) });
  await responder.flush();
  // nats.js writes its buffer once per microtask checkpoint (its transport's `send`); Node runs one after each callback,
  // as it does between the callbacks of two HTTP requests.
  const transport = (nc as unknown as { protocol: { transport: { send(frame: Uint8Array): void } } }).protocol
    .transport;
  const send = transport.send.bind(transport);
  let writes = 0;
  transport.send = (frame) => {
    writes++;
    send(frame);
  };
  const mux = new RequestMux(nc);
  try {
    const answers = await Promise.all(
      Array.from(
        { length: 20 },
        (_, i) =>
          new Promise<string>((resolve, reject) =>
            setImmediate(() =>
              mux.request('mux.turn', text(String(i)), { timeout: 5000 }).then((m) => resolve(read(m.data)), reject),
            ),
          ),
      ),
    );
    expect(answers).toEqual(Array.from({ length: 20 }, (_, i) => `re:${i}`));
    // One write for the 20 requests and one for the inbox subscription the first request opens (20 writes before).
    expect(writes).toBeLessThanOrEqual(2);
  } finally {
    transport.send = send;
    await responder.close();
  }
});
