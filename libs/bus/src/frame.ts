/**
 * A frame: several messages in one NATS payload. A line of JSON names each part's headers, length and (for a request)
 * the reply subject it would have had alone; the parts follow one after another, each exactly the payload it would
 * have carried alone. A frame is not JSON, so a process that expects one request per message refuses it whole.
 */
export const BATCH_HEADER = 'platform-batch';

export interface FramePart {
  headers?: Record<string, string>;
  /** The part's own reply subject (a request of a batch). */
  reply?: string;
  text: string;
}

/** A part read back: its headers (read with `get`, as a message's are), reply subject and payload. */
export interface ReadPart {
  headers?: PartHeaders;
  reply?: string;
  data: Uint8Array;
}

/** The headers of one part of a frame ("" when absent, like nats.js's MsgHdrs.get). */
export class PartHeaders {
  constructor(readonly values: Record<string, string>) {}
  get(name: string): string {
    return this.values[name] ?? '';
  }
}

interface PartMeta {
  n: number;
  h?: Record<string, string>;
  r?: string;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function writeFrame(parts: FramePart[]): Uint8Array {
  const meta = parts.map((p): PartMeta => {
    const m: PartMeta = { n: Buffer.byteLength(p.text) };
    if (p.headers) m.h = p.headers;
    if (p.reply) m.r = p.reply;
    return m;
  });
  // One encoding of the whole frame: the parts are text (JSON) already.
  return encoder.encode(`${JSON.stringify(meta)}\n${parts.map((p) => p.text).join('')}`);
}

/** The bytes a part adds to a frame (its payload and about its line of meta). */
export function framedSize(part: FramePart): number {
  return (
    Buffer.byteLength(part.text) +
    16 +
    (part.reply?.length ?? 0) +
    (part.headers ? JSON.stringify(part.headers).length : 0)
  );
}

/** The parts of a frame; undefined when the payload is not one. */
export function readFrame(data: Uint8Array): ReadPart[] | undefined {
  const end = data.indexOf(0x0a);
  if (end < 0) return undefined;
  let meta: PartMeta[];
  try {
    meta = JSON.parse(decoder.decode(data.subarray(0, end))) as PartMeta[];
  } catch {
    return undefined;
  }
  if (!Array.isArray(meta)) return undefined;
  let at = end + 1;
  const out: ReadPart[] = [];
  for (const m of meta) {
    const n = typeof m?.n === 'number' && m.n >= 0 ? m.n : -1;
    if (n < 0 || at + n > data.length) return undefined;
    const part: ReadPart = { data: data.subarray(at, at + n) };
    if (m.h && typeof m.h === 'object') part.headers = new PartHeaders(m.h);
    if (typeof m.r === 'string') part.reply = m.r;
    out.push(part);
    at += n;
  }
  return at === data.length ? out : undefined;
}
