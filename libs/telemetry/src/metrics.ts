import client, { type Counter, type Gauge, type Histogram } from 'prom-client';

/**
 * Prometheus metrics of one process (prom-client's default registry). Every metric is created once, on first use,
 * so a library that records a metric costs nothing in a process that never touches it.
 */
export const registry = client.register;

let defaultsOn = false;

/** prom-client's default process metrics (CPU, memory, event loop lag, GC, handles); once per process. */
export function startProcessMetrics(): void {
  if (defaultsOn) return;
  defaultsOn = true;
  client.collectDefaultMetrics({ register: registry });
}

/** The exposition text for `GET /metrics`. */
export async function renderMetrics(): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}

function existing<T>(name: string): T | undefined {
  return registry.getSingleMetric(name) as T | undefined;
}

export function counter<L extends string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
  return existing<Counter<L>>(name) ?? new client.Counter<L>({ name, help, labelNames, registers: [registry] });
}

export function histogram<L extends string>(
  name: string,
  help: string,
  labelNames: readonly L[] = [],
  buckets?: number[],
): Histogram<L> {
  return (
    existing<Histogram<L>>(name) ??
    new client.Histogram<L>({ name, help, labelNames, registers: [registry], ...(buckets ? { buckets } : {}) })
  );
}

export function gauge<L extends string>(
  name: string,
  help: string,
  labelNames: readonly L[] = [],
  collect?: (this: Gauge<L>) => void | Promise<void>,
): Gauge<L> {
  return (
    existing<Gauge<L>>(name) ??
    new client.Gauge<L>({ name, help, labelNames, registers: [registry], ...(collect ? { collect } : {}) })
  );
}

/** Latency buckets (seconds) for request/reply work: 1 ms … 30 s. */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Time a service spends answering one NATS request, by the subject it serves (libs/bus). */
export const natsRequestDuration = () =>
  histogram(
    'nats_request_duration_seconds',
    'Time to handle one NATS request, by served subject',
    ['subject', 'outcome'],
    LATENCY_BUCKETS,
  );

/** Requests a service did not start (libs/bus): `busy` (at BUS_MAX_IN_FLIGHT, answered 503) or `late` (past their deadline). */
export const natsRequestsRefused = () =>
  counter(
    'nats_requests_refused_total',
    'Requests a service did not start, by served subject and reason (busy: at its bound of requests in flight; late: past their deadline)',
    ['subject', 'reason'],
  );

/** Requests per batch a service received, by the subject it serves (libs/bus: the requests of one turn to one subject). */
export const natsBatchedRequests = () =>
  histogram(
    'nats_batched_requests',
    'Requests that arrived together in one batch, by served subject',
    ['subject'],
    [2, 4, 8, 16, 32, 64],
  );

/** Gateway: requests by operation and status. */
export const httpRequestsTotal = () =>
  counter('http_requests_total', 'HTTP requests answered by the gateway, by operation and status', [
    'operation',
    'status',
  ]);

/** Gateway: latency by operation. */
export const httpRequestDuration = () =>
  histogram(
    'http_request_duration_seconds',
    'Time the gateway took to answer a request, by operation',
    ['operation'],
    LATENCY_BUCKETS,
  );

const pendingSources = new Map<string, { stream: string; consumer: string; read: () => Promise<number | undefined> }>();

/**
 * `jetstream_consumer_pending{stream,consumer}`: messages of a durable consumer not yet delivered, read from the
 * server at scrape time (so every replica reports the same, current number).
 */
export function trackConsumerPending(
  stream: string,
  consumer: string,
  read: () => Promise<number | undefined>,
): () => void {
  const key = `${stream}/${consumer}`;
  pendingSources.set(key, { stream, consumer, read });
  gauge(
    'jetstream_consumer_pending',
    'Messages of a JetStream durable consumer not yet delivered to any replica',
    ['stream', 'consumer'],
    async function collect() {
      await Promise.all(
        [...pendingSources.values()].map(async (s) => {
          const n = await Promise.race([
            s.read().catch(() => undefined),
            new Promise<undefined>((r) => setTimeout(() => r(undefined), 1000).unref()),
          ]);
          if (n !== undefined) this.set({ stream: s.stream, consumer: s.consumer }, n);
        }),
      );
    },
  );
  return () => {
    pendingSources.delete(key);
  };
}
