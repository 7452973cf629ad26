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

/** Every service answers `svc.<name>.health` with its readiness (the internal calls `<service>Health`, internal/calls.ts). */
export const healthSubject = (service: string) => `svc.${service}.health`;
export const HealthRequest = z.object({});
export const ServiceHealth = z.object({ service: z.string(), instance: z.string(), ready: z.boolean() });
export type ServiceHealth = z.infer<typeof ServiceHealth>;
