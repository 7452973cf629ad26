import type mongoose from 'mongoose';
import { scopedSchema } from '../src';

/** A schema's paths in order, as `name:type` with `!` for a required one. */
const paths = (schema: mongoose.Schema) =>
  Object.entries(schema.paths).map(([name, p]) => `${name}:${p.instance}${p.isRequired ? '!' : ''}`);

test('when a schema is declared with scopedSchema, then it has the scope header, its fields, the times, and no version key', () => {
  const schema = scopedSchema(
    { name: { type: String, required: true }, tags: { type: [String], default: [] } },
    { collection: 'things', minimize: false },
  );
  expect(paths(schema)).toEqual([
    '_id:String',
    'id:String!',
    'tenantId:String!',
    'projectId:String!',
    'name:String!',
    'tags:Array',
    'createdAt:Date!',
    'updatedAt:Date!',
  ]);
  expect(schema.options).toMatchObject({ collection: 'things', versionKey: false, minimize: false });
});

test("when a record has no id of its own and times of its own, then scopedSchema leaves out id and the times, and minimize is mongoose's", () => {
  const schema = scopedSchema(
    { receivedAt: { type: Date, required: true } },
    { collection: 'events', id: false, timestamps: false },
  );
  expect(paths(schema)).toEqual(['_id:String', 'tenantId:String!', 'projectId:String!', 'receivedAt:Date!']);
  expect(schema.options).toMatchObject({ collection: 'events', versionKey: false, minimize: true });
});

test('two schemas declared with scopedSchema share no path options', () => {
  const a = scopedSchema({}, { collection: 'a' });
  const b = scopedSchema({}, { collection: 'b' });
  expect(a.path('tenantId').options).not.toBe(b.path('tenantId').options);
});
