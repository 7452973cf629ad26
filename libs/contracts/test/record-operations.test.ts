import { z } from 'zod';
import { IdPath, ListQuery, ProjectPath, dataReply, listReply, operation, type AnyOperation } from '../src';
import {
  createOperation,
  deleteOperation,
  getOperation,
  listOperation,
  updateOperation,
} from '../src/record-operations';

/** A declaration with its schemas as JSON Schema, so that two declarations built apart compare by what they say. */
function said(op: AnyOperation) {
  const json = (s: z.ZodType | undefined) =>
    s ? z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) : undefined;
  return {
    ...op,
    params: json(op.params),
    query: json(op.query),
    body: json(op.body),
    reply: { ...op.reply, body: json(op.reply.body) },
  };
}

const Thing = z.object({ id: z.string(), name: z.string() });
const ThingCreate = z.strictObject({ name: z.string() });
const path = '/manage/tenants/{tenantId}/projects/{projectId}/things';
const def = (operationId: string, subject: string) => ({
  operationId,
  summary: 'Things',
  tags: ['Things'],
  service: 'management' as const,
  subject: `svc.management.things.${subject}`,
  auth: 'manage' as const,
  errors: [400, 401, 403, 404, 500],
});

test('each record-operation helper declares what operation() declares with the method, query and reply written out', () => {
  const pairs: Array<[AnyOperation, AnyOperation]> = [
    [
      listOperation({ ...def('listThings', 'list'), path, params: ProjectPath, item: Thing }),
      operation({
        ...def('listThings', 'list'),
        method: 'get',
        path,
        params: ProjectPath,
        query: ListQuery,
        reply: { status: 200, body: listReply(Thing) },
      }),
    ],
    [
      listOperation({
        ...def('listThings', 'list'),
        path,
        params: ProjectPath,
        query: ListQuery.extend({ name: z.string().optional() }),
        item: Thing,
      }),
      operation({
        ...def('listThings', 'list'),
        method: 'get',
        path,
        params: ProjectPath,
        query: ListQuery.extend({ name: z.string().optional() }),
        reply: { status: 200, body: listReply(Thing) },
      }),
    ],
    [
      getOperation({ ...def('getThing', 'get'), path: `${path}/{id}`, params: IdPath, item: Thing }),
      operation({
        ...def('getThing', 'get'),
        method: 'get',
        path: `${path}/{id}`,
        params: IdPath,
        reply: { status: 200, body: dataReply(Thing) },
      }),
    ],
    [
      createOperation({ ...def('createThing', 'create'), path, params: ProjectPath, body: ThingCreate, item: Thing }),
      operation({
        ...def('createThing', 'create'),
        method: 'post',
        path,
        params: ProjectPath,
        body: ThingCreate,
        reply: { status: 201, body: dataReply(Thing) },
      }),
    ],
    [
      updateOperation({
        ...def('updateThing', 'update'),
        path: `${path}/{id}`,
        params: IdPath,
        body: ThingCreate,
        item: Thing,
      }),
      operation({
        ...def('updateThing', 'update'),
        method: 'patch',
        path: `${path}/{id}`,
        params: IdPath,
        body: ThingCreate,
        reply: { status: 200, body: dataReply(Thing) },
      }),
    ],
    [
      deleteOperation({ ...def('deleteThing', 'delete'), path: `${path}/{id}`, params: IdPath }),
      operation({
        ...def('deleteThing', 'delete'),
        method: 'delete',
        path: `${path}/{id}`,
        params: IdPath,
        reply: { status: 204 },
      }),
    ],
    [
      deleteOperation({
        ...def('deleteThing', 'delete'),
        path: `${path}/{id}`,
        params: IdPath,
        reply: { status: 204, description: 'Deleted' },
      }),
      operation({
        ...def('deleteThing', 'delete'),
        method: 'delete',
        path: `${path}/{id}`,
        params: IdPath,
        reply: { status: 204, description: 'Deleted' },
      }),
    ],
  ];
  for (const [helper, written] of pairs) expect(said(helper)).toEqual(said(written));
  // a write to a project answers 409 while the project is erased, through the helpers as through operation()
  expect(pairs[3]![0].errors).toEqual([400, 401, 403, 404, 409, 500]);
});
