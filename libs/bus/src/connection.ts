import { readFileSync } from 'node:fs';
import { connect, credsAuthenticator, type NatsConnection, type ConnectionOptions } from 'nats';
import { inboxPrefixFor } from '@platform/contracts';
import { getLogger } from '@platform/logger';

const log = getLogger('bus.connection');

export interface ConnectOptions {
  url: string;
  name: string;
  /**
   * Path of the identity's `.creds` file (user JWT and seed). The client's reply subjects start with the identity's
   * own inbox prefix (`_INBOX_<identity>`), the only inbox its permissions let it read.
   */
  credsFile: string;
  /** CA certificate (PEM) of a TLS server with a private CA. */
  tlsCaFile?: string;
  /** Keep trying forever (default) so a service survives NATS restarts. */
  maxReconnectAttempts?: number;
}

const disconnected = new WeakSet<NatsConnection>();
const inboxes = new WeakMap<NatsConnection, string>();
const disconnectListeners = new WeakMap<NatsConnection, Array<() => void>>();

/** Calls `listener` each time the connection is lost (made by connectNats). */
export function onDisconnect(nc: NatsConnection, listener: () => void): void {
  disconnectListeners.set(nc, [...(disconnectListeners.get(nc) ?? []), listener]);
}

/** False while the connection is lost and reconnecting (callers answer 503 at once instead of waiting a timeout). */
export function natsReachable(nc: NatsConnection): boolean {
  return !disconnected.has(nc) && !nc.isClosed();
}

/** The prefix of the connection's reply subjects (`_INBOX_<identity>`; undefined: nats.js's default). */
export function inboxPrefixOf(nc: NatsConnection): string | undefined {
  return inboxes.get(nc);
}

/** The identity (user name) and inbox prefix of a `.creds` file. */
export function credsIdentity(creds: string): { name: string; inboxPrefix: string } {
  const jwt = /-----BEGIN NATS USER JWT-----\s*(\S+)\s*-+END NATS USER JWT/.exec(creds)?.[1];
  if (!jwt) throw new Error('not a NATS .creds file (no user JWT)');
  const claims = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as { name?: string };
  if (!claims.name) throw new Error("the .creds file's user JWT has no name");
  return { name: claims.name, inboxPrefix: inboxPrefixFor(claims.name) };
}

export async function connectNats(opts: ConnectOptions): Promise<NatsConnection> {
  const creds = readFileSync(opts.credsFile, 'utf8');
  const { inboxPrefix } = credsIdentity(creds);
  const servers = opts.url.split(',').map((s) => s.trim());
  const options: ConnectionOptions = {
    servers,
    name: opts.name,
    authenticator: credsAuthenticator(new TextEncoder().encode(creds)),
    inboxPrefix,
    ...(opts.tlsCaFile
      ? { tls: { caFile: opts.tlsCaFile } }
      : servers.some((s) => s.startsWith('tls://'))
        ? { tls: {} }
        : {}),
    maxReconnectAttempts: opts.maxReconnectAttempts ?? -1,
    reconnectTimeWait: 250,
    waitOnFirstConnect: true,
    pingInterval: 5_000,
    maxPingOut: 2,
    // nats.js otherwise builds two Error objects (stack traces) per request up front, used only if it fails: 6 % of
    // the gateway's time under load. Failures still carry their code and subject.
    noAsyncTraces: true,
  };
  // A server that refuses the TLS handshake or is not there keeps the first connect retrying without a word.
  const slow = setInterval(
    () =>
      log.warn(
        { servers, credsFile: opts.credsFile },
        'still connecting to NATS (check NATS_URL, NATS_CREDS and NATS_TLS_CA_FILE)',
      ),
    10_000,
  );
  slow.unref();
  const nc = await connect(options).finally(() => clearInterval(slow));
  inboxes.set(nc, inboxPrefix);
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') {
        disconnected.add(nc);
        for (const listener of disconnectListeners.get(nc) ?? []) listener();
      }
      if (s.type === 'reconnect') disconnected.delete(nc);
      if (s.type === 'disconnect' || s.type === 'reconnect' || s.type === 'error') {
        // A permissions violation names what was refused: something the deploy/nats/permissions.json grant lacks.
        const refused = (s as { permissionContext?: { operation: string; subject: string; queue?: string } })
          .permissionContext;
        log.warn(
          { natsStatus: s.type, data: String(s.data), ...(refused ? { refused } : {}) },
          refused ? 'nats refused an operation this identity is not permitted' : 'nats connection status changed',
        );
      }
    }
  })().catch(() => undefined);
  return nc;
}
