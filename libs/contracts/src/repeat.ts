import type { AnyOperation, Repeat } from './operation';

/** The request header of the IETF httpapi draft "The Idempotency-Key HTTP Header Field" (lower-cased, as node gives it). */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';

/** How long the gateway keeps the first answer to an `Idempotency-Key` (per tenant). */
export const IDEMPOTENCY_KEY_TTL_SECONDS = 24 * 60 * 60;

/** A key is 1–255 visible ASCII characters (a UUID is the usual choice). */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/**
 * The one rule for an operation's repeat policy: its declaration (`repeat`) where it has one, else by method:
 * GET, HEAD and PUT `always`; a POST answering 201 (a create) `with-key`; everything else `never` (a PATCH or DELETE
 * repeated after it took effect answers differently, for example 404).
 */
export function repeatOf(op: Pick<AnyOperation, 'method' | 'repeat' | 'reply'>): Repeat {
  if (op.repeat) return op.repeat;
  if (op.method === 'get' || op.method === 'put') return 'always';
  if (op.method === 'post' && op.reply.status === 201) return 'with-key';
  return 'never';
}

/** Operations that take an `Idempotency-Key` header: the creates. */
export function acceptsIdempotencyKey(op: Pick<AnyOperation, 'method' | 'repeat' | 'reply'>): boolean {
  const repeat = repeatOf(op);
  return repeat === 'with-key' || repeat === 'with-id';
}

function hasOwnId(body: unknown): boolean {
  const events = (body as { events?: unknown } | undefined)?.events;
  // a batch: every item carries its id
  if (Array.isArray(events)) return events.length > 0 && events.every(hasOwnId);
  const id = (body as { id?: unknown } | undefined)?.id;
  return (typeof id === 'string' && id !== '') || typeof id === 'number';
}

/**
 * Whether the gateway may send this request to another replica after one did not answer in time (it may have done
 * the work, or may still be doing it): only when the service itself makes a repeat harmless, that is for `always`,
 * and for `with-id` when the body carries its id. (A request no replica received is sent again whatever the policy.)
 */
export function gatewayMayRepeat(op: Pick<AnyOperation, 'method' | 'repeat' | 'reply'>, body: unknown): boolean {
  const repeat = repeatOf(op);
  return repeat === 'always' || (repeat === 'with-id' && hasOwnId(body));
}

/**
 * Whether the caller may send this request again after a 5xx or a lost answer: when the gateway may, or when it
 * carries an `Idempotency-Key` the operation takes (the gateway answers a repeat with the first result).
 */
export function safeToRepeat(
  op: Pick<AnyOperation, 'method' | 'repeat' | 'reply'>,
  request: { body?: unknown; idempotencyKey?: string },
): boolean {
  return gatewayMayRepeat(op, request.body) || (request.idempotencyKey !== undefined && acceptsIdempotencyKey(op));
}
