import type { AnyOperation } from './operation';
import * as apiKeys from './manage/api-keys';
import * as auth from './manage/auth';
import * as webhookDestinations from './manage/webhook-destinations';
import * as runEvents from './run/events';
import * as system from './internal/system';
import * as chatapp from './work-apps/chatapp';

/** Every module that declares operations; each exported OperationDef in them is mounted and documented. */
const modules: Array<Record<string, unknown>> = [system, auth, apiKeys, webhookDestinations, runEvents, chatapp];

function isOperation(v: unknown): v is AnyOperation {
  return typeof v === 'object' && v !== null && 'operationId' in v && 'subject' in v && 'method' in v && 'path' in v;
}

export const allOperations: AnyOperation[] = modules.flatMap((m) => Object.values(m).filter(isOperation));

const seen = new Set<string>();
for (const op of allOperations) {
  const key = `${op.method} ${op.path}`;
  if (seen.has(key) || seen.has(op.operationId)) throw new Error(`duplicate operation ${key} / ${op.operationId}`);
  seen.add(key);
  seen.add(op.operationId);
}
