import { z } from 'zod';
import { baseConfig, envBool, redisConfig } from '@platform/config';

export const gatewayConfig = baseConfig
  .extend(redisConfig.shape)
  .extend({
    GATEWAY_PORT: z.coerce
      .number()
      .int()
      .min(0)
      .max(65535)
      .default(3000)
      .describe('Port of the public HTTP listener (0 picks a free port)'),
    ANALYTICS_PORT: z.coerce
      .number()
      .int()
      .min(0)
      .max(65535)
      .default(3001)
      .describe('Port of the analytics ingest listener ({analytics_url}: POST /events); 0 picks a free port'),
    GATEWAY_HOST: z.string().default('0.0.0.0').describe('Address the public listeners (main and analytics) bind'),
    PUBLIC_BASE_URL: z
      .preprocess((v) => (v === '' ? undefined : v), z.string().optional())
      .describe(
        "Public base URL of the API (chat OAuth redirect_uri, trigger webhookUrl, the session cookie's Secure flag, the OpenAPI servers list). Required when NODE_ENV=production unless ALLOWED_HOSTS is set; without it the base URL comes from the request's Host",
      ),
    ALLOWED_HOSTS: z
      .string()
      .optional()
      .describe(
        'Comma-separated host names the gateway answers for (`Host`, after TRUST_PROXY); a request for any other host gets 400. Unset: any host',
      ),
    NODE_ENV: z
      .string()
      .optional()
      .describe('`production` (set by deploy/Dockerfile) makes PUBLIC_BASE_URL or ALLOWED_HOSTS required'),
    SESSION_COOKIE_PREFIX: z.string().default('platform').describe('Session cookie name is <prefix>.session_token'),
    AUTH_CACHE_TTL_MS: z.coerce
      .number()
      .int()
      .min(0)
      .default(10000)
      .describe('How long the gateway remembers a verified credential (revocations clear it at once)'),
    BODY_LIMIT_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .default(1024 * 1024)
      .describe('Default largest request body'),
    TRUST_PROXY: z
      .string()
      .default('loopback')
      .describe('Express trust proxy setting (which X-Forwarded-For hops to trust)'),
    HEADERS_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .min(1000)
      .default(15000)
      .describe('Time a client has to send request headers'),
    REQUEST_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .min(1000)
      .default(30000)
      .describe('Time a client has to send a whole request'),
    SHUTDOWN_DELAY_MS: z.coerce
      .number()
      .int()
      .min(0)
      .default(0)
      .describe(
        'On SIGTERM, how long the gateway keeps serving with /readyz answering 503 before it stops accepting connections (give load balancers time to notice; 5000 on Kubernetes). Counted within SHUTDOWN_GRACE_MS',
      ),
    RETRY_ATTEMPT_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .min(100)
      .optional()
      .describe(
        'How long one attempt of a request that is safe to repeat waits for a replica before it is sent again, to another replica (all attempts end within NATS_REQUEST_TIMEOUT_MS); default: half of NATS_REQUEST_TIMEOUT_MS',
      ),
    GATEWAY_MAX_IN_FLIGHT: z.coerce
      .number()
      .int()
      .min(1)
      .default(4096)
      .describe(
        'Requests each gateway listener (main, analytics) holds at once at most; one more is answered 503 with Retry-After: 1 at once instead of waiting in memory while a service is slow',
      ),
    RATE_LIMIT_ENABLED: envBool(true).describe(
      'Count requests per client IP and per credential in Redis and answer 429 above the limits',
    ),
    RATE_LIMIT_WINDOW_SECONDS: z.coerce.number().int().min(1).default(60).describe('Window of the gateway rate limits'),
    RATE_LIMIT_PER_IP: z.coerce
      .number()
      .int()
      .min(1)
      .default(6000)
      .describe('Requests one client IP may make in each window (all operations)'),
    RATE_LIMIT_IPV6_PREFIX: z.coerce
      .number()
      .int()
      .min(32)
      .max(128)
      .default(64)
      .describe(
        'IPv6 clients are counted by their network of this many bits (rate limits and the failed-authentication lockout); IPv4 per address',
      ),
    RATE_LIMIT_PER_CREDENTIAL: z.coerce
      .number()
      .int()
      .min(1)
      .default(6000)
      .describe('Requests one credential (bearer token, API key, session cookie) may make in each window'),
    AUTH_FAILURE_LIMIT_PER_IP: z.coerce
      .number()
      .int()
      .min(1)
      .default(100)
      .describe(
        'Failed authentications (401) one client IP may have in each AUTH_FAILURE_WINDOW_SECONDS; above it, credentials from that IP that no gateway verified in the last AUTH_KNOWN_CREDENTIAL_SECONDS get 429 without being checked (known good ones still pass)',
      ),
    AUTH_FAILURE_LIMIT_PER_CREDENTIAL: z.coerce
      .number()
      .int()
      .min(1)
      .default(20)
      .describe(
        'Failed authentications one presented credential may have in each AUTH_FAILURE_WINDOW_SECONDS, from any address; above it that credential gets 429 without being checked',
      ),
    AUTH_FAILURE_WINDOW_SECONDS: z.coerce
      .number()
      .int()
      .min(1)
      .default(300)
      .describe('Window of the failed-authentication limits'),
    AUTH_KNOWN_CREDENTIAL_SECONDS: z.coerce
      .number()
      .int()
      .min(1)
      .default(86400)
      .describe(
        'How long a credential a gateway has verified counts as known (kept in Redis as a SHA-256): a known credential passes the lockout of an address over AUTH_FAILURE_LIMIT_PER_IP',
      ),
    RATE_LIMIT_KEY_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9:_-]+$/)
      .default('rl')
      .describe(
        'Prefix of the rate-limit counters in Redis (after REDIS_KEY_PREFIX); gateways that share it share the limits',
      ),
  })
  .superRefine((c, ctx) => {
    // In production the base URL must not come from a header the client writes (issue 54, finding 7).
    if (c.NODE_ENV === 'production' && !c.PUBLIC_BASE_URL && !c.ALLOWED_HOSTS) {
      ctx.addIssue({
        code: 'custom',
        path: ['PUBLIC_BASE_URL'],
        message:
          'required when NODE_ENV=production (or set ALLOWED_HOSTS): without it links and redirects would be built from the Host header',
      });
    }
  });
export type GatewayConfig = z.infer<typeof gatewayConfig>;
