import type { Msg, NatsConnection, Subscription } from 'nats';
import type { z } from 'zod';
import type { NoticeDef, ServiceName } from '@platform/contracts';
import { getLogger } from '@platform/logger';
import { decode, encode } from './codec';

const log = getLogger('bus.notices');

/** Publishes a notice (core NATS, fire-and-forget: nobody listening is not an error). */
export function publishNotice<P extends z.ZodType>(nc: NatsConnection, def: NoticeDef<P>, payload: z.input<P>): void {
  if (def.publishers.length === 0)
    throw new Error(`notice ${def.name} is not published on its own (its messages are stored events)`);
  nc.publish(def.subject, encode(payload));
}

export interface NoticeOptions {
  /** Called for a message that is not JSON or does not match the payload schema (after it is logged and dropped). */
  onInvalid?(err: unknown): void;
}

/**
 * Subscribes a service to a notice it is declared a subscriber of; with `queue`, in the service's queue group (one
 * replica gets each), else every replica gets every message. A callback, not an iterator: each message is handled as
 * it is read off the connection, before anything read after it. A payload that does not match the declaration is
 * dropped with a log line; a failing handler is logged.
 */
export function subscribeNotice<P extends z.ZodType>(
  nc: NatsConnection,
  def: NoticeDef<P>,
  service: ServiceName,
  handler: (payload: z.infer<P>, subject: string) => void | Promise<void>,
  opts: NoticeOptions = {},
): Subscription {
  if (!def.subscribers.includes(service))
    throw new Error(`${service} is not a subscriber of the notice ${def.name} (${def.subject})`);
  const failed = (err: unknown, msg: Msg) =>
    log.warn(
      { notice: def.name, subject: msg.subject, err: (err as Error)?.message ?? String(err) },
      'notice handler failed',
    );
  return nc.subscribe(def.subject, {
    ...(def.queue ? { queue: service } : {}),
    callback: (err, msg) => {
      if (err) {
        log.warn({ notice: def.name, err: err.message }, 'notice subscription ended with an error');
        return;
      }
      let payload: z.infer<P>;
      try {
        payload = def.payload.parse(decode(msg.data));
      } catch (invalid) {
        const issues = (invalid as { issues?: Array<{ path: PropertyKey[]; message: string }> }).issues;
        const why = issues
          ? issues
              .slice(0, 5)
              .map((i) => `/${i.path.map(String).join('/')}: ${i.message}`)
              .join('; ')
          : (invalid as Error).message;
        log.warn(
          { notice: def.name, subject: msg.subject, err: why },
          'notice that does not match its declaration dropped',
        );
        opts.onInvalid?.(invalid);
        return;
      }
      try {
        const done = handler(payload, msg.subject);
        if (done) done.catch((e: unknown) => failed(e, msg));
      } catch (e) {
        failed(e, msg);
      }
    },
  });
}
