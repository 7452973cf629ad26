import { z } from 'zod';

/**
 * Parses the environment once against a zod object schema. Every field should carry `.describe()`;
 * the README's configuration table is generated from these descriptions.
 * Missing or bad values stop with one message listing all of them.
 */
export function loadConfig<S extends z.ZodObject>(schema: S, env: Record<string, string | undefined> = process.env): z.infer<S> {
  const result = schema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  - ${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return result.data;
}

/** Shared env fields every service has. */
export const baseConfig = z.object({
  NATS_URL: z.string().min(1).default('nats://127.0.0.1:4222').describe('NATS server URL(s), comma separated'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('pino log level'),
  HEALTH_PORT: z.coerce.number().int().min(0).max(65535).optional().describe('Port of the service\'s own /healthz, /readyz and /metrics listener (0 picks a free port; unset disables it)'),
  NATS_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(10000).describe('How long a NATS request waits for a reply'),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(20000).describe('How long a SIGTERM drain may take before the process exits'),
  JS_REPLICAS: z.coerce.number().int().min(1).max(5).default(1).describe('Replica count of the JetStream streams a service creates (3 on a three-node NATS cluster)'),
});

export const mongoConfig = z.object({
  MONGO_URL: z.string().min(1).default('mongodb://127.0.0.1:27017/').describe('MongoDB connection string (MongoDB 7 or FerretDB)'),
  MONGO_DB_PREFIX: z.string().regex(/^[a-z0-9_]*$/).default('platform').describe('Prefix of each service\'s database name (<prefix>_<service>)'),
  MONGO_POOL_SIZE: z.coerce.number().int().min(1).default(10).describe('Connection pool size per process'),
});

export const redisConfig = z.object({
  REDIS_URL: z.string().min(1).default('redis://127.0.0.1:6379').describe('Redis URL'),
  REDIS_KEY_PREFIX: z.string().default('platform:').describe('Prefix of every Redis key'),
});

/** Booleans from env: "true"/"1"/"yes" are true, anything else false. */
export const envBool = (def: boolean) =>
  z
    .union([z.boolean(), z.string()])
    .optional()
    .transform((v) => (v === undefined || v === '' ? def : typeof v === 'boolean' ? v : ['1', 'true', 'yes', 'on'].includes(v.toLowerCase())));

/** Lists the fields of a config schema with their descriptions and defaults (for the README table). */
export function describeConfig(schema: z.ZodObject): Array<{ name: string; description: string; default: string }> {
  const out: Array<{ name: string; description: string; default: string }> = [];
  for (const [name, field] of Object.entries(schema.shape) as Array<[string, z.ZodType]>) {
    let def = '';
    const parsed = (field as z.ZodType).safeParse(undefined);
    if (parsed.success && parsed.data !== undefined) def = String(parsed.data);
    out.push({ name, description: field.description ?? '', default: def });
  }
  return out;
}
