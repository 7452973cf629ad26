import { z } from 'zod';
import { operation } from '../operation';
import { deleteOperation, listOperation } from '../record-operations';
import { Rid, AgentPath, HeaderName, HeaderValue, JsonObject, IsoDateTime } from '../common';
import { text } from '../text';
import { TRIGGER_BODY_LIMIT_BYTES } from '../run/triggers';

function compiles(source: string): boolean {
  try {
    new RegExp(source);
    return true;
  } catch {
    return false;
  }
}

const Regex = z.string().min(1).max(1000).refine(compiles, { message: 'must be a valid regular expression' });
const HeaderToken = z.string().regex(/^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$/, 'must be an RFC 7230 token (a header name)');

export const SIGNATURE_ALGORITHMS = ['sha256', 'sha512', 'sha384', 'sha1', 'md5'] as const;
/** Algorithms that still work but are weak: a trigger using them gets a `warning`. */
export const WEAK_SIGNATURE_ALGORITHMS: readonly string[] = ['sha1', 'md5'];

const SignatureSpec = z
  .strictObject({
    source: z
      .enum(['header', 'query', 'body'])
      .describe('Where the signature is: a header, a query parameter, or a JMESPath into the JSON body'),
    key: z.string().min(1).max(256).describe('Header name, query parameter name, or JMESPath expression'),
    prefix: z.string().max(64).optional().describe('Text before the signature to strip, e.g. `sha256=`'),
    regex: Regex.optional().describe('Extracts the signature from the value (first capture group)'),
  })
  .superRefine((s, ctx) => {
    if (s.source === 'header' && !HeaderToken.safeParse(s.key).success) {
      ctx.addIssue({ code: 'custom', path: ['key'], message: 'must be a header name when source is header' });
    }
  });

const SignedComponent = z
  .strictObject({
    source: z.enum(['header', 'body', 'literal']),
    key: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe('Header name, or JMESPath into the body (absent: the raw body)'),
    value: z.string().max(1000).optional().describe('The text of a literal component'),
    regex: Regex.optional().describe('Extracts part of the value (first capture group)'),
    required: z.boolean().default(true),
    timestamp: z
      .boolean()
      .optional()
      .describe(
        'This component is the time the provider signed the call, in Unix seconds (Stripe `t=`, Slack `X-Slack-Request-Timestamp`): a call whose time is further from now than `validation.timestampToleranceSeconds` (default 300) is refused with 401, so an old signed request cannot be replayed (addition)',
      ),
  })
  .superRefine((c, ctx) => {
    if (c.source === 'literal' && c.value === undefined)
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'a literal component needs a value' });
    if (c.source === 'literal' && c.timestamp)
      ctx.addIssue({
        code: 'custom',
        path: ['timestamp'],
        message: 'a literal cannot be the timestamp: name the header or body value that carries it',
      });
    if (c.source === 'header') {
      if (c.key === undefined)
        ctx.addIssue({ code: 'custom', path: ['key'], message: 'a header component needs a key (the header name)' });
      else if (!HeaderToken.safeParse(c.key).success)
        ctx.addIssue({ code: 'custom', path: ['key'], message: 'must be a header name when source is header' });
    }
  });

/** How far a signed call's timestamp may be from now when `validation.timestampToleranceSeconds` is not set. */
export const DEFAULT_TIMESTAMP_TOLERANCE_SECONDS = 300;

export const SignatureVerification = z
  .strictObject({
    algorithm: z
      .enum(SIGNATURE_ALGORITHMS)
      .default('sha256')
      .describe('HMAC hash; md5 and sha1 are accepted with a warning'),
    encoding: z.enum(['hex', 'base64']).default('hex'),
    signature: SignatureSpec,
    signedComponents: z
      .array(SignedComponent)
      .min(1)
      .max(20)
      .default([{ source: 'body', required: true }])
      .describe('What is signed, in order (default: the raw body)'),
    componentJoin: z
      .strictObject({ strategy: z.literal('concatenate'), separator: z.string().max(16).default('') })
      .default({ strategy: 'concatenate', separator: '' }),
    validation: z
      .strictObject({
        headerCaseSensitive: z.boolean().default(false),
        allowEmptyBody: z.boolean().default(true),
        normalizeUnicode: z.boolean().default(false),
        timestampToleranceSeconds: z
          .number()
          .int()
          .min(1)
          .max(86_400)
          .optional()
          .describe(
            `How far the signed timestamp (the component marked \`timestamp\`) may be from now, either way (default ${DEFAULT_TIMESTAMP_TOLERANCE_SECONDS}) (addition)`,
          ),
      })
      .default({ headerCaseSensitive: false, allowEmptyBody: true, normalizeUnicode: false }),
  })
  .superRefine((v, ctx) => {
    const marked = v.signedComponents.flatMap((c, i) => (c.timestamp ? [i] : []));
    for (const i of marked.slice(1))
      ctx.addIssue({
        code: 'custom',
        path: ['signedComponents', i, 'timestamp'],
        message: 'only one signed component can be the timestamp',
      });
    if (v.validation.timestampToleranceSeconds !== undefined && marked.length === 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['validation', 'timestampToleranceSeconds'],
        message: 'mark the signed component that carries the timestamp with `timestamp: true`',
      });
    }
  });
export type SignatureVerification = z.infer<typeof SignatureVerification>;

function uniqueNames(headers: Array<{ name: string }>): boolean {
  const names = headers.map((h) => h.name.toLowerCase());
  return new Set(names).size === names.length;
}

/** `{headers: [{name, value}]}`: a webhook call must send every header with its value. Values are stored as keyed hashes. */
export const TriggerAuthenticationInput = z.strictObject({
  headers: z
    .array(z.strictObject({ name: HeaderName, value: HeaderValue }))
    .max(20)
    .refine(uniqueNames, { message: 'header names must be unique (case-insensitive)' }),
});

/** On update each header gives a new `value` or `keepExisting: true` to keep the stored one. */
export const TriggerAuthenticationUpdate = z.strictObject({
  headers: z
    .array(
      z
        .strictObject({ name: HeaderName, value: HeaderValue.optional(), keepExisting: z.boolean().optional() })
        .refine((h) => (h.value !== undefined) !== (h.keepExisting === true), {
          message: 'give either value or keepExisting: true',
          path: ['value'],
        }),
    )
    .max(20)
    .refine(uniqueNames, { message: 'header names must be unique (case-insensitive)' }),
});

/** What responses show of `authentication`: header names only, never values or hashes. */
export const TriggerAuthentication = z.object({ headers: z.array(z.object({ name: z.string() })) });

export const OutputTransform = z.strictObject({
  jmespath: z.string().min(1).max(2000).optional(),
  objectTransformation: z.record(z.string(), z.string().max(2000)).optional(),
});

export const Trigger = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  enabled: z.boolean(),
  dispatchDelayMs: z.number().int(),
  messageTemplate: z.string().nullable(),
  inputSchema: z.record(z.string(), z.unknown()).nullable(),
  outputTransform: z.record(z.string(), z.unknown()).nullable(),
  runAsUserId: z.string().nullable(),
  runAsUserIds: z.array(z.string()),
  createdBy: z.string().nullable(),
  authentication: TriggerAuthentication.nullable(),
  signingSecretCredentialReferenceId: z.string().nullable(),
  signatureVerification: z.record(z.string(), z.unknown()).nullable(),
  deliveryIdHeader: z
    .string()
    .nullable()
    .describe(
      "Header carrying the provider's delivery id; a repeated id is answered with the first invocation (addition)",
    ),
  rateLimitPerMinute: z
    .number()
    .int()
    .nullable()
    .describe(
      'Webhook calls accepted per minute (null: the platform default, TRIGGER_RATE_LIMIT_PER_MINUTE) (addition)',
    ),
  bodyLimitBytes: z
    .number()
    .int()
    .nullable()
    .describe(
      `Largest webhook body accepted, in bytes (null: the platform maximum, ${TRIGGER_BODY_LIMIT_BYTES}) (addition)`,
    ),
  createdAt: z.string(),
  updatedAt: z.string(),
  userCount: z.number().int().describe('Distinct run-as users (runAsUserId and runAsUserIds)'),
  webhookUrl: z
    .string()
    .describe('Where the trigger is invoked: {base}/run/tenants/{t}/projects/{p}/agents/{a}/triggers/{id}'),
});
export type Trigger = z.infer<typeof Trigger>;

const UserId = text({ min: 1, max: 256 });
const fields = {
  name: text({ min: 1, max: 256 }),
  description: text({ max: 2000 }).nullable(),
  enabled: z.boolean(),
  dispatchDelayMs: z
    .number()
    .int()
    .min(0)
    .max(600000)
    .describe('Delay between dispatching each user execution, 0 to 600000 ms'),
  messageTemplate: text({ min: 1, max: 50000 }).describe(
    'Message sent to the agent; `{{name}}` placeholders take values from the input',
  ),
  inputSchema: JsonObject.describe('JSON Schema (draft-07, 2019-09 or 2020-12 by `$schema`) that the input must match'),
  outputTransform: OutputTransform,
  runAsUserId: UserId,
  runAsUserIds: z.array(UserId).max(1000),
  createdBy: text({ max: 256 }),
  signingSecretCredentialReferenceId: Rid.describe('A credential of this project holding the signing secret'),
  signatureVerification: SignatureVerification,
  deliveryIdHeader: HeaderToken.max(128).describe(
    "Header that carries the provider's delivery id, e.g. X-GitHub-Delivery (addition)",
  ),
  rateLimitPerMinute: z
    .number()
    .int()
    .min(1)
    .max(100_000)
    .describe('Webhook calls accepted per minute; more get 429 (addition)'),
  bodyLimitBytes: z
    .number()
    .int()
    .min(1)
    .max(TRIGGER_BODY_LIMIT_BYTES)
    .describe(
      `Largest webhook body accepted, in bytes, at most the platform maximum (${TRIGGER_BODY_LIMIT_BYTES}); a larger body gets 413 (addition)`,
    ),
};

/**
 * The fields a create and an update take alike (each may be left out; null clears it), in their wire order around
 * `authentication` (whose create and update shapes differ).
 */
const optionalFields = {
  beforeAuthentication: {
    messageTemplate: fields.messageTemplate.nullable().optional(),
    inputSchema: fields.inputSchema.nullable().optional(),
    outputTransform: fields.outputTransform.nullable().optional(),
    runAsUserId: fields.runAsUserId.nullable().optional(),
    runAsUserIds: fields.runAsUserIds.optional(),
    createdBy: fields.createdBy.nullable().optional(),
  },
  afterAuthentication: {
    signingSecretCredentialReferenceId: fields.signingSecretCredentialReferenceId.nullable().optional(),
    signatureVerification: fields.signatureVerification.nullable().optional(),
    deliveryIdHeader: fields.deliveryIdHeader.nullable().optional(),
    rateLimitPerMinute: fields.rateLimitPerMinute.nullable().optional(),
    bodyLimitBytes: fields.bodyLimitBytes.nullable().optional(),
    createdAt: IsoDateTime.optional(),
    updatedAt: IsoDateTime.optional(),
  },
};

export const TriggerCreate = z.strictObject({
  id: Rid.optional(),
  name: fields.name,
  description: fields.description.optional(),
  enabled: fields.enabled.default(true),
  dispatchDelayMs: fields.dispatchDelayMs.default(0),
  ...optionalFields.beforeAuthentication,
  authentication: TriggerAuthenticationInput.nullable().optional(),
  ...optionalFields.afterAuthentication,
});
export type TriggerCreate = z.infer<typeof TriggerCreate>;

export const TriggerUpdate = z.strictObject({
  id: Rid.optional().describe('Must equal the path id when given (ids cannot be changed)'),
  name: fields.name.optional(),
  description: fields.description.optional(),
  enabled: fields.enabled.optional(),
  dispatchDelayMs: fields.dispatchDelayMs.optional(),
  ...optionalFields.beforeAuthentication,
  authentication: TriggerAuthenticationUpdate.nullable().optional(),
  ...optionalFields.afterAuthentication,
});
export type TriggerUpdate = z.infer<typeof TriggerUpdate>;

const TriggerReply = z.object({
  data: Trigger,
  warning: z
    .string()
    .optional()
    .describe(
      'Present when the trigger works but something deserves attention (unknown placeholders, weak algorithm, run-as users without authentication)',
    ),
});

const tags = ['Triggers'];
const base = '/manage/tenants/{tenantId}/projects/{projectId}/agents/{agentId}/triggers';
/** The problems a trigger operation answers (a write to the project also 409, see `operation()`). */
const triggerErrors = [400, 401, 403, 404, 422, 500];
const TriggerPath = AgentPath.extend({ id: Rid });

export const listTriggers = listOperation({
  operationId: 'listTriggers',
  summary: 'List the triggers of an agent',
  tags,
  path: base,
  service: 'management',
  subject: 'svc.management.triggers.list',
  auth: 'manage',
  permission: 'view',
  params: AgentPath,
  item: Trigger,
  errors: triggerErrors,
});

export const createTrigger = operation({
  operationId: 'createTrigger',
  summary: 'Create a trigger',
  description:
    'The agent of the path must exist in the project: 404 otherwise (triggers are deleted with their agent).',
  tags,
  method: 'post',
  path: base,
  service: 'management',
  subject: 'svc.management.triggers.create',
  auth: 'manage',
  permission: 'edit',
  params: AgentPath,
  body: TriggerCreate,
  reply: { status: 201, body: TriggerReply },
  errors: triggerErrors,
});

export const getTrigger = operation({
  operationId: 'getTrigger',
  summary: 'Get a trigger',
  tags,
  method: 'get',
  path: `${base}/{id}`,
  service: 'management',
  subject: 'svc.management.triggers.get',
  auth: 'manage',
  permission: 'view',
  params: TriggerPath,
  reply: { status: 200, body: z.object({ data: Trigger }) },
  errors: triggerErrors,
});

export const updateTrigger = operation({
  operationId: 'updateTrigger',
  summary: 'Update a trigger (PATCH enabled to switch it on or off)',
  tags,
  method: 'patch',
  path: `${base}/{id}`,
  service: 'management',
  subject: 'svc.management.triggers.update',
  auth: 'manage',
  permission: 'edit',
  params: TriggerPath,
  body: TriggerUpdate,
  reply: { status: 200, body: TriggerReply },
  errors: triggerErrors,
});

export const deleteTrigger = deleteOperation({
  operationId: 'deleteTrigger',
  summary: 'Delete a trigger',
  tags,
  path: `${base}/{id}`,
  service: 'management',
  subject: 'svc.management.triggers.delete',
  auth: 'manage',
  permission: 'edit',
  params: TriggerPath,
  reply: { status: 204, description: 'Deleted' },
  errors: triggerErrors,
  addition: true,
});
