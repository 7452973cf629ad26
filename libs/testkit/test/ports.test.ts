import { createServer, type Server } from 'node:net';
import { ephemeralRange, freePort, portBlock } from '../src/ports';

const listen = (port: number) =>
  new Promise<Server>((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => resolve(srv));
  });
const close = (srv: Server) => new Promise<void>((resolve) => srv.close(() => resolve()));

// A port the kernel picked could be given to an outgoing connection before the child process bound it: a bench run
// failed to start with "HEALTH_PORT 37793 (0.0.0.0) is already in use by another process".
describe('free ports for listeners that a child process opens later', () => {
  test('when ports are asked for one after another, then each is below the kernel ephemeral range and none is given twice', async () => {
    const [low] = ephemeralRange();
    const block = portBlock();
    expect(block).toBeDefined();
    const ports: number[] = [];
    for (let i = 0; i < 20; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    for (const p of ports) {
      expect(p).toBeLessThan(low);
      expect(p).toBeGreaterThanOrEqual(block!.first);
      expect(p).toBeLessThan(block!.first + block!.size);
    }
  });

  test('when the next ports of the block are taken, then freePort skips them and gives one that can be listened on', async () => {
    const block = portBlock()!;
    const last = await freePort();
    const next = (n: number) => block.first + ((last - block.first + n) % block.size);
    const taken: Server[] = [];
    try {
      for (const n of [1, 2, 3]) taken.push(await listen(next(n)));
      const port = await freePort();
      expect(port).toBe(next(4));
      await close(await listen(port));
    } finally {
      await Promise.all(taken.map(close));
    }
  });

  test('when jest workers and other processes each take a block, then no two blocks overlap', () => {
    const blocks = [
      ...Array.from({ length: 15 }, (_, i) => portBlock({ workerId: String(i + 1), pid: 1 })!),
      ...Array.from({ length: 16 }, (_, i) => portBlock({ pid: 1000 + i })!),
    ];
    const sorted = [...blocks].sort((a, b) => a.first - b.first);
    for (let i = 1; i < sorted.length; i++)
      expect(sorted[i]!.first).toBeGreaterThanOrEqual(sorted[i - 1]!.first + sorted[i - 1]!.size);
    expect(sorted.at(-1)!.first + sorted.at(-1)!.size).toBeLessThanOrEqual(ephemeralRange()[0]);
  });
});
