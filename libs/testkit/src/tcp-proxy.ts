import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { Transform, type TransformCallback } from 'node:stream';

/**
 * A TCP proxy in front of a server, for faults a process meets on the network: every answer held back by a delay (a
 * slow database), or the link cut (a process cut off from NATS). `pnpm chaos` puts one between a service and what it
 * talks to.
 */
export interface TcpProxy {
  /** Where clients connect instead of the server (`host:port`). */
  readonly port: number;
  /** Holds every chunk the server sends back for `ms` before passing it on (0: none); applies to open connections too. */
  delay(ms: number): void;
  /** Closes every connection and refuses new ones until `restore()`. */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

/**
 * Passes each chunk on once the proxy's delay has passed since it came, in the order the chunks came (one queue, one
 * timer for its head), so a round trip takes the delay longer however many chunks its answer has.
 */
class Delayed extends Transform {
  private readonly queue: Array<{ due: number; chunk: Buffer }> = [];
  private timer?: NodeJS.Timeout;
  private flushed?: () => void;

  constructor(private readonly delayOf: () => number) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    const ms = this.delayOf();
    if (ms <= 0 && this.queue.length === 0) this.push(chunk);
    else {
      this.queue.push({ due: Date.now() + ms, chunk });
      this.schedule();
    }
    done();
  }

  override _flush(done: TransformCallback): void {
    if (this.queue.length === 0) done();
    else this.flushed = () => done();
  }

  private schedule(): void {
    if (this.timer || this.queue.length === 0) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        const now = Date.now();
        while (this.queue.length && this.queue[0]!.due <= now) this.push(this.queue.shift()!.chunk);
        if (this.queue.length) this.schedule();
        else this.flushed?.();
      },
      Math.max(0, this.queue[0]!.due - Date.now()),
    );
  }
}

export async function startTcpProxy(target: { host: string; port: number }, listenPort = 0): Promise<TcpProxy> {
  let delayMs = 0;
  let isCut = false;
  const open = new Set<Socket>();
  const server: Server = createServer((client) => {
    if (isCut) {
      client.destroy();
      return;
    }
    const upstream = createConnection(target);
    open.add(client).add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(new Delayed(() => delayMs)).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenPort, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('the TCP proxy has no port');
  return {
    port: address.port,
    delay: (ms) => {
      delayMs = ms;
    },
    cut: () => {
      isCut = true;
      for (const s of open) s.destroy();
      open.clear();
    },
    restore: () => {
      isCut = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        open.clear();
        server.close(() => resolve());
      }),
  };
}
