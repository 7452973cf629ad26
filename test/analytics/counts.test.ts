import { anAnalyticsKey, aProject, client, projectPath } from '@platform/testkit';
import { admin, stack } from '../support/stack';

/** Posts events at fixed times and returns the project. */
async function aProjectWithEvents(events: Array<Record<string, unknown>>) {
  const p = aProject();
  const { key } = await anAnalyticsKey(admin, p);
  const ingest = client(stack.analyticsUrl, key);
  for (const e of events) {
    const res = await ingest.post('/events', e);
    if (res.status !== 201) throw new Error(`ingest failed: ${res.status} ${JSON.stringify(res.body)}`);
  }
  return p;
}

const msg = (type: string, createdAt: string) => ({ entityType: 'message', messageId: 'm-1', type, createdAt });
const conv = (type: string, createdAt: string) => ({
  entityType: 'conversation',
  conversationId: 'c-1',
  type,
  createdAt,
});
const search = (type: string, createdAt: string) => ({ entityType: 'search', searchQuery: 'q', type, createdAt });

describe('analytics counts', () => {
  test('when events fall in three hours, then hourly counts per type and entityType match, with empty hours as zeros', async () => {
    const p = await aProjectWithEvents([
      msg('message.copied', '2026-02-10T10:05:00Z'),
      msg('message.copied', '2026-02-10T10:59:59.999Z'),
      conv('conversation.opened', '2026-02-10T10:30:00Z'),
      search('search.performed', '2026-02-10T12:00:00Z'),
      msg('message.copied', '2026-02-10T14:10:00+02:00'), // 12:10Z
      msg('message.copied', '2026-02-10T13:00:00Z'), // outside [10:00, 13:00)
      msg('message.copied', '2026-02-10T09:59:59Z'), // outside
    ]);
    const res = await admin.get(
      `${projectPath(p)}/analytics/counts?from=2026-02-10T10:00:00Z&to=2026-02-10T13:00:00Z&bucket=hour`,
    );
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      from: '2026-02-10T10:00:00.000Z',
      to: '2026-02-10T13:00:00.000Z',
      bucket: 'hour',
      buckets: ['2026-02-10T10:00:00.000Z', '2026-02-10T11:00:00.000Z', '2026-02-10T12:00:00.000Z'],
      total: 5,
      byType: [
        { type: 'message.copied', total: 3, counts: [2, 0, 1] },
        { type: 'conversation.opened', total: 1, counts: [1, 0, 0] },
        { type: 'search.performed', total: 1, counts: [0, 0, 1] },
      ],
      byEntityType: [
        { entityType: 'message', total: 3, counts: [2, 0, 1] },
        { entityType: 'conversation', total: 1, counts: [1, 0, 0] },
        { entityType: 'search', total: 1, counts: [0, 0, 1] },
      ],
      truncated: false,
    });
  });

  test('when the range is not aligned, then it is widened to whole buckets (minute and day)', async () => {
    const p = await aProjectWithEvents([
      msg('a', '2026-02-11T08:00:10Z'),
      msg('a', '2026-02-11T08:01:50Z'),
      msg('b', '2026-02-12T23:59:00Z'),
    ]);
    const minutes = await admin.get(
      `${projectPath(p)}/analytics/counts?from=2026-02-11T08:00:30Z&to=2026-02-11T08:01:30Z&bucket=minute`,
    );
    expect(minutes.status).toBe(200);
    expect(minutes.body.data).toMatchObject({
      from: '2026-02-11T08:00:00.000Z',
      to: '2026-02-11T08:02:00.000Z',
      buckets: ['2026-02-11T08:00:00.000Z', '2026-02-11T08:01:00.000Z'],
      total: 2,
      byType: [{ type: 'a', total: 2, counts: [1, 1] }],
    });
    const days = await admin.get(
      `${projectPath(p)}/analytics/counts?from=2026-02-11T12:00:00Z&to=2026-02-12T01:00:00Z&bucket=day`,
    );
    expect(days.body.data).toMatchObject({
      buckets: ['2026-02-11T00:00:00.000Z', '2026-02-12T00:00:00.000Z'],
      total: 3,
      byType: [
        { type: 'a', total: 2, counts: [2, 0] },
        { type: 'b', total: 1, counts: [0, 1] },
      ],
    });
  });

  test('when another project has events in the same range, then they are not counted', async () => {
    const mine = await aProjectWithEvents([msg('a', '2026-02-13T10:00:00Z')]);
    await aProjectWithEvents([msg('a', '2026-02-13T10:00:00Z'), msg('a', '2026-02-13T10:01:00Z')]);
    const res = await admin.get(
      `${projectPath(mine)}/analytics/counts?from=2026-02-13T10:00:00Z&to=2026-02-13T11:00:00Z`,
    );
    expect(res.body.data.total).toBe(1);
    expect(res.body.data.bucket).toBe('hour');
  });

  test('when nothing was ingested, then every bucket is listed and no series', async () => {
    const p = aProject();
    const res = await admin.get(`${projectPath(p)}/analytics/counts?from=2026-02-13T00:00:00Z&to=2026-02-13T03:00:00Z`);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ total: 0, byType: [], byEntityType: [], truncated: false });
    expect(res.body.data.buckets).toHaveLength(3);
  });

  test('when from is not before to, or the range has too many buckets, then it answers 422; a bad bucket is 400', async () => {
    const p = aProject();
    const reversed = await admin.get(
      `${projectPath(p)}/analytics/counts?from=2026-02-13T03:00:00Z&to=2026-02-13T00:00:00Z`,
    );
    expect(reversed.status).toBe(422);
    expect(reversed.body).toMatchObject({ code: 'unprocessable_entity' });
    const tooMany = await admin.get(
      `${projectPath(p)}/analytics/counts?from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z&bucket=minute`,
    );
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.detail).toMatch(/at most 2000/);
    const badBucket = await admin.get(`${projectPath(p)}/analytics/counts?bucket=week`);
    expect(badBucket.status).toBe(400);
    const badDate = await admin.get(`${projectPath(p)}/analytics/counts?from=yesterday`);
    expect(badDate.status).toBe(400);
  });

  test('when called without management credentials or with an analytics key, then it answers 401', async () => {
    const p = aProject();
    const { key } = await anAnalyticsKey(admin, p);
    expect((await client(stack.gatewayUrl).get(`${projectPath(p)}/analytics/counts`)).status).toBe(401);
    expect((await client(stack.gatewayUrl, key).get(`${projectPath(p)}/analytics/counts`)).status).toBe(401);
  });
});
