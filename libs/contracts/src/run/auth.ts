import { z } from 'zod';
import { operation } from '../operation';
import { Principal } from '../principal';

/** Internal call `authenticateRun`: the gateway asks run-auth who a run-API request is. Reply: `{principal}` or a 401/403 problem. */
export const AuthenticateRunRequest = z.object({
  /** The bearer credential (API key, app JWT, anonymous session token, playground or OAuth token). */
  token: z.string(),
  /** `x-app-id` header, selecting the app for app-credential JWTs. */
  appId: z.string().optional(),
  origin: z.string().optional(),
});
export type AuthenticateRunRequest = z.infer<typeof AuthenticateRunRequest>;
export const AuthenticateRunReply = z.object({ principal: Principal });

/** `serverMetadata.authMethod` values. */
export const AUTH_METHODS = {
  apiKey: 'api_key',
  playground: 'playground_token',
  appJwt: 'app_credential_web_client_authenticated',
  anonymous: 'app_credential_web_client',
  supportCopilot: 'app_credential_support_copilot',
} as const;

export const AnonymousSession = z.object({
  token: z.string().describe('A signed JWT (HS256) the run API accepts with `x-app-id: <appId>`'),
  expiresAt: z.string().describe('ISO 8601 date-time'),
});
export type AnonymousSession = z.infer<typeof AnonymousSession>;

/** Header carrying a proof-of-work solution: base64 of the JSON solution `{algorithm, challenge, number, salt, signature}`. */
export const CHALLENGE_SOLUTION_HEADER = 'x-challenge-solution';

const tags = ['Run auth'];

export const createAnonymousSession = operation({
  operationId: 'createAnonymousSession',
  summary: 'Start an anonymous session for a web_client app that allows anonymous access',
  description:
    "The Origin must match the app's allowedDomains. Send a still-valid anonymous token of the same app as `Authorization: Bearer` to keep the same identity (rolling refresh). " +
    'When the deployment requires it (ANONYMOUS_SESSION_CHALLENGE=required), a solved challenge goes in `x-challenge-solution`.',
  tags,
  method: 'post',
  path: '/run/auth/apps/{appId}/anonymous-session',
  service: 'run-auth',
  subject: 'svc.run-auth.anonymous-sessions.create',
  auth: 'none',
  params: z.object({ appId: z.string().min(1).max(255) }),
  reply: { status: 200, body: AnonymousSession },
  errors: [400, 401, 403, 404, 422, 429, 500, 503],
  forwardHeaders: ['authorization', CHALLENGE_SOLUTION_HEADER],
  rateLimit: 'run-auth',
});

export const EndpointClass = z
  .string()
  .max(32)
  .regex(/^[a-z0-9-]+$/, 'must match ^[a-z0-9-]+$');

/** An ALTCHA-compatible proof-of-work challenge: find `number` <= maxnumber with sha256(salt + number) = challenge. */
export const Challenge = z
  .object({
    algorithm: z.string(),
    challenge: z.string(),
    maxnumber: z.number().int().optional(),
    salt: z.string(),
    signature: z.string(),
    expiresAt: z.number().int().optional().describe('When the challenge expires (milliseconds since the epoch)'),
  })
  .catchall(z.unknown());

export const ChallengeSolution = z.strictObject({
  algorithm: z.string().max(32),
  challenge: z.string().max(256),
  number: z.number().int().min(0),
  salt: z.string().max(1024),
  signature: z.string().max(256),
});
export type ChallengeSolution = z.infer<typeof ChallengeSolution>;

export const ChallengeQuery = z.object({ appId: z.string().min(1).max(255) });

export const getChallenge = operation({
  operationId: 'getChallenge',
  summary: 'Issue a proof-of-work challenge for an app',
  tags,
  method: 'get',
  path: '/run/auth/challenge',
  service: 'run-auth',
  subject: 'svc.run-auth.challenges.get',
  auth: 'none',
  query: ChallengeQuery.extend({ endpointClass: EndpointClass.optional() }),
  reply: { status: 200, body: Challenge },
  errors: [400, 403, 404, 429, 502, 503],
  rateLimit: 'run-auth',
});

export const ChallengeInteraction = z
  .object({ endpointClass: EndpointClass.optional() })
  .catchall(z.unknown())
  .describe('Interaction data (opaque JSON, at most 16 KB); `endpointClass` as in the GET form');

export const postChallenge = operation({
  operationId: 'postChallenge',
  summary: 'Send interaction data and receive a proof-of-work challenge',
  description:
    "Without an upstream provider the interaction data is acknowledged and not stored; with one (CHALLENGE_UPSTREAM_URL) it is forwarded and the provider's answer is passed through.",
  tags,
  method: 'post',
  path: '/run/auth/challenge',
  service: 'run-auth',
  subject: 'svc.run-auth.challenges.post',
  auth: 'none',
  query: ChallengeQuery,
  body: ChallengeInteraction,
  bodyLimit: 16 * 1024,
  reply: {
    status: 200,
    body: z.object({ received: z.boolean(), receivedAt: z.string(), challenge: Challenge }).catchall(z.unknown()),
  },
  errors: [400, 403, 404, 413, 429, 502, 503],
  rateLimit: 'run-auth',
});

export const ChallengeVerify = z.union([
  z.strictObject({ payload: z.string().min(1).max(4096).describe('base64 of the JSON solution') }),
  ChallengeSolution,
]);

export const ChallengeVerification = z
  .object({
    verified: z.boolean(),
    reason: z.enum(['invalid', 'expired', 'already_used', 'wrong_app']).optional(),
  })
  .catchall(z.unknown());

export const verifyChallenge = operation({
  operationId: 'verifyChallenge',
  summary: 'Verify a proof-of-work solution (each solution verifies once)',
  tags,
  method: 'post',
  path: '/run/auth/challenge/verify',
  service: 'run-auth',
  subject: 'svc.run-auth.challenges.verify',
  auth: 'none',
  query: ChallengeQuery,
  body: ChallengeVerify,
  bodyLimit: 16 * 1024,
  reply: { status: 200, body: ChallengeVerification },
  errors: [400, 403, 404, 429, 502, 503],
  rateLimit: 'run-auth',
});

export const getLegacyPowChallenge = operation({
  operationId: 'getLegacyPowChallenge',
  summary: 'Issue a legacy proof-of-work challenge (no app)',
  tags,
  method: 'get',
  path: '/run/auth/pow/challenge',
  service: 'run-auth',
  subject: 'svc.run-auth.pow.get',
  auth: 'none',
  reply: { status: 200, body: Challenge },
  errors: [404, 429, 502, 503],
  rateLimit: 'run-auth',
});
