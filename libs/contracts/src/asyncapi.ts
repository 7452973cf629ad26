import { z } from 'zod';
import { EVENT_SUBJECT_PREFIX, EventEnvelope, PLATFORM_EVENTS_STREAM, publishersOf, type EventDef } from './event';
import { allEvents } from './events';

/**
 * The AsyncAPI 3.0 document of every public platform event, generated from the `event({...})` declarations
 * (served at `GET /asyncapi.json`, snapshot in deploy/asyncapi.json, checked by `pnpm asyncapi:check`).
 *
 * One channel per event and version: `evt.{tenantId}.{projectId}.<name>.v<version>` on the JetStream stream
 * PLATFORM_EVENTS. The document describes the platform as the application, so every operation is a `send`.
 */

function schema(s: z.ZodType): Record<string, unknown> {
  const out = z.toJSONSchema(s, { io: 'output', unrepresentable: 'any', target: 'draft-7' }) as Record<string, unknown>;
  delete out.$schema;
  return out;
}

/** `webhook.delivery.succeeded` v1 → `webhookDeliverySucceededV1` (channel, message and operation ids). */
export function eventKey(def: EventDef): string {
  const camel = def.name.replace(/[.-]([a-z])/g, (_m, c: string) => c.toUpperCase());
  return `${camel}V${def.version}`;
}

function envelopeSchema(def: EventDef): Record<string, unknown> {
  const env = schema(EventEnvelope) as { properties: Record<string, Record<string, unknown>>; required?: string[] };
  return {
    ...env,
    properties: {
      ...env.properties,
      type: { ...env.properties.type, const: def.name },
      version: { ...env.properties.version, const: def.version },
      data: schema(def.payload),
    },
    required: [...new Set([...(env.required ?? []), 'data'])],
  };
}

export const EVENT_SUBJECT_RULES = [
  `Subjects are \`${EVENT_SUBJECT_PREFIX}.<tenantId>.<projectId>.<name>.v<version>\` on the JetStream stream ${PLATFORM_EVENTS_STREAM}; \`<name>\` is \`<resource>.<action>\` (it may have more dotted parts, e.g. \`webhook.delivery.failed\`).`,
  'Tenant and project ids are subject tokens: any character outside [A-Za-z0-9_-] is %-encoded as %XX (so a `.` in an id is `%2E`).',
  `One tenant: \`${EVENT_SUBJECT_PREFIX}.<tenantId>.>\`. One project: \`${EVENT_SUBJECT_PREFIX}.<tenantId>.<projectId>.>\`. One event type everywhere: \`${EVENT_SUBJECT_PREFIX}.*.*.event.created.v1\`.`,
  'Versioning: within a version, payload changes are additive only (new optional fields; consumers must ignore fields they do not know). A breaking change publishes under a new subject `.v<N+1>`, next to the old one for a deprecation period.',
  'Every message is an envelope `{id, type, version, tenantId, projectId, occurredAt, data}`; `id` is also the Nats-Msg-Id, so redeliveries and republishes carry the same id: consumers de-duplicate by it.',
];

/** How a consumer authenticates (AsyncAPI 3 has no scheme for NATS JWTs: `userPassword` is the nearest, described). */
export const CONSUMER_AUTH = [
  'Every connection authenticates with a NATS user credential (decentralized JWT authentication; anonymous clients are refused).',
  `An operator issues a tenant's (or project's) consumer credential with \`pnpm nats:credentials consumer --tenant T [--project P] [--durable NAME] [--expires-days N] --out FILE\`: a standard .creds file (user JWT and nkey seed) that the \`nats\` CLI (\`--creds\`) and nats.js (\`credsAuthenticator\`) accept.`,
  `It may create and read only its own durable consumers (the names it was issued with) on ${PLATFORM_EVENTS_STREAM}, with a filter inside \`${EVENT_SUBJECT_PREFIX}.<tenant>.>\` (or \`${EVENT_SUBJECT_PREFIX}.<tenant>.<project>.>\`), and read replies on its own inbox prefix (\`_INBOX_<credential name>\`, printed by the command; set it as the client's inboxPrefix). It publishes nothing else: every other subject is a permissions violation.`,
  'Revocation: `pnpm nats:credentials revoke --creds FILE` (or `--user UKEY`), then reload the server; its connections are closed and the credential is refused from then on.',
].join(' ');

export function buildAsyncApi(
  events: EventDef[] = allEvents,
  server: { host: string; description?: string } = { host: 'localhost:4222' },
) {
  const channels: Record<string, unknown> = {};
  const operations: Record<string, unknown> = {};
  const messages: Record<string, unknown> = {};
  for (const def of events) {
    const key = eventKey(def);
    messages[key] = {
      name: def.name,
      title: `${def.name} v${def.version}`,
      summary: def.description,
      contentType: 'application/json',
      headers: {
        type: 'object',
        properties: { 'Nats-Msg-Id': { type: 'string', description: 'The event id (JetStream de-duplication)' } },
      },
      payload: envelopeSchema(def),
      'x-publisher': def.publisher,
      ...(def.alsoPublishedBy ? { 'x-also-published-by': [...def.alsoPublishedBy] } : {}),
      ...(def.webhookFamily ? { 'x-webhook-family': def.webhookFamily } : {}),
    };
    channels[key] = {
      address: `${EVENT_SUBJECT_PREFIX}.{tenantId}.{projectId}.${def.name}.v${def.version}`,
      title: `${def.name} v${def.version}`,
      description: def.description,
      messages: { [key]: { $ref: `#/components/messages/${key}` } },
      parameters: {
        tenantId: {
          description:
            'The tenant id as a subject token (%-encoded outside [A-Za-z0-9_-]); `*` in a filter for every tenant',
        },
        projectId: { description: 'The project id as a subject token; `*` in a filter for every project' },
      },
      servers: [{ $ref: '#/servers/nats' }],
      'x-stream': PLATFORM_EVENTS_STREAM,
    };
    operations[`publish${key[0]!.toUpperCase()}${key.slice(1)}`] = {
      action: 'send',
      channel: { $ref: `#/channels/${key}` },
      summary: `${publishersOf(def).join(', ')} publish${def.alsoPublishedBy ? '' : 'es'} ${def.name} v${def.version}`,
      messages: [{ $ref: `#/channels/${key}/messages/${key}` }],
      'x-publisher': def.publisher,
    };
  }
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'Agent Platform events',
      version: '0.1.0',
      description: [
        'Events the platform publishes on NATS JetStream for internal consumers. Generated from the `event({...})` declarations in libs/contracts.',
        '',
        ...EVENT_SUBJECT_RULES.map((r) => `- ${r}`),
      ].join('\n'),
    },
    defaultContentType: 'application/json',
    servers: {
      nats: {
        host: server.host,
        protocol: 'nats',
        description: server.description ?? 'The platform NATS server (JetStream enabled)',
        security: [{ $ref: '#/components/securitySchemes/consumerCredential' }],
      },
    },
    channels,
    operations,
    components: {
      messages,
      securitySchemes: {
        consumerCredential: {
          type: 'userPassword',
          description: CONSUMER_AUTH,
        },
      },
    },
  };
}
