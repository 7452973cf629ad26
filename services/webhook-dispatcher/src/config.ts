import { z } from 'zod';
import { auditConfig } from '@platform/config';

const HOUR = 3600_000;
/** 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: eight attempts over about 27.6 hours. */
const DEFAULT_RETRY_SCHEDULE = [5_000, 300_000, 1_800_000, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR];

const msList = z
  .string()
  .regex(/^\s*\d+(\s*,\s*\d+)*\s*$/, 'must be a comma-separated list of milliseconds')
  .transform((s) => s.split(',').map((n) => Number(n.trim())));

export const webhookDispatcherConfig = z.object({
  WEBHOOK_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(10_000)
    .describe('Time one HTTP delivery attempt may take in total (connect, headers, body)'),
  WEBHOOK_CONNECT_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(5_000)
    .describe('Time to open the TCP/TLS connection of one attempt'),
  WEBHOOK_TEST_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(8_000)
    .describe(
      "Time the test-delivery operation waits for the receiver (keep it below the gateway's NATS request timeout)",
    ),
  WEBHOOK_MAX_RESPONSE_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(64 * 1024)
    .describe('Receiver response bytes read at most; the rest is discarded unread'),
  WEBHOOK_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .default(32)
    .describe('Delivery attempts run at once by one replica'),
  WEBHOOK_MAX_IN_FLIGHT_PER_DESTINATION: z.coerce
    .number()
    .int()
    .min(1)
    .default(8)
    .describe(
      'Delivery attempts in flight to one destination at once, per replica (counted while the receiver has them): a receiver that hangs or answers slowly holds at most this many; further deliveries to it wait in the process for the next free slot (at most WEBHOOK_CAP_WAIT_MS; as many waiters as WEBHOOK_CONCURRENCY while its attempts come back, this many when they all hang), then as jobs, while other destinations keep their pace',
    ),
  WEBHOOK_RETRY_SCHEDULE_MS: msList
    .default(DEFAULT_RETRY_SCHEDULE)
    .describe(
      'Delays before each retry, comma-separated ms (attempts = entries + 1); network errors, timeouts, 5xx, 408 and 429 are retried',
    ),
  WEBHOOK_RETRY_JITTER: z.coerce
    .number()
    .min(0)
    .max(1)
    .default(0.2)
    .describe('Each retry delay is spread by ± this fraction at random'),
  WEBHOOK_CAP_WAIT_MS: z.coerce
    .number()
    .int()
    .min(10)
    .default(500)
    .describe(
      'How long a delivery that found its destination at WEBHOOK_MAX_IN_FLIGHT_PER_DESTINATION waits in the process for a free slot, and then as a job, before it is looked at again',
    ),
  WEBHOOK_DISABLE_AFTER_FAILING_MS: z.coerce
    .number()
    .int()
    .min(1)
    .default(5 * 24 * HOUR)
    .describe(
      'A destination whose deliveries have failed without a single success for this long is disabled (with disabledReason)',
    ),
  WEBHOOK_REDELIVERY_DELAY_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(2_000)
    .describe(
      'When an event cannot be scheduled (management or the database unavailable), JetStream redelivers it after this delay',
    ),
  ALLOW_LOOPBACK_WEBHOOKS: z
    .enum(['true', 'false'])
    .default('false')
    .describe(
      'Development and tests only: "true" lets deliveries reach loopback addresses (127.0.0.0/8, ::1). Private, link-local and metadata addresses are refused regardless',
    ),
  WEBHOOK_HOST_OVERRIDES: z
    .string()
    .optional()
    .describe(
      'Static answers for host names, "host=ip,host2=ip2" (like curl --resolve); the addresses are checked like DNS answers',
    ),
  WEBHOOK_PARTITION: z
    .string()
    .min(1)
    .max(64)
    .default('default')
    .describe(
      'Which share of the deliveries collection this deployment works; stacks sharing one database (parallel test runs) use different names',
    ),
  WEBHOOK_LOG_RETENTION_DAYS: z.coerce
    .number()
    .min(1)
    .max(365)
    .default(30)
    .describe('How long the delivery log keeps deliveries (days): recover refuses a since further back than this'),
  WEBHOOK_RECOVER_MAX_PER_CALL: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000)
    .default(1000)
    .describe('Deliveries one recover call queues at most (the answer says more: true; call again for the rest)'),
  WEBHOOK_STATS_FLUSH_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(2000)
    .describe(
      'How often the delivery counters added up in memory are written (one $inc upsert per destination and hour touched)',
    ),
  DESTINATION_CACHE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(2000)
    .describe(
      "How long a project's destinations are used before they are asked for again (changes clear them at once; the list in hand is used while the new one is fetched)",
    ),
  ...auditConfig.shape,
});
export type WebhookDispatcherConfig = z.infer<typeof webhookDispatcherConfig>;
