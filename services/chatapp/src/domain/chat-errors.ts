import { AppError } from '@platform/problems';
import { ChatApiError } from '../clients/chat-api';

/** Errors the chat product gives for a token that no longer works. */
export const DEAD_TOKEN_ERRORS = new Set([
  'invalid_auth',
  'token_revoked',
  'account_inactive',
  'not_authed',
  'token_expired',
]);

/** A failed chat product call as a problem: 503 when not configured, else 502 naming the chat product's error. */
export function chatProblem(err: unknown): unknown {
  if (!(err instanceof ChatApiError)) return err;
  if (err.chatError === 'not_configured') return notConfigured();
  return new AppError('bad_gateway', `The chat product answered ${err.method} with the error "${err.chatError}"`, {
    extra: { chatError: err.chatError, chatMethod: err.method },
  });
}

export function notConfigured(): AppError {
  return new AppError(
    'service_unavailable',
    'The chat-app integration is not configured (CHATAPP_API_URL, CHATAPP_AUTHORIZE_URL, CHATAPP_CLIENT_ID, CHATAPP_CLIENT_SECRET)',
  );
}

export async function orChatProblem<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw chatProblem(err);
  }
}
