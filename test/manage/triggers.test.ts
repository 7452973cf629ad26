import { aMemoryCredential, aProject, aProjectWithAgents, aTenantToken, client, projectPath } from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { serviceDatabase } from '../support/connections';
import { expectProblem } from '../support/expect-problem';

const db = serviceDatabase(stack, 'management');

const agentPath = (p: { tenantId: string; projectId: string }, agentId = 'agent-1') =>
  `${projectPath(p)}/agents/${agentId}`;

/** A project with a signing-secret credential `signing` (so signature verification can be set). */
async function aProjectWithSigningSecret() {
  const p = await aProjectWithAgents(admin, 'agent-1', 'agent-2');
  await aMemoryCredential(admin, p, { id: 'signing', name: 'signing secret' });
  return p;
}

const aSignature = (overrides: Record<string, unknown> = {}) => ({
  algorithm: 'sha256',
  encoding: 'hex',
  signature: { source: 'header', key: 'X-Hub-Signature-256', prefix: 'sha256=' },
  ...overrides,
});

async function triggerCount(p: { tenantId: string; projectId: string }) {
  return (await admin.get(`${agentPath(p)}/triggers`)).body.pagination.total as number;
}

describe('triggers', () => {
  test('when a trigger is created with only a name, then defaults are filled and it can be read, listed, switched off and on, and deleted', async () => {
    const p = await aProjectWithAgents(admin, 'agent-1', 'agent-2');
    const A = agentPath(p);
    const created = await admin.post(`${A}/triggers`, { id: 'nightly', name: 'Nightly' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      data: {
        id: 'nightly',
        name: 'Nightly',
        description: null,
        enabled: true,
        dispatchDelayMs: 0,
        messageTemplate: null,
        inputSchema: null,
        outputTransform: null,
        runAsUserId: null,
        runAsUserIds: [],
        createdBy: null,
        authentication: null,
        signingSecretCredentialReferenceId: null,
        signatureVerification: null,
        deliveryIdHeader: null,
        rateLimitPerMinute: null,
        bodyLimitBytes: null,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
        userCount: 0,
        webhookUrl: `${stack.gatewayUrl}/run/tenants/${p.tenantId}/projects/${p.projectId}/agents/agent-1/triggers/nightly`,
      },
    });

    expect((await admin.get(`${A}/triggers/nightly`)).body).toEqual({ data: created.body.data });
    const list = await admin.get(`${A}/triggers`);
    expect(list.body).toEqual({
      data: [created.body.data],
      pagination: { page: 1, limit: 10, total: 1, pages: 1, completedCount: 1 },
    });
    // Triggers belong to their agent.
    expect((await admin.get(`${agentPath(p, 'agent-2')}/triggers`)).body.pagination.total).toBe(0);
    expectProblem(await admin.get(`${agentPath(p, 'agent-2')}/triggers/nightly`), 404);

    const off = await admin.patch(`${A}/triggers/nightly`, { enabled: false });
    expect(off.status).toBe(200);
    expect(off.body.data.enabled).toBe(false);
    expect((await admin.get(`${A}/triggers/nightly`)).body.data.enabled).toBe(false);
    const on = await admin.patch(`${A}/triggers/nightly`, { enabled: true });
    expect(on.body.data.enabled).toBe(true);

    expect((await admin.delete(`${A}/triggers/nightly`)).status).toBe(204);
    expectProblem(await admin.get(`${A}/triggers/nightly`), 404);
    expectProblem(await admin.delete(`${A}/triggers/nightly`), 404);
  });

  test('when a trigger is created with every field, then the response shows them, with authentication as header names only', async () => {
    const p = await aProjectWithSigningSecret();
    const A = agentPath(p);
    const authValue = `auth-secret-${Date.now()}`;
    const body = {
      id: 'gh-push',
      name: 'GitHub push',
      description: 'Runs on every push',
      enabled: false,
      dispatchDelayMs: 600000,
      messageTemplate: 'Review {{repository.name}} at {{ref}}',
      inputSchema: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        properties: {
          ref: { type: 'string' },
          repository: { type: 'object', properties: { name: { type: 'string' } } },
        },
        required: ['ref'],
      },
      outputTransform: { jmespath: '{ref: ref}', objectTransformation: { branch: 'ref' } },
      runAsUserId: 'user-1',
      runAsUserIds: ['user-1', 'user-2', 'user-2'],
      createdBy: 'alice',
      authentication: { headers: [{ name: 'X-Trigger-Key', value: authValue }] },
      signingSecretCredentialReferenceId: 'signing',
      signatureVerification: aSignature({
        signedComponents: [
          { source: 'header', key: 'X-Timestamp', regex: '^(\\d+)$', timestamp: true },
          { source: 'literal', value: '.' },
          { source: 'body', required: false },
        ],
        componentJoin: { strategy: 'concatenate', separator: '' },
        validation: {
          headerCaseSensitive: true,
          allowEmptyBody: false,
          normalizeUnicode: true,
          timestampToleranceSeconds: 600,
        },
      }),
      bodyLimitBytes: 4096,
    };
    const res = await admin.post(`${A}/triggers`, body);
    expect(res.status).toBe(201);
    expect(res.body.warning).toBeUndefined();
    expect(res.body.data).toMatchObject({
      ...body,
      runAsUserIds: ['user-1', 'user-2'],
      authentication: { headers: [{ name: 'X-Trigger-Key' }] },
      signatureVerification: {
        ...body.signatureVerification,
        signedComponents: [
          { source: 'header', key: 'X-Timestamp', regex: '^(\\d+)$', timestamp: true, required: true },
          { source: 'literal', value: '.', required: true },
          { source: 'body', required: false },
        ],
      },
      userCount: 2,
    });
    expect(JSON.stringify(res.body)).not.toContain(authValue);
    expect((await admin.get(`${A}/triggers/gh-push`)).body.data).toEqual(res.body.data);

    const raw = await db
      .collection('triggers')
      .findOne({ tenantId: p.tenantId, projectId: p.projectId, id: 'gh-push' });
    expect(raw).not.toBeNull();
    expect(JSON.stringify(raw)).not.toContain(authValue);
  });

  test('when signatureVerification gives only the signature, then algorithm, encoding, components, join and validation take their defaults', async () => {
    const p = await aProjectWithSigningSecret();
    const res = await admin.post(`${agentPath(p)}/triggers`, {
      name: 'defaults',
      signingSecretCredentialReferenceId: 'signing',
      signatureVerification: { signature: { source: 'query', key: 'sig' } },
    });
    expect(res.status).toBe(201);
    expect(res.body.data.id).toMatch(/^[A-Za-z0-9]+$/);
    expect(res.body.data.signatureVerification).toEqual({
      algorithm: 'sha256',
      encoding: 'hex',
      signature: { source: 'query', key: 'sig' },
      signedComponents: [{ source: 'body', required: true }],
      componentJoin: { strategy: 'concatenate', separator: '' },
      validation: { headerCaseSensitive: false, allowEmptyBody: true, normalizeUnicode: false },
    });
  });

  test.each([
    [
      'a placeholder is not in inputSchema.properties',
      {
        messageTemplate: 'Hi {{name}}, see {{missing}}',
        inputSchema: { type: 'object', properties: { name: { type: 'string' } } },
      },
      /\{\{missing\}\}/,
    ],
    [
      'a nested placeholder is not declared',
      {
        messageTemplate: '{{user.email}}',
        inputSchema: {
          type: 'object',
          properties: { user: { type: 'object', properties: { name: { type: 'string' } } } },
        },
      },
      /\{\{user\.email\}\}/,
    ],
    [
      'the algorithm is md5',
      { signingSecretCredentialReferenceId: 'signing', signatureVerification: aSignature({ algorithm: 'md5' }) },
      /md5 is weak/,
    ],
    [
      'the algorithm is sha1',
      { signingSecretCredentialReferenceId: 'signing', signatureVerification: aSignature({ algorithm: 'sha1' }) },
      /sha1 is weak/,
    ],
    [
      'it runs as users without authentication or signature',
      { runAsUserIds: ['u1'] },
      /neither authentication nor signatureVerification/,
    ],
  ])('when %s, then the trigger is created with a warning', async (_what, fields, warning) => {
    const p = await aProjectWithSigningSecret();
    const res = await admin.post(`${agentPath(p)}/triggers`, { id: 't1', name: 'warned', ...fields });
    expect(res.status).toBe(201);
    expect(res.body.warning).toMatch(warning);
    expect((await admin.get(`${agentPath(p)}/triggers/t1`)).status).toBe(200);
  });

  test('when every placeholder is declared, then there is no warning', async () => {
    const p = await aProjectWithAgents(admin, 'agent-1', 'agent-2');
    const res = await admin.post(`${agentPath(p)}/triggers`, {
      name: 'clean',
      messageTemplate: 'Hi {{ name }} from {{org.id}}',
      inputSchema: { type: 'object', properties: { name: { type: 'string' }, org: { type: 'object' } } },
      runAsUserId: 'u1',
      authentication: { headers: [{ name: 'X-Key', value: 'k' }] },
    });
    expect(res.status).toBe(201);
    expect(res.body).not.toHaveProperty('warning');
    expect(res.body.data.userCount).toBe(1);
  });

  const sig = aSignature();
  test.each([
    ['name is missing', { name: undefined }, 400, '/name'],
    ['name is empty', { name: '' }, 400, '/name'],
    ['the id is not a RID', { id: 'a/b' }, 400, '/id'],
    ['dispatchDelayMs is negative', { dispatchDelayMs: -1 }, 400, '/dispatchDelayMs'],
    ['dispatchDelayMs is above 600000', { dispatchDelayMs: 600001 }, 400, '/dispatchDelayMs'],
    ['dispatchDelayMs is not an integer', { dispatchDelayMs: 1.5 }, 400, '/dispatchDelayMs'],
    ['enabled is not a boolean', { enabled: 'yes' }, 400, '/enabled'],
    ['messageTemplate is empty', { messageTemplate: '' }, 400, '/messageTemplate'],
    ['inputSchema is not an object', { inputSchema: [1] }, 400, '/inputSchema'],
    ['inputSchema has a bad type', { inputSchema: { type: 'strin' } }, 422, '/inputSchema/type'],
    ['inputSchema has an unknown keyword', { inputSchema: { type: 'object', requird: ['a'] } }, 422, '/inputSchema'],
    ['inputSchema has a dangling $ref', { inputSchema: { $ref: '#/definitions/nope' } }, 422, '/inputSchema'],
    [
      'inputSchema names an unknown dialect',
      { inputSchema: { $schema: 'http://example.com/schema', type: 'object' } },
      422,
      '/inputSchema/$schema',
    ],
    ['outputTransform has an unknown field', { outputTransform: { jq: '.' } }, 400, '/outputTransform'],
    ['runAsUserIds is not an array', { runAsUserIds: 'u1' }, 400, '/runAsUserIds'],
    [
      'an authentication header name is reserved',
      { authentication: { headers: [{ name: 'Content-Length', value: '1' }] } },
      400,
      '/authentication/headers/0/name',
    ],
    [
      'an authentication header name is not a token',
      { authentication: { headers: [{ name: 'X Key', value: '1' }] } },
      400,
      '/authentication/headers/0/name',
    ],
    [
      'an authentication header value is empty',
      { authentication: { headers: [{ name: 'X-Key', value: '' }] } },
      400,
      '/authentication/headers/0/value',
    ],
    [
      'an authentication header value is longer than 1000',
      { authentication: { headers: [{ name: 'X-Key', value: 'v'.repeat(1001) }] } },
      400,
      '/authentication/headers/0/value',
    ],
    [
      'authentication repeats a header name',
      {
        authentication: {
          headers: [
            { name: 'X-Key', value: 'a' },
            { name: 'x-key', value: 'b' },
          ],
        },
      },
      400,
      '/authentication/headers',
    ],
    [
      'the algorithm is unknown',
      { signingSecretCredentialReferenceId: 'signing', signatureVerification: aSignature({ algorithm: 'sha3' }) },
      400,
      '/signatureVerification/algorithm',
    ],
    [
      'the encoding is unknown',
      { signingSecretCredentialReferenceId: 'signing', signatureVerification: aSignature({ encoding: 'base32' }) },
      400,
      '/signatureVerification/encoding',
    ],
    [
      'the signature source is unknown',
      {
        signingSecretCredentialReferenceId: 'signing',
        signatureVerification: aSignature({ signature: { source: 'cookie', key: 'sig' } }),
      },
      400,
      '/signatureVerification/signature/source',
    ],
    [
      'the signature header is not a header name',
      {
        signingSecretCredentialReferenceId: 'signing',
        signatureVerification: aSignature({ signature: { source: 'header', key: 'x sig' } }),
      },
      400,
      '/signatureVerification/signature/key',
    ],
    [
      'the signature regex does not compile',
      {
        signingSecretCredentialReferenceId: 'signing',
        signatureVerification: aSignature({ signature: { source: 'header', key: 'X-Sig', regex: '(' } }),
      },
      400,
      '/signatureVerification/signature/regex',
    ],
    [
      'a component source is unknown',
      {
        signingSecretCredentialReferenceId: 'signing',
        signatureVerification: aSignature({ signedComponents: [{ source: 'query', key: 'a' }] }),
      },
      400,
      '/signatureVerification/signedComponents/0/source',
    ],
    [
      'a component regex does not compile',
      {
        signingSecretCredentialReferenceId: 'signing',
        signatureVerification: aSignature({ signedComponents: [{ source: 'body', regex: '[' }] }),
      },
      400,
      '/signatureVerification/signedComponents/0/regex',
    ],
    [
      'a literal component has no value',
      {
        signingSecretCredentialReferenceId: 'signing',
        signatureVerification: aSignature({ signedComponents: [{ source: 'literal' }] }),
      },
      400,
      '/signatureVerification/signedComponents/0/value',
    ],
    [
      'there are no signed components',
      { signingSecretCredentialReferenceId: 'signing', signatureVerification: aSignature({ signedComponents: [] }) },
      400,
      '/signatureVerification/signedComponents',
    ],
    [
      'the join strategy is unknown',
      {
        signingSecretCredentialReferenceId: 'signing',
        signatureVerification: aSignature({ componentJoin: { strategy: 'interleave', separator: '' } }),
      },
      400,
      '/signatureVerification/componentJoin/strategy',
    ],
    [
      'a validation flag is not a boolean',
      {
        signingSecretCredentialReferenceId: 'signing',
        signatureVerification: aSignature({ validation: { allowEmptyBody: 'no' } }),
      },
      400,
      '/signatureVerification/validation/allowEmptyBody',
    ],
    [
      'signatureVerification has no signing secret',
      { signatureVerification: sig },
      422,
      '/signingSecretCredentialReferenceId',
    ],
    [
      'the signing secret credential does not exist',
      { signingSecretCredentialReferenceId: 'nope', signatureVerification: sig },
      422,
      '/signingSecretCredentialReferenceId',
    ],
    ['createdAt is not a date-time', { createdAt: 'yesterday' }, 400, '/createdAt'],
    ['a field is unknown', { schedule: '* * * * *' }, 400, undefined],
  ])('when %s, then create answers a problem and stores nothing', async (_what, fields, status, pointer) => {
    const p = await aProjectWithSigningSecret();
    const body = JSON.parse(JSON.stringify({ id: 't1', name: 'T', ...fields }));
    expectProblem(await admin.post(`${agentPath(p)}/triggers`, body), status, pointer);
    expect(await triggerCount(p)).toBe(0);
  });

  test('when the agent of the path does not exist, then creating a trigger answers 404 and stores nothing', async () => {
    const p = await aProjectWithAgents(admin);
    const res = await admin.post(`${agentPath(p, 'no-such-agent')}/triggers`, { id: 't1', name: 'orphan' });
    expectProblem(res, 404);
    expect(res.body.detail).toContain('no-such-agent');
    expect((await admin.get(`${agentPath(p, 'no-such-agent')}/triggers`)).body.pagination.total).toBe(0);
    // Once the agent is deleted, its id takes no new triggers either.
    expect((await admin.delete(`${agentPath(p)}`)).status).toBe(204);
    expectProblem(await admin.post(`${agentPath(p)}/triggers`, { id: 't1', name: 'late' }), 404);
    expect(await triggerCount(p)).toBe(0);
  });

  test('when a trigger id is used twice for one agent, then the second create answers 409 and the first is kept', async () => {
    const p = await aProjectWithAgents(admin, 'agent-1', 'agent-2');
    const first = await admin.post(`${agentPath(p)}/triggers`, { id: 't1', name: 'first' });
    expectProblem(await admin.post(`${agentPath(p)}/triggers`, { id: 't1', name: 'second' }), 409);
    expect((await admin.get(`${agentPath(p)}/triggers/t1`)).body.data).toEqual(first.body.data);
    // Another agent may use the same id.
    expect((await admin.post(`${agentPath(p, 'agent-2')}/triggers`, { id: 't1', name: 'other agent' })).status).toBe(
      201,
    );
  });

  test.each([
    ['dispatchDelayMs is above 600000', { dispatchDelayMs: 600001 }, 400, '/dispatchDelayMs'],
    ['name is empty', { name: '' }, 400, '/name'],
    ['inputSchema is not valid JSON Schema', { inputSchema: { type: 12 } }, 422, '/inputSchema/type'],
    ['the id would change', { id: 'other' }, 422, '/id'],
    [
      'signatureVerification is set without a signing secret',
      { signatureVerification: sig },
      422,
      '/signingSecretCredentialReferenceId',
    ],
    [
      'an authentication header keeps a value that was never stored',
      { authentication: { headers: [{ name: 'X-Other', keepExisting: true }] } },
      422,
      '/authentication/headers/0/keepExisting',
    ],
    [
      'an authentication header has neither value nor keepExisting',
      { authentication: { headers: [{ name: 'X-Key' }] } },
      400,
      '/authentication/headers/0/value',
    ],
  ])('when an update says %s, then it answers a problem and changes nothing', async (_what, body, status, pointer) => {
    const p = await aProjectWithAgents(admin, 'agent-1', 'agent-2');
    const created = await admin.post(`${agentPath(p)}/triggers`, {
      id: 't1',
      name: 'T',
      authentication: { headers: [{ name: 'X-Key', value: 'k' }] },
    });
    expectProblem(await admin.patch(`${agentPath(p)}/triggers/t1`, body), status, pointer);
    expect((await admin.get(`${agentPath(p)}/triggers/t1`)).body.data).toEqual(created.body.data);
  });

  test('when an update keeps one authentication header and replaces another, then both names remain and the stored hashes say which changed', async () => {
    const p = await aProjectWithAgents(admin, 'agent-1', 'agent-2');
    await admin.post(`${agentPath(p)}/triggers`, {
      id: 't1',
      name: 'T',
      authentication: {
        headers: [
          { name: 'X-Key', value: 'one' },
          { name: 'X-Other', value: 'two' },
        ],
      },
    });
    const before = await db.collection('triggers').findOne({ tenantId: p.tenantId, projectId: p.projectId, id: 't1' });
    const res = await admin.patch(`${agentPath(p)}/triggers/t1`, {
      authentication: {
        headers: [
          { name: 'X-Key', keepExisting: true },
          { name: 'X-Other', value: 'three' },
        ],
      },
      messageTemplate: 'Hello {{who}}',
      inputSchema: { type: 'object', properties: {} },
    });
    expect(res.status).toBe(200);
    expect(res.body.data.authentication).toEqual({ headers: [{ name: 'X-Key' }, { name: 'X-Other' }] });
    expect(res.body.warning).toMatch(/\{\{who\}\}/);
    const after = await db.collection('triggers').findOne({ tenantId: p.tenantId, projectId: p.projectId, id: 't1' });
    expect(after!.authentication.headers[0].valueHash).toBe(before!.authentication.headers[0].valueHash);
    expect(after!.authentication.headers[1].valueHash).not.toBe(before!.authentication.headers[1].valueHash);
    expect(JSON.stringify(after)).not.toMatch(/"(one|two|three)"/);

    const cleared = await admin.patch(`${agentPath(p)}/triggers/t1`, { authentication: null });
    expect(cleared.body.data.authentication).toBeNull();
  });

  test('when a trigger uses a credential as signing secret, then that credential cannot be deleted until the trigger lets go', async () => {
    const p = await aProjectWithSigningSecret();
    await admin.post(`${agentPath(p)}/triggers`, {
      id: 't1',
      name: 'T',
      signingSecretCredentialReferenceId: 'signing',
      signatureVerification: sig,
    });
    expectProblem(await admin.delete(`${projectPath(p)}/credentials/signing`), 409);
    expect((await admin.get(`${projectPath(p)}/credentials/signing`)).status).toBe(200);
    const released = await admin.patch(`${agentPath(p)}/triggers/t1`, {
      signatureVerification: null,
      signingSecretCredentialReferenceId: null,
    });
    expect(released.status).toBe(200);
    expect((await admin.delete(`${projectPath(p)}/credentials/signing`)).status).toBe(204);
  });

  test('when an update sets createdAt, then the trigger keeps that creation time', async () => {
    const p = await aProjectWithAgents(admin, 'agent-1', 'agent-2');
    await admin.post(`${agentPath(p)}/triggers`, { id: 't1', name: 'T' });
    const res = await admin.patch(`${agentPath(p)}/triggers/t1`, {
      id: 't1',
      createdAt: '2025-01-02T03:04:05.000+00:00',
      description: 'd',
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: 't1', createdAt: '2025-01-02T03:04:05.000Z', description: 'd' });
  });

  test('when triggers are listed with page and limit, then pages are cut as asked and bad bounds are 400', async () => {
    const p = await aProjectWithAgents(admin, 'agent-1', 'agent-2');
    for (const id of ['a', 'b', 'c'])
      expect((await admin.post(`${agentPath(p)}/triggers`, { id, name: id })).status).toBe(201);
    const page = await admin.get(`${agentPath(p)}/triggers?page=1&limit=2`);
    expect(page.body.data).toHaveLength(2);
    expect(page.body.pagination).toEqual({ page: 1, limit: 2, total: 3, pages: 2, completedCount: 2 });
    expect((await admin.get(`${agentPath(p)}/triggers?page=3&limit=2`)).body.data).toEqual([]);
    expectProblem(await admin.get(`${agentPath(p)}/triggers?limit=101`), 400, '#query/limit');
    expectProblem(await admin.get(`${agentPath(p)}/triggers?limit=0`), 400, '#query/limit');
    expectProblem(await admin.get(`${agentPath(p)}/triggers?page=0`), 400, '#query/page');
    expectProblem(await admin.get(`${agentPath(p, 'bad agent')}/triggers`), 400, '#params/agentId');
  });

  test('when no credential is sent, then every trigger operation answers 401', async () => {
    const A = agentPath(aProject());
    const anon = client(stack.gatewayUrl);
    expectProblem(await anon.get(`${A}/triggers`), 401);
    expectProblem(await anon.post(`${A}/triggers`, { name: 'x' }), 401);
    expectProblem(await anon.get(`${A}/triggers/t1`), 401);
    expectProblem(await anon.patch(`${A}/triggers/t1`, { enabled: false }), 401);
    expectProblem(await anon.delete(`${A}/triggers/t1`), 401);
  });

  test("when a tenant token reaches for another tenant's trigger, then it answers 403 and changes nothing", async () => {
    const theirs = await aProjectWithAgents(admin, 'agent-1', 'agent-2');
    const created = await admin.post(`${agentPath(theirs)}/triggers`, { id: 't1', name: 'theirs' });
    const me = client(stack.gatewayUrl, await aTenantToken(admin, aProject().tenantId));
    expectProblem(await me.get(`${agentPath(theirs)}/triggers/t1`), 403);
    expectProblem(await me.patch(`${agentPath(theirs)}/triggers/t1`, { enabled: false }), 403);
    expectProblem(await me.delete(`${agentPath(theirs)}/triggers/t1`), 403);
    expect((await admin.get(`${agentPath(theirs)}/triggers/t1`)).body.data).toEqual(created.body.data);
  });
});

describe('the OpenAPI document', () => {
  test('when it is fetched, then every trigger operation is there with its schemas', async () => {
    const doc = (await client(stack.gatewayUrl).get('/openapi.json')).body;
    const base = '/manage/tenants/{tenantId}/projects/{projectId}/agents/{agentId}/triggers';
    expect(doc.paths[base].get.operationId).toBe('listTriggers');
    expect(doc.paths[base].post.operationId).toBe('createTrigger');
    expect(doc.paths[`${base}/{id}`].get.operationId).toBe('getTrigger');
    expect(doc.paths[`${base}/{id}`].patch.operationId).toBe('updateTrigger');
    expect(doc.paths[`${base}/{id}`].delete.operationId).toBe('deleteTrigger');
    const body = doc.paths[base].post.requestBody.content['application/json'].schema;
    expect(body.required).toEqual(['name']);
    expect(body.properties.dispatchDelayMs).toMatchObject({ minimum: 0, maximum: 600000 });
    expect(doc.paths[base].post.responses['201'].content['application/json'].schema.properties).toHaveProperty(
      'warning',
    );
  });
});
