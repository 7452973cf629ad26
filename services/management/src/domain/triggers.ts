import {
  WEAK_SIGNATURE_ALGORITHMS,
  type AgentPath,
  type Principal,
  type SignatureVerification,
  type Trigger,
  type TriggerCreate,
  type TriggerUpdate,
} from '@platform/contracts';
import { AppError, type FieldError } from '@platform/problems';
import { unprocessable } from './unprocessable';
import { iso } from '@platform/contracts';
import { keyedHash, randomId } from '@platform/secrets';
import type { TriggerRepo, StoredAuthHeader, StoredTrigger } from '../data/trigger.repo';
import type { CredentialRepo } from '../data/credential.repo';
import { jsonSchemaProblems, undeclaredPlaceholders } from './json-schema';
import { principalUserId } from './credentials';
import { transformProblems } from './webhook-checks';
import type { AgentLiveness } from './agents';

export interface TriggerDeps {
  triggers: TriggerRepo;
  credentials: CredentialRepo;
  /** Key of the keyed hash under which authentication header values are stored. */
  pepper: string;
  /** Whether the trigger's agent is live, before and after the trigger is written. */
  agents: AgentLiveness;
}

export interface TriggerContext {
  principal: Principal;
  /** Public base URL of the API (PUBLIC_BASE_URL, else the request's own). */
  baseUrl?: string;
}

const notFound = () => new AppError('not_found', 'Trigger not found');
const agentNotFound = (agentId: string) =>
  new AppError('not_found', `Agent "${agentId}" not found: create the agent before its triggers`);

const parseJson = <T>(text: string | null | undefined): T | null => (text ? (JSON.parse(text) as T) : null);

export function webhookUrl(
  baseUrl: string | undefined,
  d: Pick<StoredTrigger, 'tenantId' | 'projectId' | 'agentId' | 'id'>,
): string {
  const base = (baseUrl ?? '').replace(/\/+$/, '');
  const seg = encodeURIComponent;
  return `${base}/run/tenants/${seg(d.tenantId)}/projects/${seg(d.projectId)}/agents/${seg(d.agentId)}/triggers/${seg(d.id)}`;
}

export function toTrigger(d: StoredTrigger, baseUrl: string | undefined): Trigger {
  const users = new Set([...(d.runAsUserIds ?? []), ...(d.runAsUserId ? [d.runAsUserId] : [])]);
  return {
    id: d.id,
    name: d.name,
    description: d.description ?? null,
    enabled: d.enabled,
    dispatchDelayMs: d.dispatchDelayMs ?? 0,
    messageTemplate: d.messageTemplate ?? null,
    inputSchema: parseJson(d.inputSchemaJson),
    outputTransform: parseJson(d.outputTransformJson),
    runAsUserId: d.runAsUserId ?? null,
    runAsUserIds: d.runAsUserIds ?? [],
    createdBy: d.createdBy ?? null,
    authentication: d.authentication ? { headers: d.authentication.headers.map((h) => ({ name: h.name })) } : null,
    signingSecretCredentialReferenceId: d.signingSecretCredentialReferenceId ?? null,
    signatureVerification: parseJson(d.signatureVerificationJson),
    deliveryIdHeader: d.deliveryIdHeader ?? null,
    rateLimitPerMinute: d.rateLimitPerMinute ?? null,
    bodyLimitBytes: d.bodyLimitBytes ?? null,
    createdAt: iso(d.createdAt)!,
    updatedAt: iso(d.updatedAt)!,
    userCount: users.size,
    webhookUrl: webhookUrl(baseUrl, d),
  };
}

/** Checks of a trigger's whole state that the request schema cannot make; every problem is collected. */
async function assertConsistent(deps: TriggerDeps, scope: AgentPath, state: TriggerState): Promise<void> {
  const errors: FieldError[] = [];
  if (state.inputSchema) errors.push(...jsonSchemaProblems(state.inputSchema, '/inputSchema'));
  errors.push(...transformProblems(state.outputTransform));
  if (state.signatureVerification && !state.signingSecretCredentialReferenceId) {
    errors.push({
      pointer: '/signingSecretCredentialReferenceId',
      detail: 'signatureVerification needs a signing secret: name the credential that holds it',
    });
  }
  if (state.signingSecretCredentialReferenceId && state.signingSecretChanged) {
    const found = await deps.credentials.findById(scope, state.signingSecretCredentialReferenceId);
    if (!found)
      errors.push({
        pointer: '/signingSecretCredentialReferenceId',
        detail: `no credential "${state.signingSecretCredentialReferenceId}" in this project`,
      });
  }
  if (errors.length) throw unprocessable(errors);
}

/**
 * A signed component that looks like the provider's timestamp (a header named like one, or a `t=` regex as in
 * Stripe-style headers) when none is marked `timestamp: true`; undefined otherwise.
 */
function unmarkedTimestamp(spec: SignatureVerification | null): string | undefined {
  if (!spec || spec.signedComponents.some((c) => c.timestamp)) return undefined;
  const found = spec.signedComponents.find(
    (c) => c.source !== 'literal' && (/timestamp/i.test(c.key ?? '') || /(^|[^A-Za-z])t=/.test(c.regex ?? '')),
  );
  return found ? `${found.source} ${found.key ?? ''}`.trim() : undefined;
}

/** Things that work but deserve attention; answered as `warning`, never an error. */
function warningsOf(state: TriggerState): string | undefined {
  const warnings: string[] = [];
  if (state.messageTemplate && state.inputSchema) {
    const unknown = undeclaredPlaceholders(state.messageTemplate, state.inputSchema);
    if (unknown.length) {
      warnings.push(
        `messageTemplate uses placeholders that inputSchema.properties does not declare: ${unknown.map((n) => `{{${n}}}`).join(', ')}`,
      );
    }
  }
  const algorithm = state.signatureVerification?.algorithm;
  if (algorithm && WEAK_SIGNATURE_ALGORITHMS.includes(algorithm)) {
    warnings.push(`signatureVerification.algorithm ${algorithm} is weak; prefer sha256`);
  }
  const unmarked = unmarkedTimestamp(state.signatureVerification);
  if (unmarked) {
    warnings.push(
      `signatureVerification signs what looks like a timestamp (${unmarked}) but no signed component is marked \`timestamp: true\`: an old signed call can be replayed`,
    );
  }
  if (state.userCount > 0 && !state.hasAuthentication && !state.signatureVerification) {
    warnings.push(
      'the trigger runs as users but has neither authentication nor signatureVerification: anyone who knows its webhookUrl can run it',
    );
  }
  return warnings.length ? warnings.join('; ') : undefined;
}

interface TriggerState {
  inputSchema: Record<string, unknown> | null;
  outputTransform: { jmespath?: string; objectTransformation?: Record<string, string> } | null;
  messageTemplate: string | null;
  signatureVerification: SignatureVerification | null;
  signingSecretCredentialReferenceId: string | null;
  signingSecretChanged: boolean;
  hasAuthentication: boolean;
  userCount: number;
}

function stateOf(d: Omit<StoredTrigger, '_id'>, signingSecretChanged: boolean): TriggerState {
  return {
    inputSchema: parseJson(d.inputSchemaJson),
    outputTransform: parseJson(d.outputTransformJson),
    messageTemplate: d.messageTemplate ?? null,
    signatureVerification: parseJson(d.signatureVerificationJson),
    signingSecretCredentialReferenceId: d.signingSecretCredentialReferenceId ?? null,
    signingSecretChanged,
    hasAuthentication: Boolean(d.authentication?.headers.length),
    userCount: new Set([...d.runAsUserIds, ...(d.runAsUserId ? [d.runAsUserId] : [])]).size,
  };
}

const hashHeader = (pepper: string, h: { name: string; value: string }): StoredAuthHeader => ({
  name: h.name,
  valueHash: keyedHash(pepper, h.value),
});

export async function addTrigger(
  deps: TriggerDeps,
  scope: AgentPath,
  input: TriggerCreate,
  ctx: TriggerContext,
): Promise<{ trigger: Trigger; warning?: string }> {
  const now = new Date();
  const headers = input.authentication?.headers ?? [];
  const doc: Omit<StoredTrigger, '_id'> = {
    id: input.id ?? randomId(16),
    tenantId: scope.tenantId,
    projectId: scope.projectId,
    agentId: scope.agentId,
    name: input.name,
    description: input.description ?? null,
    enabled: input.enabled ?? true,
    dispatchDelayMs: input.dispatchDelayMs ?? 0,
    messageTemplate: input.messageTemplate ?? null,
    inputSchemaJson: input.inputSchema ? JSON.stringify(input.inputSchema) : null,
    outputTransformJson: input.outputTransform ? JSON.stringify(input.outputTransform) : null,
    runAsUserId: input.runAsUserId ?? null,
    runAsUserIds: [...new Set(input.runAsUserIds ?? [])],
    createdBy: input.createdBy ?? principalUserId(ctx.principal),
    authentication: headers.length ? { headers: headers.map((h) => hashHeader(deps.pepper, h)) } : null,
    signingSecretCredentialReferenceId: input.signingSecretCredentialReferenceId ?? null,
    signatureVerificationJson: input.signatureVerification ? JSON.stringify(input.signatureVerification) : null,
    deliveryIdHeader: input.deliveryIdHeader ?? null,
    rateLimitPerMinute: input.rateLimitPerMinute ?? null,
    bodyLimitBytes: input.bodyLimitBytes ?? null,
    revision: 1,
    createdAt: input.createdAt ? new Date(input.createdAt) : now,
    updatedAt: input.updatedAt ? new Date(input.updatedAt) : now,
  };
  const state = stateOf(doc, true);
  if (!(await deps.agents.seenLive(scope))) throw agentNotFound(scope.agentId);
  await assertConsistent(deps, scope, state);
  const saved = await deps.triggers.insert(doc);
  if (!saved) throw new AppError('conflict', `A trigger with id "${doc.id}" already exists for this agent`);
  // The agent was deleted between the check and the insert: its cascade may have run before the insert, so the
  // trigger is taken back rather than left dangling (docs/management.md, "Deleting an agent").
  if (!(await deps.agents.isLive(scope))) {
    await deps.triggers.remove(scope, doc.id);
    throw agentNotFound(scope.agentId);
  }
  return { trigger: toTrigger(saved, ctx.baseUrl), warning: warningsOf(state) };
}

export async function findTrigger(
  deps: TriggerDeps,
  scope: AgentPath,
  id: string,
  ctx: TriggerContext,
): Promise<Trigger> {
  const doc = await deps.triggers.findById(scope, id);
  if (!doc) throw notFound();
  return toTrigger(doc, ctx.baseUrl);
}

export async function listTriggersPage(
  deps: TriggerDeps,
  scope: AgentPath,
  page: number,
  limit: number,
  ctx: TriggerContext,
) {
  const { rows, total } = await deps.triggers.list(scope, page, limit);
  return { rows: rows.map((d) => toTrigger(d, ctx.baseUrl)), total };
}

/** New stored authentication from an update: fresh values are hashed, `keepExisting` keeps the stored hash. */
function nextAuthentication(
  pepper: string,
  current: StoredTrigger,
  input: NonNullable<TriggerUpdate['authentication']>,
): StoredTrigger['authentication'] {
  const errors: FieldError[] = [];
  const stored = new Map((current.authentication?.headers ?? []).map((h) => [h.name.toLowerCase(), h]));
  const headers = input.headers.flatMap((h, i): StoredAuthHeader[] => {
    if (h.value !== undefined) return [hashHeader(pepper, { name: h.name, value: h.value })];
    const kept = stored.get(h.name.toLowerCase());
    if (!kept) {
      errors.push({
        pointer: `/authentication/headers/${i}/keepExisting`,
        detail: `there is no stored header "${h.name}" to keep; send its value`,
      });
      return [];
    }
    return [{ name: h.name, valueHash: kept.valueHash }];
  });
  if (errors.length) throw unprocessable(errors);
  return headers.length ? { headers } : null;
}

export async function changeTrigger(
  deps: TriggerDeps,
  scope: AgentPath,
  id: string,
  input: TriggerUpdate,
  ctx: TriggerContext,
): Promise<{ trigger: Trigger; warning?: string }> {
  if (input.id !== undefined && input.id !== id)
    throw unprocessable([{ pointer: '/id', detail: 'ids cannot be changed; create a new trigger instead' }]);
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = await deps.triggers.findById(scope, id);
    if (!current) throw notFound();
    const set: Partial<StoredTrigger> = { updatedAt: input.updatedAt ? new Date(input.updatedAt) : new Date() };
    if (input.name !== undefined) set.name = input.name;
    if (input.description !== undefined) set.description = input.description;
    if (input.enabled !== undefined) set.enabled = input.enabled;
    if (input.dispatchDelayMs !== undefined) set.dispatchDelayMs = input.dispatchDelayMs;
    if (input.messageTemplate !== undefined) set.messageTemplate = input.messageTemplate;
    if (input.inputSchema !== undefined)
      set.inputSchemaJson = input.inputSchema ? JSON.stringify(input.inputSchema) : null;
    if (input.outputTransform !== undefined)
      set.outputTransformJson = input.outputTransform ? JSON.stringify(input.outputTransform) : null;
    if (input.runAsUserId !== undefined) set.runAsUserId = input.runAsUserId;
    if (input.runAsUserIds !== undefined) set.runAsUserIds = [...new Set(input.runAsUserIds)];
    if (input.createdBy !== undefined) set.createdBy = input.createdBy;
    if (input.createdAt !== undefined) set.createdAt = new Date(input.createdAt);
    if (input.authentication !== undefined)
      set.authentication = input.authentication ? nextAuthentication(deps.pepper, current, input.authentication) : null;
    if (input.signingSecretCredentialReferenceId !== undefined)
      set.signingSecretCredentialReferenceId = input.signingSecretCredentialReferenceId;
    if (input.signatureVerification !== undefined)
      set.signatureVerificationJson = input.signatureVerification ? JSON.stringify(input.signatureVerification) : null;
    if (input.deliveryIdHeader !== undefined) set.deliveryIdHeader = input.deliveryIdHeader;
    if (input.rateLimitPerMinute !== undefined) set.rateLimitPerMinute = input.rateLimitPerMinute;
    if (input.bodyLimitBytes !== undefined) set.bodyLimitBytes = input.bodyLimitBytes;
    const next = { ...current, ...set };
    const state = stateOf(next, input.signingSecretCredentialReferenceId !== undefined);
    await assertConsistent(deps, scope, state);
    const updated = await deps.triggers.update(current, set);
    if (updated) return { trigger: toTrigger(updated, ctx.baseUrl), warning: warningsOf(state) };
  }
  throw new AppError('conflict', 'The trigger changed concurrently; retry');
}

export async function removeTrigger(deps: TriggerDeps, scope: AgentPath, id: string): Promise<void> {
  if (!(await deps.triggers.remove(scope, id))) throw notFound();
}
