import { z } from 'zod';

/**
 * Parses the environment once against a zod object schema. Every field should carry `.describe()`;
 * the README's configuration table is generated from these descriptions.
 * Missing or bad values stop with one message listing all of them.
 */
export function loadConfig<S extends z.ZodObject>(
  schema: S,
  env: Record<string, string | undefined> = process.env,
): z.infer<S> {
  const result = schema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  - ${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return result.data;
}

/** Shared env fields every service has. */
export const baseConfig = z.object({
  NATS_URL: z
    .string()
    .min(1)
    .default('nats://127.0.0.1:4222')
    .describe('NATS server URL(s), comma separated (tls://… for TLS)'),
  NATS_CREDS: z
    .string()
    .min(1)
    .describe(
      "Path of this process's NATS credentials (.creds file: user JWT and seed; `pnpm nats:credentials init` writes one per service). Required: the bus admits no anonymous client",
    ),
  BUS_KEY_FILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      "Path of this process's bus key (`pnpm nats:credentials init` writes <identity>.key beside <identity>.creds): the gateway signs each public operation it sends, a service serves only those the gateway signed. Default: beside NATS_CREDS",
    ),
  NATS_TLS_CA_FILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      "CA certificate (PEM) that signed the NATS server's certificate; set it to verify a TLS server with a private CA",
    ),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('pino log level'),
  HEALTH_PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65535)
    .optional()
    .describe(
      "Port of the service's own /healthz, /readyz and /metrics listener (0 picks a free port; unset disables it)",
    ),
  NATS_REQUEST_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(10000)
    .describe('How long a NATS request waits for a reply'),
  BUS_MAX_IN_FLIGHT: z.coerce
    .number()
    .int()
    .min(1)
    .default(512)
    .describe(
      'Requests a service process serves over NATS at once at most (each item of a batch counts); one more is answered 503 with Retry-After: 1 at once, so a slow dependency sheds load instead of piling it up',
    ),
  SHUTDOWN_GRACE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(20000)
    .describe(
      "On SIGTERM the process stops taking work, finishes what is in flight and exits within this time (keep it below the orchestrator's termination grace period)",
    ),
  JS_REPLICAS: z.coerce
    .number()
    .int()
    .min(1)
    .max(5)
    .default(1)
    .describe(
      'Replicas of the JetStream streams this process creates when they do not exist yet (3 on a 3-server NATS cluster)',
    ),
  OTEL_EXPORTER_OTLP_ENDPOINT: z
    .preprocess((v) => (v === '' ? undefined : v), z.url({ protocol: /^https?$/ }).optional())
    .describe(
      'OTLP/HTTP (JSON) base URL traces are exported to (spans are POSTed to <url>/v1/traces); unset: traces are not exported',
    ),
  OTEL_BSP_SCHEDULE_DELAY: z.coerce
    .number()
    .int()
    .min(10)
    .default(5000)
    .describe('Milliseconds between two exports of finished spans'),
  SERVICE_NAME: z
    .string()
    .optional()
    .describe('Name written in every log line (set by the launcher; defaults to "platform")'),
});

export const mongoConfig = z.object({
  MONGO_URL: z
    .string()
    .min(1)
    .default('mongodb://127.0.0.1:27017/')
    .describe('MongoDB connection string (MongoDB 7 or FerretDB)'),
  MONGO_DB_PREFIX: z
    .string()
    .regex(/^[a-z0-9_]*$/)
    .default('platform')
    .describe("Prefix of each service's database name (<prefix>_<service>)"),
  MONGO_POOL_SIZE: z.coerce.number().int().min(1).default(10).describe('Connection pool size per process'),
  OUTBOX_SWEEP_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(2000)
    .describe('How often events a stopped process stored but did not publish (outbox leftovers) are republished'),
});

export const redisConfig = z.object({
  REDIS_URL: z.string().min(1).default('redis://127.0.0.1:6379').describe('Redis URL'),
  REDIS_KEY_PREFIX: z.string().default('platform:').describe('Prefix of every Redis key'),
});

const unsetWhenEmpty = (v: unknown) => (typeof v === 'string' && v.trim() === '' ? undefined : v);

/** The keys that seal secrets at rest (services that store sealed values: `sealing` in their `uses`, libs/contracts/src/services.ts). */
export const encryptionConfig = z.object({
  ENCRYPTION_KEYS: z
    .preprocess(
      unsetWhenEmpty,
      z
        .string()
        .transform((s) => s.split(',').map((k) => k.trim()))
        .pipe(z.array(z.string().min(16, 'each key must be at least 16 characters')).min(1))
        .optional(),
    )
    .describe(
      'Keys that seal secrets at rest, comma-separated, newest first: the newest seals, every key opens (each at least 16 characters; the same list for every service that reads it). Rotation: put the new key first, deploy, run `pnpm secrets:reencrypt`, then drop the old key (docs/security.md, "Sealed values"). Required unless ENCRYPTION_KEY is set',
    ),
  ENCRYPTION_KEY: z
    .preprocess(unsetWhenEmpty, z.string().min(16).optional())
    .describe(
      'One sealing key: the same as ENCRYPTION_KEYS with that key alone (kept for deployments made before the list). When both are set, ENCRYPTION_KEYS must contain it',
    ),
  ENCRYPTION_ACCEPT_UNBOUND: z
    .enum(['true', 'false'])
    .default('true')
    .describe(
      '"true": values sealed by releases before record bindings (format v1) still open. Set "false" once `pnpm secrets:reencrypt --check` reports nothing left: then a v1 value put into a record (from an old backup) is refused like one copied from another record',
    ),
});
export type EncryptionConfig = z.infer<typeof encryptionConfig>;

/** The sealing keys, newest first, or why the configuration gives none (for `loadConfig`'s list of problems). */
export function sealingKeysOf(
  config: EncryptionConfig,
): { keys: string[] } | { problem: { path: string; message: string } } {
  const list = config.ENCRYPTION_KEYS;
  const single = config.ENCRYPTION_KEY;
  if (list && single && !list.includes(single)) {
    return {
      problem: {
        path: 'ENCRYPTION_KEYS',
        message:
          'does not contain ENCRYPTION_KEY: add it to the list (it opens what it sealed), or unset ENCRYPTION_KEY once no value is sealed under it',
      },
    };
  }
  if (list && new Set(list).size !== list.length)
    return { problem: { path: 'ENCRYPTION_KEYS', message: 'names a key twice' } };
  const keys = list ?? (single ? [single] : []);
  if (!keys.length)
    return {
      problem: { path: 'ENCRYPTION_KEYS', message: 'required (or ENCRYPTION_KEY): the keys that seal secrets at rest' },
    };
  return { keys };
}

/** `schema` with the rule that ENCRYPTION_KEYS or ENCRYPTION_KEY gives at least one key. */
export function withSealingKeys<S extends z.ZodObject>(schema: S): S {
  return schema.superRefine((config, ctx) => {
    const r = sealingKeysOf(config as EncryptionConfig);
    if ('problem' in r) ctx.addIssue({ code: 'custom', path: [r.problem.path], message: r.problem.message });
  }) as S;
}

/** The audit settings of a service that records its changes (libs/audit): a part of its config schema. */
export const auditConfig = z.object({
  AUDIT_PENDING_SETTLE_SECONDS: z.coerce
    .number()
    .int()
    .min(30)
    .default(300)
    .describe(
      'A change whose audit entry is still not written this long after it began (its process stopped during the change) is recorded with outcome "unknown"',
    ),
});

/** Booleans from env: "true"/"1"/"yes" are true, anything else false. */
export const envBool = (def: boolean) =>
  z
    .union([z.boolean(), z.string()])
    .optional()
    .transform((v) =>
      v === undefined || v === ''
        ? def
        : typeof v === 'boolean'
          ? v
          : ['1', 'true', 'yes', 'on'].includes(v.toLowerCase()),
    );

/** Lists the fields of a config schema with their descriptions and defaults (for the README table). */
export function describeConfig(
  schema: z.ZodObject,
): Array<{ name: string; description: string; default: string; required: boolean }> {
  const out: Array<{ name: string; description: string; default: string; required: boolean }> = [];
  for (const [name, field] of Object.entries(schema.shape) as Array<[string, z.ZodType]>) {
    let def = '';
    const parsed = field.safeParse(undefined);
    if (parsed.success && parsed.data !== undefined)
      def = Array.isArray(parsed.data) ? parsed.data.join(',') : String(parsed.data);
    out.push({ name, description: field.description ?? '', default: def, required: !parsed.success });
  }
  return out;
}
