import { connect, createServer } from 'node:net';
import { readFileSync } from 'node:fs';

/** Where the ports for test and bench listeners are taken from when the kernel's ephemeral range leaves room below it. */
const FIRST_PORT = 20_000;
/** Blocks the range is cut into: jest workers take blocks 0-15 by their id, other processes 16-31 by their pid. */
const BLOCKS = 32;

/** The kernel's range for ports it picks itself (outgoing connections, listen(0)); Linux's default when unknown. */
export function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return [low!, high!];
  } catch {
    /* not Linux */
  }
  return [32_768, 60_999];
}

/** This process's block of ports below the ephemeral range, or undefined when there is no room for one. */
export function portBlock(
  { workerId, pid }: { workerId?: string; pid: number } = { workerId: process.env.JEST_WORKER_ID, pid: process.pid },
): { first: number; size: number } | undefined {
  const end = Math.min(ephemeralRange()[0], 65_536);
  const size = Math.floor((end - FIRST_PORT) / BLOCKS);
  if (size < 50) return undefined;
  const slot =
    workerId !== undefined && Number.isInteger(Number(workerId))
      ? Number(workerId) % (BLOCKS / 2)
      : BLOCKS / 2 + (pid % (BLOCKS / 2));
  return { first: FIRST_PORT + slot * size, size };
}

const canListen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    // 0.0.0.0: taken when anything listens on the port on any local address (HEALTH_PORT listeners bind 0.0.0.0).
    srv.listen(port, '0.0.0.0', () => srv.close(() => resolve(true)));
  });

const kernelPicked = () =>
  new Promise<number>((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });

let cursor: number | undefined;

/**
 * A TCP port that is free right now, for a listener that a child process opens later. It is taken below the kernel's
 * ephemeral range, in a block of its own for each jest worker and process, in turn: a port the kernel picked (listen on
 * port 0) could be given to an outgoing connection (the bench opens hundreds) before the child binds it, and the child
 * then failed to start ("HEALTH_PORT … already in use"). Falls back to a kernel-picked port when the range leaves no room.
 */
export async function freePort(): Promise<number> {
  const block = portBlock();
  if (!block) return kernelPicked();
  cursor ??= Math.floor(Math.random() * block.size);
  for (let tried = 0; tried < block.size; tried++) {
    const port = block.first + (cursor++ % block.size);
    if (await canListen(port)) return port;
  }
  return kernelPicked();
}

/** Resolves once something accepts connections on 127.0.0.1:`port`. */
export function waitPort(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve();
      });
      s.once('error', () => {
        s.destroy();
        if (Date.now() > deadline) reject(new Error(`nothing listens on ${port}`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}
