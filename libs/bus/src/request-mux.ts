import { createInbox, ErrorCode, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from 'nats';

interface Pending {
  resolve(msg: Msg): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/** An error with the nats.js code the callers classify (`natsErrorToAppError`, `undeliveredFromNats`). */
function natsError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/**
 * Request/reply over one wildcard inbox subscription per connection: each request publishes with the reply subject
 * `<inbox>.<n>` and waits for that token. The same protocol as nats.js's own `request`, without its per-request costs
 * on the success path (it builds a `NatsError` with a stack trace for every answered request, and races two
 * promises): on the gateway that was 3–4 % of its CPU. A reply that is NATS's "no responders" status (503) rejects
 * with code `503`, a request not answered in time with `TIMEOUT`, and every request still waiting when the
 * connection closes with `CONNECTION_CLOSED`.
 */
export class RequestMux {
  private readonly pending = new Map<string, Pending>();
  private inbox?: string;
  private sub?: Subscription;
  private next = 0;
  private queued: Array<{ token: string; subject: string; data: Uint8Array; reply: string; headers?: MsgHdrs }> = [];
  private scheduled = false;

  constructor(private readonly nc: NatsConnection) {}

  request(subject: string, data: Uint8Array, opts: { timeout: number; headers?: MsgHdrs }): Promise<Msg> {
    const inbox = this.open();
    const token = (this.next++).toString(36);
    return new Promise<Msg>((resolve, reject) => {
      const timer = setTimeout(() => this.settle(token)?.reject(natsError(ErrorCode.Timeout, 'TIMEOUT')), opts.timeout);
      this.pending.set(token, { resolve, reject, timer });
      this.queued.push({ token, subject, data, reply: `${inbox}.${token}`, headers: opts.headers });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.publishQueued);
      }
    });
  }

  /**
   * The requests of one turn of the event loop leave together, after its I/O callbacks: nats.js writes its buffer to
   * the socket once per microtask checkpoint, and Node runs one between the callbacks of two HTTP requests, so a
   * request published at once cost nats.js, nats-server and the service one socket write each.
   */
  private readonly publishQueued = () => {
    this.scheduled = false;
    const batch = this.queued;
    this.queued = [];
    for (const q of batch) {
      // Timed out, or failed with the connection, before it left.
      if (!this.pending.has(q.token)) continue;
      try {
        this.nc.publish(q.subject, q.data, { reply: q.reply, headers: q.headers });
      } catch (err) {
        this.settle(q.token)?.reject(err as Error);
      }
    }
  };

  /** Takes a waiting request out (its timer stopped); undefined when it is no longer waiting. */
  private settle(token: string): Pending | undefined {
    const p = this.pending.get(token);
    if (!p) return undefined;
    this.pending.delete(token);
    clearTimeout(p.timer);
    return p;
  }

  private open(): string {
    if (this.inbox) return this.inbox;
    const inbox = createInbox();
    this.sub = this.nc.subscribe(`${inbox}.*`, { callback: (err, msg) => (err ? this.failAll(err) : this.answer(inbox, msg)) });
    this.inbox = inbox;
    void this.nc.closed().then(() => this.failAll(natsError(ErrorCode.ConnectionClosed, 'CONNECTION_CLOSED')));
    return inbox;
  }

  private answer(inbox: string, msg: Msg): void {
    const p = this.settle(msg.subject.slice(inbox.length + 1));
    if (!p) return; // answered after its timeout, or a second answer
    const h = msg.headers;
    if (h?.hasError) {
      p.reject(h.code === 503 ? natsError('503', 'no responders') : natsError(String(h.code), h.description || `request failed with status ${h.code}`));
      return;
    }
    p.resolve(msg);
  }

  private failAll(err: Error): void {
    for (const token of [...this.pending.keys()]) this.settle(token)?.reject(err);
  }

  /** The inbox subscription (for tests and shutdown). */
  get subscription(): Subscription | undefined {
    return this.sub;
  }
}
