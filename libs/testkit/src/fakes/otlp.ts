import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as an OTLP/HTTP JSON export carries it (the fields tests look at). */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** The OTLP base URL to give as OTEL_EXPORTER_OTLP_ENDPOINT (spans arrive at <url>/v1/traces). */
  url: string;
  spans: ReceivedSpan[];
  /** Waits until `predicate` matches a span. */
  waitFor(predicate: (s: ReceivedSpan) => boolean, timeoutMs?: number): Promise<ReceivedSpan>;
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type KeyValue = { key: string; value: AnyValue };

function plain(v: AnyValue): unknown {
  return v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.boolValue ?? v.doubleValue;
}

function attrs(list: KeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, plain(a.value)]));
}

/**
 * A local OTLP/HTTP trace receiver (the OpenTelemetry protocol's JSON encoding, POST /v1/traces): an OpenTelemetry
 * collector's endpoint, reduced to recording the spans it is sent.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const waiters = new Set<() => void>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (
        req.method !== 'POST' ||
        !req.url?.startsWith('/v1/traces') ||
        !String(req.headers['content-type']).includes('json')
      ) {
        res.writeHead(415, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans?: Array<{
            resource?: { attributes?: KeyValue[] };
            scopeSpans?: Array<{ spans?: Array<Record<string, any>> }>;
          }>;
        };
        for (const rs of body.resourceSpans ?? []) {
          const service = String(attrs(rs.resource?.attributes)['service.name'] ?? '');
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                service,
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId || undefined,
                name: s.name,
                kind: s.kind,
                attributes: attrs(s.attributes),
              });
            }
          }
        }
        for (const w of waiters) w();
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{}');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    spans,
    waitFor(predicate, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = spans.find(predicate);
          if (found) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(found);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `no matching span among ${spans.length} received: ${JSON.stringify(spans.map((s) => `${s.service}:${s.name}`))}`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
