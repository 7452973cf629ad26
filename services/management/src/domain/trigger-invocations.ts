import {
  iso,
  TRIGGER_BODY_LIMIT_BYTES,
  type AgentPath,
  type SignatureVerification,
  type TriggerInvocation,
  type TriggerInvocationVerdicts,
} from '@platform/contracts';
import { AppError } from '@platform/problems';
import { randomId, SealedValueError, type SecretBox } from '@platform/secrets';
import { getLogger } from '@platform/logger';
import { renderTemplate, valueProblems } from './json-schema';
import type { CredentialRepo } from '../data/credential.repo';
import { type CredentialStoreEntryRepo, credentialEntrySealed } from '../data/credential-store-entry.repo';
import type { StoredTrigger, TriggerRepo } from '../data/trigger.repo';
import {
  type StoredDispatch,
  type StoredTriggerInvocation,
  invocationKey,
  type TriggerInvocationRepo,
  type TriggerScope,
} from '../data/trigger-invocation.repo';
import type { TriggerRateStore } from '../data/trigger-rate.store';
import { dispatchesOf, type TriggerDispatcher } from './trigger-dispatcher';
import {
  checkAuthentication,
  checkInput,
  checkSignature,
  headerOf,
  transformInput,
  type WebhookCall,
} from './webhook-checks';

const log = getLogger('management.trigger-invocations');

export interface TriggerInvocationDeps {
  triggers: TriggerRepo;
  invocations: TriggerInvocationRepo;
  credentials: CredentialRepo;
  entries: CredentialStoreEntryRepo;
  box: SecretBox;
  pepper: string;
  rate: TriggerRateStore;
  dispatcher: TriggerDispatcher;
  /** Webhook calls per minute of a trigger without its own `rateLimitPerMinute`. */
  defaultRatePerMinute: number;
}

const triggerNotFound = () => new AppError('not_found', 'Trigger not found');
const parseJson = <T>(text: string | null | undefined): T | null => (text ? (JSON.parse(text) as T) : null);
const MAX_DELIVERY_ID = 256;

/** The run-as users in order (runAsUserId first), each once; one request without a user when there are none. */
function runAsUsers(t: StoredTrigger): Array<string | null> {
  const users = [...new Set([...(t.runAsUserId ? [t.runAsUserId] : []), ...(t.runAsUserIds ?? [])])];
  return users.length ? users : [null];
}

function plannedDispatches(
  id: string,
  users: Array<string | null>,
  delayMs: number,
  start: Date,
): Record<string, StoredDispatch> {
  return Object.fromEntries(
    users.map((userId, index) => [
      `d${index}`,
      {
        index,
        userId,
        state: 'pending' as const,
        eventId: `${id}-${index}`,
        dueAt: new Date(start.getTime() + index * delayMs),
        dispatchedAt: null,
      },
    ]),
  );
}

export function toTriggerInvocation(d: StoredTriggerInvocation): TriggerInvocation {
  const dispatches = dispatchesOf(d);
  const status =
    d.status === 'rejected' ? 'rejected' : dispatches.every((x) => x.state === 'dispatched') ? 'dispatched' : 'pending';
  return {
    id: d.id,
    triggerId: d.triggerId,
    agentId: d.agentId,
    status,
    verdicts: d.verdicts as TriggerInvocationVerdicts,
    error: d.error ?? null,
    deliveryId: d.deliveryId ?? null,
    rerunOf: d.rerunOf ?? null,
    message: d.message ?? null,
    input: parseJson(d.inputJson),
    bodyBytes: d.bodyBytes,
    dispatches: dispatches.map((x) => ({
      userId: x.userId,
      state: x.state,
      eventId: x.eventId,
      dueAt: iso(x.dueAt)!,
      dispatchedAt: iso(x.dispatchedAt) ?? null,
    })),
    receivedAt: iso(d.receivedAt)!,
    // From the requests themselves: `dispatchPending` and the stored completedAt are cleared in a later write.
    completedAt:
      status === 'dispatched' && dispatches.length
        ? new Date(Math.max(...dispatches.map((x) => new Date(x.dispatchedAt!).getTime()))).toISOString()
        : null,
  };
}

/** The signing secret: the value the trigger's credential names in the memory store (`retrievalParams.key`). */
async function signingSecret(
  deps: TriggerInvocationDeps,
  scope: AgentPath,
  credentialId: string | null | undefined,
): Promise<string> {
  const unavailable = () =>
    new AppError(
      'service_unavailable',
      "The trigger's signing secret cannot be read; its owner must fix the credential",
      { headers: { 'retry-after': '60' } },
    );
  if (!credentialId) throw unavailable();
  const credential = await deps.credentials.findById(scope, credentialId);
  const key = parseJson<{ key?: unknown }>(credential?.retrievalParamsJson)?.key;
  if (!credential || typeof key !== 'string') throw unavailable();
  const entry = await deps.entries.find(scope, credential.credentialStoreId, key);
  if (!entry) throw unavailable();
  let opened: string;
  try {
    opened = deps.box.open(entry.sealed, credentialEntrySealed.bindingOf(entry));
  } catch (err) {
    if (!(err instanceof SealedValueError)) throw err;
    log.error({ credentialId, reason: err.reason, err: err.message }, "the trigger's signing secret does not open");
    throw unavailable();
  }
  const value = (JSON.parse(opened) as { value?: unknown }).value;
  if (typeof value !== 'string' || !value) throw unavailable();
  return value;
}

/** Per-trigger fixed window of one minute, counted in Redis; fails open (logged) when Redis is away. */
async function admitCall(deps: TriggerInvocationDeps, t: StoredTrigger): Promise<void> {
  const limit = t.rateLimitPerMinute ?? deps.defaultRatePerMinute;
  let hit: { count: number; msLeft: number };
  try {
    hit = await deps.rate.hit(t._id, 60_000);
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'trigger rate-limit store unreachable; letting the call through');
    return;
  }
  if (hit.count > limit) {
    const retryAfter = Math.max(1, Math.ceil(hit.msLeft / 1000));
    throw new AppError(
      'too_many_requests',
      `This trigger accepts at most ${limit} calls a minute; retry after ${retryAfter} s`,
      { headers: { 'retry-after': String(retryAfter) } },
    );
  }
}

/** The trigger's own body limit (bodyLimitBytes, else the platform maximum the gateway already applied): 413 above it. */
function admitBody(t: StoredTrigger, call: WebhookCall): void {
  const limit = t.bodyLimitBytes ?? TRIGGER_BODY_LIMIT_BYTES;
  if (call.rawBody.length > limit) {
    throw new AppError(
      'payload_too_large',
      `This trigger accepts bodies of at most ${limit} bytes; this one has ${call.rawBody.length}`,
    );
  }
}

interface Accepted {
  invocationId: string;
  duplicate: boolean;
}

/**
 * A webhook call: 404 for an unknown or disabled trigger; the rate limit; the body limit; then authentication, signature and input
 * schema in that order, each verdict recorded. A call that fails a check is stored as `rejected` (with the answer the
 * caller got) and answered with that problem. An accepted call is stored with all its requests before the 202.
 */
export async function acceptWebhookCall(
  deps: TriggerInvocationDeps,
  scope: AgentPath & { id: string },
  call: WebhookCall,
): Promise<Accepted> {
  const trigger = await deps.triggers.findById(scope, scope.id);
  if (!trigger || !trigger.enabled) throw triggerNotFound();
  await admitCall(deps, trigger);
  admitBody(trigger, call);
  const ts: TriggerScope = {
    tenantId: scope.tenantId,
    projectId: scope.projectId,
    agentId: scope.agentId,
    triggerId: trigger.id,
  };
  const verdicts: TriggerInvocationVerdicts = { authentication: 'skipped', signature: 'skipped', schema: 'skipped' };
  const receivedAt = new Date();
  const base = {
    tenantId: ts.tenantId,
    projectId: ts.projectId,
    agentId: ts.agentId,
    triggerId: ts.triggerId,
    bodyBytes: call.rawBody.length,
    rerunOf: null,
    receivedAt,
    completedAt: null,
  };

  const check = async (verdict: keyof TriggerInvocationVerdicts, run: () => void | Promise<void>) => {
    try {
      await run();
      verdicts[verdict] = 'passed';
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) throw err;
      verdicts[verdict] = 'failed';
      const id = randomId(16);
      await deps.invocations.insert({
        _id: invocationKey(ts, { id }),
        id,
        ...base,
        status: 'rejected',
        verdicts: { ...verdicts },
        error: { status: err.status, detail: err.message },
        deliveryId: deliveryIdOf(trigger, call),
        message: null,
        inputJson: null,
        dispatches: {},
      });
      throw err;
    }
  };

  if (trigger.authentication?.headers.length)
    await check('authentication', () => checkAuthentication(call, trigger.authentication!.headers, deps.pepper));
  const spec = parseJson<SignatureVerification>(trigger.signatureVerificationJson);
  if (spec) {
    const secret = await signingSecret(deps, scope, trigger.signingSecretCredentialReferenceId);
    await check('signature', () => checkSignature(call, spec, secret));
  }
  const schema = parseJson<Record<string, unknown>>(trigger.inputSchemaJson);
  const body = call.body ?? {};
  if (schema) await check('schema', () => checkInput(valueProblems(schema, body)));
  let input: unknown;
  await check('schema', () => {
    input = transformInput(body, parseJson(trigger.outputTransformJson));
  });
  if (!schema) verdicts.schema = 'skipped';
  const message = trigger.messageTemplate
    ? renderTemplate(trigger.messageTemplate, input)
    : JSON.stringify(input ?? null);

  const deliveryId = deliveryIdOf(trigger, call);
  const id = randomId(16);
  const doc: StoredTriggerInvocation = {
    _id: invocationKey(ts, deliveryId ? { deliveryId } : { id }),
    id,
    ...base,
    status: 'accepted',
    verdicts,
    error: null,
    deliveryId,
    message,
    inputJson: JSON.stringify(input ?? null),
    dispatches: plannedDispatches(id, runAsUsers(trigger), trigger.dispatchDelayMs ?? 0, receivedAt),
    dispatchPending: true,
  };
  const saved = await deps.invocations.insert(doc);
  if (!saved) {
    const first = await deps.invocations.findByKey(doc._id);
    if (!first) throw new AppError('conflict', 'The same delivery is being accepted concurrently; retry');
    return { invocationId: first.id, duplicate: true };
  }
  deps.dispatcher.schedule(saved);
  return { invocationId: id, duplicate: false };
}

/** The provider's delivery id, when the trigger names its header and the call sends it. */
function deliveryIdOf(t: StoredTrigger, call: WebhookCall): string | null {
  if (!t.deliveryIdHeader) return null;
  const value = headerOf(call, t.deliveryIdHeader)?.trim();
  return value ? value.slice(0, MAX_DELIVERY_ID) : null;
}

async function existingTrigger(deps: TriggerInvocationDeps, scope: AgentPath, id: string): Promise<StoredTrigger> {
  const trigger = await deps.triggers.findById(scope, id);
  if (!trigger) throw triggerNotFound();
  return trigger;
}

export async function listInvocationsPage(
  deps: TriggerInvocationDeps,
  scope: AgentPath & { id: string },
  page: number,
  limit: number,
) {
  await existingTrigger(deps, scope, scope.id);
  const { rows, total } = await deps.invocations.list({ ...scope, triggerId: scope.id }, page, limit);
  return { rows: rows.map(toTriggerInvocation), total };
}

async function storedInvocation(
  deps: TriggerInvocationDeps,
  scope: AgentPath & { id: string; invocationId: string },
): Promise<StoredTriggerInvocation> {
  const found = await deps.invocations.findById({ ...scope, triggerId: scope.id }, scope.invocationId);
  if (!found) throw new AppError('not_found', 'Trigger invocation not found');
  return found;
}

export async function findInvocation(
  deps: TriggerInvocationDeps,
  scope: AgentPath & { id: string; invocationId: string },
): Promise<TriggerInvocation> {
  await existingTrigger(deps, scope, scope.id);
  return toTriggerInvocation(await storedInvocation(deps, scope));
}

/**
 * A new invocation with the input and message of an accepted one (the checks are not run again: the original
 * passed them), dispatched to the trigger's current run-as users with its current dispatchDelayMs.
 */
export async function rerunInvocation(
  deps: TriggerInvocationDeps,
  scope: AgentPath & { id: string; invocationId: string },
): Promise<TriggerInvocation> {
  const trigger = await existingTrigger(deps, scope, scope.id);
  const original = await storedInvocation(deps, scope);
  if (original.status === 'rejected')
    throw new AppError('conflict', 'A rejected invocation cannot be rerun: nothing was accepted');
  if (!trigger.enabled) throw new AppError('conflict', 'The trigger is disabled; enable it to rerun its invocations');
  const ts: TriggerScope = { ...scope, triggerId: trigger.id };
  const id = randomId(16);
  const receivedAt = new Date();
  const doc: StoredTriggerInvocation = {
    _id: invocationKey(ts, { id }),
    id,
    tenantId: ts.tenantId,
    projectId: ts.projectId,
    agentId: ts.agentId,
    triggerId: ts.triggerId,
    status: 'accepted',
    verdicts: original.verdicts,
    error: null,
    deliveryId: null,
    rerunOf: original.id,
    message: original.message ?? null,
    inputJson: original.inputJson ?? null,
    bodyBytes: original.bodyBytes,
    dispatches: plannedDispatches(id, runAsUsers(trigger), trigger.dispatchDelayMs ?? 0, receivedAt),
    dispatchPending: true,
    receivedAt,
    completedAt: null,
  };
  await deps.invocations.insert(doc);
  deps.dispatcher.schedule(doc);
  return toTriggerInvocation(doc);
}
