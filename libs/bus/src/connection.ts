import { connect, type NatsConnection, type ConnectionOptions } from 'nats';
import { getLogger } from '@platform/logger';

const log = getLogger('bus.connection');

export interface ConnectOptions {
  url: string;
  name: string;
  /** Keep trying forever (default) so a service survives NATS restarts. */
  maxReconnectAttempts?: number;
}

const disconnected = new WeakSet<NatsConnection>();

/** False while the connection is lost and reconnecting (callers answer 503 at once instead of waiting a timeout). */
export function natsReachable(nc: NatsConnection): boolean {
  return !disconnected.has(nc) && !nc.isClosed();
}

export async function connectNats(opts: ConnectOptions): Promise<NatsConnection> {
  const options: ConnectionOptions = {
    servers: opts.url.split(',').map((s) => s.trim()),
    name: opts.name,
    maxReconnectAttempts: opts.maxReconnectAttempts ?? -1,
    reconnectTimeWait: 250,
    waitOnFirstConnect: true,
    pingInterval: 5_000,
    maxPingOut: 2,
    // nats.js otherwise builds two Error objects (stack traces) per request up front, used only if it fails: 6 % of
    // the gateway's time under load. Failures still carry their code and subject.
    noAsyncTraces: true,
  };
  const nc = await connect(options);
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') disconnected.add(nc);
      if (s.type === 'reconnect') disconnected.delete(nc);
      if (s.type === 'disconnect' || s.type === 'reconnect' || s.type === 'error') {
        log.warn({ natsStatus: s.type, data: String(s.data) }, 'nats connection status changed');
      }
    }
  })().catch(() => undefined);
  return nc;
}
