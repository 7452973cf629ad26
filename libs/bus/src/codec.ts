import { headers as natsHeaders, type MsgHdrs } from 'nats';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** JSON text that is sent as it is (not serialised again). */
export class RawJson {
  constructor(readonly text: string) {}
}

export function encode(value: unknown): Uint8Array {
  return encoder.encode(value instanceof RawJson ? value.text : JSON.stringify(value));
}

export function decode<T = unknown>(data: Uint8Array): T {
  return JSON.parse(decoder.decode(data)) as T;
}

/**
 * New message headers from named values (undefined ones left out). Each name occurs once in an object, so every value
 * is appended: nats.js's `set` would first search the headers to delete the name.
 */
export function headersOf(values: Record<string, string | undefined>): MsgHdrs {
  const h = natsHeaders();
  for (const [name, value] of Object.entries(values)) if (value !== undefined) h.append(name, value);
  return h;
}

/** A message's headers by lower-cased name, each its first value (read in one pass: nats.js's get searches every name). */
export function headerMap(h: MsgHdrs | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!h) return out;
  for (const [k, values] of h) if (values.length > 0) out[k.toLowerCase()] ??= values[0]!;
  return out;
}

/** Subject tokens cannot hold `.`, `*`, `>` or spaces: anything outside [A-Za-z0-9_-] is %-encoded. */
export function subjectToken(value: string): string {
  return value.replace(/[^A-Za-z0-9_-]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'));
}

export function fromSubjectToken(token: string): string {
  return token.replace(/%([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}
