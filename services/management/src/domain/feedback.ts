import {
  FeedbackCreate,
  feedbackCreated,
  pendingEvent,
  type Feedback,
  type FeedbackListQuery,
  type FeedbackUpdate,
  type ProjectScope,
} from '@platform/contracts';
import { AppError, zodFieldErrors, type FieldError } from '@platform/problems';
import { randomId } from '@platform/secrets';
import { type FeedbackRepo, toFeedback, type StoredFeedback } from '../data/feedback.repo';

export interface FeedbackDeps {
  feedback: FeedbackRepo;
}

const notFound = () => new AppError('not_found', 'Feedback not found');
const idTaken = (id: string) => `a feedback with id "${id}" already exists in this project`;

/** Stores one feedback record and its `feedback.created` event in one write. Throws a duplicate-key error for a taken id. */
/** Stores one feedback item; null when its id is taken. */
async function store(deps: FeedbackDeps, scope: ProjectScope, input: FeedbackCreate): Promise<Feedback | null> {
  const now = new Date();
  const doc: Omit<StoredFeedback, '_id'> = {
    id: input.id ?? randomId(16),
    ...scope,
    conversationId: input.conversationId,
    messageId: input.messageId ?? null,
    agentId: input.agentId ?? null,
    type: input.type,
    details: input.details ?? null,
    createdAt: now,
    updatedAt: now,
  };
  const saved = await deps.feedback.insert(doc, (feedback) => [
    pendingEvent(feedbackCreated, randomId(24), scope, { feedback }),
  ]);
  return saved && toFeedback(saved);
}

export async function addFeedback(deps: FeedbackDeps, scope: ProjectScope, input: FeedbackCreate): Promise<Feedback> {
  const id = input.id ?? randomId(16);
  const stored = await store(deps, scope, { ...input, id });
  if (!stored) throw new AppError('conflict', idTaken(id));
  return stored;
}

export interface BulkFailure {
  index: number;
  conversationId: string | null;
  message: string;
  errors: FieldError[];
}

/**
 * Checks every item on its own; stores the valid ones (each with its own event) and reports the others by index.
 * When nothing could be stored the whole request is a 422 listing every problem.
 */
export async function addFeedbackBulk(
  deps: FeedbackDeps,
  scope: ProjectScope,
  items: unknown[],
): Promise<{ data: Feedback[]; errors: Array<Omit<BulkFailure, 'errors'>> }> {
  const failures: BulkFailure[] = [];
  const valid: Array<{ index: number; input: FeedbackCreate }> = [];
  const idsInRequest = new Set<string>();
  items.forEach((item, index) => {
    const conversationId =
      typeof (item as { conversationId?: unknown })?.conversationId === 'string'
        ? (item as { conversationId: string }).conversationId
        : null;
    const parsed = FeedbackCreate.safeParse(item);
    if (!parsed.success) {
      const errors = zodFieldErrors(parsed.error, `/${index}`);
      failures.push({
        index,
        conversationId,
        message: errors.map((e) => `${e.pointer.slice(`/${index}`.length) || '/'}: ${e.detail}`).join('; '),
        errors,
      });
      return;
    }
    const id = parsed.data.id;
    if (id !== undefined && idsInRequest.has(id)) {
      const detail = `id "${id}" appears more than once in this request`;
      failures.push({
        index,
        conversationId,
        message: `/id: ${detail}`,
        errors: [{ pointer: `/${index}/id`, detail }],
      });
      return;
    }
    if (id !== undefined) idsInRequest.add(id);
    valid.push({ index, input: parsed.data });
  });

  let unexpected: unknown;
  const stored = await Promise.all(
    valid.map(async ({ index, input }) => {
      try {
        const feedback = await store(deps, scope, input);
        if (feedback) return { index, feedback };
        const detail = idTaken(input.id!);
        failures.push({
          index,
          conversationId: input.conversationId,
          message: `/id: ${detail}`,
          errors: [{ pointer: `/${index}/id`, detail }],
        });
      } catch (err) {
        unexpected ??= err;
        const detail = 'could not be stored right now; send this item again';
        failures.push({
          index,
          conversationId: input.conversationId,
          message: detail,
          errors: [{ pointer: `/${index}`, detail }],
        });
      }
      return null;
    }),
  );
  failures.sort((a, b) => a.index - b.index);
  const data = stored.filter((s) => s !== null).map((s) => s.feedback);
  // Nothing stored because the database failed: that is the server's problem (5xx), not the items'.
  if (!data.length && unexpected) throw unexpected;
  if (!data.length) {
    throw new AppError('unprocessable_entity', `No feedback item was stored: ${failures.length} item(s) are invalid`, {
      errors: failures.flatMap((f) => f.errors),
    });
  }
  return { data, errors: failures.map(({ errors: _errors, ...f }) => f) };
}

export async function findFeedback(deps: FeedbackDeps, scope: ProjectScope, id: string): Promise<Feedback> {
  const doc = await deps.feedback.findById(scope, id);
  if (!doc) throw notFound();
  return toFeedback(doc);
}

/** The records with these ids (unknown ones left out), in the order asked. */
export async function findFeedbackByIds(
  deps: FeedbackDeps,
  scope: ProjectScope,
  ids: readonly string[],
): Promise<Feedback[]> {
  const found = await Promise.all([...new Set(ids)].map((id) => deps.feedback.findById(scope, id)));
  return found.flatMap((doc) => (doc ? [toFeedback(doc)] : []));
}

export async function listFeedbackPage(deps: FeedbackDeps, scope: ProjectScope, q: FeedbackListQuery) {
  const { page, limit, ...filter } = q;
  const { rows, total } = await deps.feedback.list(scope, filter, page, limit);
  return { rows: rows.map(toFeedback), total };
}

export async function changeFeedback(
  deps: FeedbackDeps,
  scope: ProjectScope,
  id: string,
  input: FeedbackUpdate,
): Promise<Feedback> {
  if (input.type === undefined && input.details === undefined) return findFeedback(deps, scope, id);
  const set: Partial<StoredFeedback> = { updatedAt: new Date() };
  if (input.type !== undefined) set.type = input.type;
  if (input.details !== undefined) set.details = input.details;
  const updated = await deps.feedback.update(scope, id, set);
  if (!updated) throw notFound();
  return toFeedback(updated);
}

export async function removeFeedback(deps: FeedbackDeps, scope: ProjectScope, id: string): Promise<void> {
  if (!(await deps.feedback.remove(scope, id))) throw notFound();
}
