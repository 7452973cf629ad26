import type { z } from 'zod';
import { ListQuery, dataReply, listReply } from './common';
import { operation, type OperationDef } from './operation';

/**
 * The usual operations on a collection of records, declared with `operation()` and the parts they always share
 * filled in. A declaration still names its path, subject, auth, permission, params and errors; the helper's name says
 * the method, and `item` the record of the reply:
 * - `listOperation`: GET, paged by `ListQuery` (or by `query`, which extends it), 200 `{data: [item…], pagination}`;
 * - `getOperation`: GET, 200 `{data: item}`;
 * - `createOperation`: POST, 201 `{data: item}`;
 * - `updateOperation`: PATCH, 200 `{data: item}`;
 * - `deleteOperation`: DELETE, 204 with no body (`reply` gives another description of it).
 * An operation with another reply (a status of its own, an envelope with more than `data`) is declared with
 * `operation()`.
 */

/** What a record operation declares itself: everything but the method and the reply. */
type RecordDef<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType> = Omit<
  OperationDef<P, Q, B>,
  'method' | 'reply'
>;

export function listOperation<P extends z.ZodType, I extends z.ZodType, Q extends z.ZodType = typeof ListQuery>(
  def: Omit<RecordDef<P, Q, z.ZodType>, 'query' | 'body'> & { query?: Q; item: I },
) {
  const { item, query, ...rest } = def;
  // Q is ListQuery's type unless a query is given.
  return operation({
    ...rest,
    method: 'get',
    query: (query ?? ListQuery) as Q,
    reply: { status: 200, body: listReply(item) },
  });
}

export function getOperation<P extends z.ZodType, Q extends z.ZodType, I extends z.ZodType>(
  def: Omit<RecordDef<P, Q, z.ZodType>, 'body'> & { item: I },
) {
  const { item, ...rest } = def;
  return operation({ ...rest, method: 'get', reply: { status: 200, body: dataReply(item) } });
}

export function createOperation<P extends z.ZodType, B extends z.ZodType, I extends z.ZodType>(
  def: RecordDef<P, z.ZodType, B> & { body: B; item: I },
) {
  const { item, ...rest } = def;
  return operation({ ...rest, method: 'post', reply: { status: 201, body: dataReply(item) } });
}

export function updateOperation<P extends z.ZodType, B extends z.ZodType, I extends z.ZodType>(
  def: RecordDef<P, z.ZodType, B> & { body: B; item: I },
) {
  const { item, ...rest } = def;
  return operation({ ...rest, method: 'patch', reply: { status: 200, body: dataReply(item) } });
}

export function deleteOperation<P extends z.ZodType>(
  def: Omit<RecordDef<P, z.ZodType, z.ZodType>, 'body'> & { reply?: { status: 204; description: string } },
) {
  return operation({ reply: { status: 204 }, ...def, method: 'delete' });
}
