import { z } from 'zod';
import { operation } from '../operation';

export const Ping = z.object({ ok: z.boolean(), service: z.string(), instance: z.string() });

/** Gateway → NATS → service round trip, with no database: used by health checks and the benchmark. */
export const ping = operation({
  operationId: 'ping',
  summary: 'Round trip through the message bus to the management service',
  tags: ['System'],
  method: 'get',
  path: '/ping',
  service: 'management',
  subject: 'svc.management.ping',
  auth: 'none',
  reply: { status: 200, body: Ping },
  errors: [429, 503, 504],
  addition: true,
});

/** Every service answers `svc.<name>.health` with its readiness (used by the gateway's /readyz?deep=1). */
export const healthSubject = (service: string) => `svc.${service}.health`;
