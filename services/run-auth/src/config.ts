import { z } from 'zod';
import { envBool } from '@platform/config';

export const runAuthConfig = z.object({
  AUTH_CACHE_TTL_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(30000)
    .describe('How long an app and its keys are remembered (app changes announced by management clear it at once)'),
  SIGNING_KEY_SEED: z
    .string()
    .min(16)
    .optional()
    .describe('Seed from which signing keys are derived when the specific secrets below are not set'),
  ANONYMOUS_SESSION_SECRET: z
    .string()
    .min(32)
    .optional()
    .describe('HS256 secret of anonymous session tokens (defaults to a key derived from SIGNING_KEY_SEED)'),
  ANONYMOUS_SESSION_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(2592000)
    .default(2592000)
    .describe('Lifetime of an anonymous session token (default 30 days)'),
  ANONYMOUS_SESSION_CHALLENGE: z
    .enum(['off', 'required'])
    .default('off')
    .describe('"required": anonymous sessions need a solved challenge in the x-challenge-solution header'),
  APP_JWT_CLOCK_TOLERANCE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(300)
    .default(60)
    .describe('Clock skew allowed when checking exp/iat/nbf of app JWTs'),
  APP_JWT_MAX_LIFETIME_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .default(86400)
    .describe('Largest exp - iat an app JWT may have'),
  CHALLENGE_ENABLED: envBool(true).describe(
    'Serve the challenge endpoints (GET/POST /run/auth/challenge, /verify); off: they answer 404',
  ),
  CHALLENGE_HMAC_KEY: z
    .string()
    .min(16)
    .optional()
    .describe('HMAC key that signs local proof-of-work challenges (defaults to a key derived from SIGNING_KEY_SEED)'),
  CHALLENGE_MAX_NUMBER: z.coerce
    .number()
    .int()
    .min(10)
    .max(10_000_000)
    .default(100000)
    .describe('Difficulty of local challenges: the largest number a client may have to try'),
  CHALLENGE_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(10)
    .max(3600)
    .default(300)
    .describe('How long a challenge can be solved (and its solution used once)'),
  CHALLENGE_RATE_LIMIT_POINTS: z.coerce
    .number()
    .int()
    .min(1)
    .default(60)
    .describe('Challenge requests allowed per app and client IP in each window'),
  CHALLENGE_RATE_LIMIT_WINDOW_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(60)
    .describe('Window of the challenge rate limit'),
  CHALLENGE_UPSTREAM_URL: z
    .url()
    .optional()
    .describe(
      'Base URL of a hosted challenge provider (ALTCHA Sentinel-compatible: /v1/challenge, /v1/verify, /v1/verify/signature); unset: challenges are issued and verified locally',
    ),
  CHALLENGE_UPSTREAM_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(5000)
    .describe('Timeout of a call to the challenge provider'),
  LEGACY_POW_ENABLED: envBool(true).describe('Serve GET /run/auth/pow/challenge; off: it answers 404'),
});
export type RunAuthConfig = z.infer<typeof runAuthConfig>;
