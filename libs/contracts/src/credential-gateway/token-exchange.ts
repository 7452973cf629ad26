import { z } from 'zod';
import { operation } from '../operation';

/** RFC 8693 constants. */
export const TOKEN_EXCHANGE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

const tags = ['Credential gateway'];

/** A page of a platform the client (for example a browser extension) recognises; interpreted by the client. */
export const PageMatcher = z.object({
  hostGlob: z.string().describe('Host pattern; `*` matches any run of host characters (`*.zendesk.com`)'),
  pageType: z.string().describe('What kind of page this is (for example `ticket`)'),
  pathPattern: z.string().describe('Path pattern of the page; `*` matches one path segment'),
});
export type PageMatcher = z.infer<typeof PageMatcher>;

export const Platform = z.object({
  credentialRequired: z
    .boolean()
    .describe('Whether the platform needs a credential (a token from POST /credential-gateway/token)'),
  label: z.string(),
  slug: z.string().describe('Stable name; the `audience` of a token exchange and the `aud` of the issued token'),
  pageMatchers: z.array(PageMatcher),
});
export type Platform = z.infer<typeof Platform>;

export const PlatformCatalog = z.object({ platforms: z.array(Platform) });
export type PlatformCatalog = z.infer<typeof PlatformCatalog>;

export const getPlatformCatalog = operation({
  operationId: 'getPlatformCatalog',
  summary: 'The platforms the credential gateway issues tokens for',
  description:
    'Public and cacheable: answers with `ETag` and `Cache-Control: public, max-age=…`; a request with a matching `If-None-Match` gets 304 with no body.',
  tags,
  method: 'get',
  path: '/credential-gateway/.well-known/platforms',
  service: 'credential-gateway',
  subject: 'svc.credential-gateway.platforms.get',
  auth: 'none',
  reply: { status: 200, body: PlatformCatalog },
  extraReplies: [{ status: 304, description: 'Not modified: `If-None-Match` matched the current ETag' }],
  errors: [429, 500, 503],
  forwardHeaders: ['if-none-match'],
  rateLimit: 'credential-gateway',
});

/** `application/x-www-form-urlencoded` body of the token exchange. Unknown parameters are ignored (RFC 6749 §3.2). */
export const TokenExchangeRequest = z.object({
  grant_type: z
    .string()
    .min(1)
    .describe(`Must be \`${TOKEN_EXCHANGE_GRANT_TYPE}\` (otherwise \`unsupported_grant_type\`)`),
  subject_token: z
    .string()
    .min(1)
    .max(8192)
    .describe(
      'A credential this platform issued: an anonymous session token or app JWT (web_client / support_copilot apps) or an API key (api apps)',
    ),
  subject_token_type: z.literal(ACCESS_TOKEN_TYPE),
  audience: z.string().min(1).max(255).describe('The slug of a platform in the catalog'),
  svc_app_id: z.string().min(1).max(255).describe('The app the subject token belongs to'),
  resource: z
    .string()
    .min(1)
    .max(2048)
    .optional()
    .describe("Absolute URL on the platform (its host must match one of the platform's `hostGlob`s)"),
});
export type TokenExchangeRequest = z.infer<typeof TokenExchangeRequest>;

export const TokenExchangeReply = z.object({
  access_token: z
    .string()
    .describe('A JWT (`typ: at+jwt`) signed with a key from /credential-gateway/.well-known/jwks.json'),
  expires_in: z.number().int().describe('Seconds until the token expires'),
  issued_token_type: z.literal(ACCESS_TOKEN_TYPE),
  token_type: z.literal('Bearer'),
});
export type TokenExchangeReply = z.infer<typeof TokenExchangeReply>;

export const exchangeToken = operation({
  operationId: 'exchangeToken',
  summary: 'RFC 8693 token exchange: a platform credential for a short-lived token for one platform',
  description:
    'Errors are `{error, error_description}` with `Cache-Control: no-store`: `invalid_request` (400: missing or malformed parameters, wrong `subject_token_type`, wrong content type), ' +
    '`unsupported_grant_type` (400), `invalid_grant` (400: bad, expired or foreign subject token), `invalid_target` (400: audience or resource not allowed), ' +
    '`invalid_client` (401: unknown or disabled app).',
  tags,
  method: 'post',
  path: '/credential-gateway/token',
  service: 'credential-gateway',
  subject: 'svc.credential-gateway.tokens.exchange',
  auth: 'none',
  body: TokenExchangeRequest,
  bodyType: 'form',
  bodyLimit: 16 * 1024,
  reply: { status: 200, body: TokenExchangeReply },
  errors: [400, 401, 413, 429, 500, 503],
  errorBody: 'oauth',
  rateLimit: 'credential-gateway',
});

/** A public JSON Web Key as published in the key set. */
export const PublicJwk = z
  .object({
    kty: z.string(),
    kid: z.string(),
    alg: z.string(),
    use: z.literal('sig'),
    crv: z.string().optional(),
    x: z.string().optional(),
    y: z.string().optional(),
  })
  .catchall(z.unknown());
export const JwkSet = z.object({ keys: z.array(PublicJwk) });
export type JwkSet = z.infer<typeof JwkSet>;

export const getCredentialGatewayJwks = operation({
  operationId: 'getCredentialGatewayJwks',
  summary: 'The public keys that verify tokens issued by the credential gateway',
  description:
    'Holds the key that signs now and every earlier key whose tokens may still be unexpired. Cacheable (`Cache-Control: public, max-age=…`); ' +
    'a verifier that meets an unknown `kid` should fetch it again.',
  tags,
  method: 'get',
  path: '/credential-gateway/.well-known/jwks.json',
  service: 'credential-gateway',
  subject: 'svc.credential-gateway.jwks.get',
  auth: 'none',
  reply: { status: 200, body: JwkSet },
  errors: [429, 500, 503],
  rateLimit: 'credential-gateway',
  addition: true,
});

export const SigningKey = z.object({
  kid: z.string(),
  alg: z.string(),
  createdAt: z.string().describe('ISO 8601 date-time; the newest key signs'),
});
export type SigningKey = z.infer<typeof SigningKey>;

export const rotateCredentialGatewayKey = operation({
  operationId: 'rotateCredentialGatewayKey',
  summary:
    'Create a new signing key; it signs from now on, earlier keys stay published until their tokens have expired',
  tags,
  method: 'post',
  path: '/credential-gateway/signing-keys/rotate',
  service: 'credential-gateway',
  subject: 'svc.credential-gateway.signing-keys.rotate',
  auth: 'admin',
  reply: { status: 201, body: z.object({ data: SigningKey }) },
  errors: [401, 403, 500, 503],
  addition: true,
});

/**
 * Payload of the `signingKeysChanged` notice (core NATS, published by the credential gateway after a rotation), so
 * every replica rereads its keys at once instead of at its next refresh.
 */
export const SigningKeysChanged = z.object({ kid: z.string() });
