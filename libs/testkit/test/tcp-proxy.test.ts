import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { startTcpProxy, type TcpProxy } from '../src/tcp-proxy';

let echo: Server;
let proxy: TcpProxy;

beforeAll(async () => {
  // Answers every chunk with the same bytes in three pieces (an answer of several chunks).
  echo = createServer((s) =>
    s.on('data', (d) => {
      for (const i of [0, 1, 2]) s.write(d.subarray((i * d.length) / 3, ((i + 1) * d.length) / 3));
    }),
  );
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', () => r()));
  const port = (echo.address() as { port: number }).port;
  proxy = await startTcpProxy({ host: '127.0.0.1', port });
});

afterAll(async () => {
  await proxy.close();
  await new Promise((r) => echo.close(r));
});

function connect(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = createConnection({ host: '127.0.0.1', port: proxy.port }, () => resolve(s));
    s.once('error', reject);
  });
}

/** Sends `text` and waits for it back; how long it took. */
function roundTrip(s: Socket, text: string): Promise<{ back: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    let back = '';
    const onData = (d: Buffer) => {
      back += d.toString();
      if (back.length >= text.length) {
        s.off('data', onData);
        resolve({ back, ms: Date.now() - started });
      }
    };
    s.on('data', onData);
    s.write(text);
  });
}

test('when a delay is set, then a round trip takes at least that long, whatever the number of chunks, and the bytes keep their order', async () => {
  const s = await connect();
  try {
    proxy.delay(150);
    const slow = await roundTrip(s, 'abcdefghijkl');
    expect(slow.back).toBe('abcdefghijkl');
    // A lower bound only (the delay is a floor; how much longer a loaded machine takes is not this test's business).
    expect(slow.ms).toBeGreaterThanOrEqual(150);
    proxy.delay(0);
    expect((await roundTrip(s, 'mnopqr')).back).toBe('mnopqr');
  } finally {
    s.destroy();
  }
});

test('when the proxy is cut, then open connections close and new ones are refused until it is restored', async () => {
  const s = await connect();
  const closed = new Promise<void>((r) => s.once('close', () => r()));
  proxy.cut();
  await closed;
  const refused = await connect().then(
    (c) => new Promise<boolean>((r) => c.once('close', () => r(true)).once('data', () => r(false))),
    () => true,
  );
  expect(refused).toBe(true);
  proxy.restore();
  const again = await connect();
  try {
    expect((await roundTrip(again, 'xyz')).back).toBe('xyz');
  } finally {
    again.destroy();
  }
});
