import {
  context,
  propagation,
  trace,
  SpanKind,
  SpanStatusCode,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { AlwaysOffSampler, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';

export { SpanKind, SpanStatusCode, context, trace };
export type { Span, Context, Attributes };

export interface TracingOptions {
  service: string;
  /** OTLP/HTTP base URL (e.g. http://otel-collector:4318); spans go to <url>/v1/traces. Unset: nothing is exported. */
  otlpEndpoint?: string;
  /** Delay between two exports of the batch processor. */
  scheduleDelayMs?: number;
}

let provider: NodeTracerProvider | undefined;

/**
 * Installs the OpenTelemetry SDK once per process: W3C trace context, AsyncLocalStorage context, and an OTLP/HTTP
 * (JSON) exporter when an endpoint is configured. Without one, spans are not recorded (nothing would read them), but
 * they still get ids, which reach the logs and the NATS headers (`traceparent`, unsampled) as with an exporter.
 */
export function initTracing(opts: TracingOptions): void {
  if (provider) return;
  const spanProcessors: SpanProcessor[] = [];
  if (opts.otlpEndpoint) {
    const url = `${opts.otlpEndpoint.replace(/\/+$/, '')}/v1/traces`;
    spanProcessors.push(
      new BatchSpanProcessor(new OTLPTraceExporter({ url }), { scheduledDelayMillis: opts.scheduleDelayMs ?? 5000 }),
    );
  }
  provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': opts.service }),
    spanProcessors,
    ...(opts.otlpEndpoint ? {} : { sampler: new AlwaysOffSampler() }),
  });
  provider.register();
}

/** Exports what is buffered and stops the SDK (at shutdown). */
export async function shutdownTracing(): Promise<void> {
  const p = provider;
  if (!p) return;
  await p.forceFlush().catch(() => undefined);
  await p.shutdown().catch(() => undefined);
}

export function tracer() {
  return trace.getTracer('platform');
}

/** The W3C `traceparent` (and `tracestate`) of the active span, for message headers. */
export function traceHeaders(ctx: Context = context.active()): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

export function currentTraceparent(): string | undefined {
  return traceHeaders().traceparent;
}

/** The context described by incoming headers (lower-case names), on top of the active one. */
export function contextFromHeaders(
  headers: Record<string, string | string[] | undefined>,
  base: Context = context.active(),
): Context {
  return propagation.extract(base, headers, {
    keys: (c) => Object.keys(c),
    get: (c, k) => {
      const v = c[k.toLowerCase()];
      return Array.isArray(v) ? v[0] : v;
    },
  });
}

export function currentTraceId(): string | undefined {
  const sc = trace.getSpan(context.active())?.spanContext();
  return sc && trace.isSpanContextValid(sc) ? sc.traceId : undefined;
}

/** Runs `fn` inside a new span (child of `parent`, default the active context); records a thrown error and ends it. */
export async function inSpan<T>(
  name: string,
  opts: { kind?: SpanKind; parent?: Context; attributes?: Attributes },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const parent = opts.parent ?? context.active();
  const span = tracer().startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
    throw err;
  } finally {
    span.end();
  }
}
