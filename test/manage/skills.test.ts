import {
  aProject,
  aSkillInput,
  aStoredSkill,
  aTenantToken,
  client,
  projectPath,
  skillManifest,
} from '@platform/testkit';
import { admin, stack } from '../support/stack';

const anonymous = client(stack.gatewayUrl);

type P = { tenantId: string; projectId: string };
const skills = (p: P) => `${projectPath(p)}/skills`;
const total = async (p: P) => (await admin.get(skills(p))).body.pagination.total as number;

function expectProblem(res: { status: number; contentType: string; body: any }, status: number, pointer?: string) {
  expect(res.status).toBe(status);
  expect(res.contentType).toMatch(/application\/problem\+json/);
  if (pointer !== undefined) expect(res.body.errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
}

describe('skills', () => {
  test('when a skill is created from files, then its fields come from SKILL.md and its files belong to it', async () => {
    const p = aProject();
    const res = await admin.post(skills(p), {
      files: [
        {
          filePath: 'SKILL.md',
          content:
            '---\nname: pdf-tools\ndescription: Works with PDF files\nlicense: MIT\nmetadata:\n  owner: docs-team\n  version: "1.2"\n---\n\n# PDF tools\n\nUse scripts/extract.py.\n',
        },
        { filePath: 'scripts/extract.py', content: 'print("hi")\n' },
      ],
    });
    expect(res.status).toBe(201);
    const skill = res.body.data;
    expect(skill).toEqual({
      id: 'pdf-tools',
      name: 'pdf-tools',
      description: 'Works with PDF files',
      content: '# PDF tools\n\nUse scripts/extract.py.\n',
      metadata: { owner: 'docs-team', version: '1.2' },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      files: [
        {
          id: expect.any(String),
          skillId: 'pdf-tools',
          filePath: 'SKILL.md',
          content: expect.stringContaining('name: pdf-tools'),
          createdAt: skill.createdAt,
          updatedAt: skill.createdAt,
        },
        {
          id: expect.any(String),
          skillId: 'pdf-tools',
          filePath: 'scripts/extract.py',
          content: 'print("hi")\n',
          createdAt: skill.createdAt,
          updatedAt: skill.createdAt,
        },
      ],
    });

    const read = await admin.get(`${skills(p)}/pdf-tools`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ data: skill });

    const list = await admin.get(skills(p));
    expect(list.status).toBe(200);
    const { files: _f, ...withoutFiles } = skill;
    expect(list.body).toEqual({
      data: [withoutFiles],
      pagination: { page: 1, limit: 10, total: 1, pages: 1, completedCount: 1 },
    });
  });

  test('when SKILL.md has no metadata, then metadata is null', async () => {
    const p = aProject();
    const res = await admin.post(skills(p), { files: [{ filePath: 'SKILL.md', content: skillManifest('plain') }] });
    expect(res.status).toBe(201);
    expect(res.body.data.metadata).toBeNull();
  });

  test('when a skill with the same name is created again, then it answers 409 and keeps the first', async () => {
    const p = aProject();
    const first = await aStoredSkill(admin, p, 'same-name');
    const again = await admin.post(skills(p), {
      files: [{ filePath: 'SKILL.md', content: skillManifest('same-name', 'Other') }],
    });
    expectProblem(again, 409);
    expect((await admin.get(`${skills(p)}/same-name`)).body.data).toEqual(first);
  });

  const manifest = (fm: string, body = '# x\n') => ({
    files: [{ filePath: 'SKILL.md', content: `---\n${fm}---\n${body}` }],
  });
  test.each([
    ['files is missing', {}, '/files'],
    ['files is empty', { files: [] }, '/files'],
    ['there is no SKILL.md', { files: [{ filePath: 'README.md', content: 'x' }] }, '/files'],
    ['a file has no content', { files: [{ filePath: 'SKILL.md' }] }, '/files/0/content'],
    [
      'a file path climbs out',
      {
        files: [
          { filePath: 'SKILL.md', content: skillManifest('a') },
          { filePath: '../etc/passwd', content: 'x' },
        ],
      },
      '/files/1/filePath',
    ],
    [
      'a file path is absolute',
      {
        files: [
          { filePath: 'SKILL.md', content: skillManifest('a') },
          { filePath: '/abs', content: 'x' },
        ],
      },
      '/files/1/filePath',
    ],
    [
      'a file path is given twice',
      {
        files: [
          { filePath: 'SKILL.md', content: skillManifest('a') },
          { filePath: 'SKILL.md', content: skillManifest('a') },
        ],
      },
      '/files/1/filePath',
    ],
    ['a field is unknown', { ...aSkillInput('a'), name: 'a' }, ''],
    [
      'SKILL.md has no front matter',
      { files: [{ filePath: 'SKILL.md', content: '# just markdown' }] },
      '/files/0/content',
    ],
    ['the front matter is not YAML', manifest('name: [unclosed\n'), '/files/0/content'],
    ['the name is missing', manifest('description: d\n'), '/files/0/content'],
    ['the name has capitals', manifest('name: PDF\ndescription: d\n'), '/files/0/content'],
    ['the name is longer than 64', manifest(`name: ${'a'.repeat(65)}\ndescription: d\n`), '/files/0/content'],
    ['the description is missing', manifest('name: ok\n'), '/files/0/content'],
    [
      'the description is longer than 1024',
      manifest(`name: ok\ndescription: ${'d'.repeat(1025)}\n`),
      '/files/0/content',
    ],
    [
      'a metadata value is not a string',
      manifest('name: ok\ndescription: d\nmetadata:\n  version: 1.0\n'),
      '/files/0/content',
    ],
    ['metadata is a list', manifest('name: ok\ndescription: d\nmetadata: [a, b]\n'), '/files/0/content'],
  ])('when %s, then it answers 400 pointing at the field and stores nothing', async (_what, body, pointer) => {
    const p = aProject();
    expectProblem(await admin.post(skills(p), body), 400, pointer);
    expect(await total(p)).toBe(0);
  });

  test('when files are added, replaced and removed, then the skill shows the new set and SKILL.md re-reads its fields', async () => {
    const p = aProject();
    const skill = await aStoredSkill(admin, p, 'editable');
    const oldScript = skill.files.find((f: { filePath: string }) => f.filePath === 'scripts/run.sh');
    const res = await admin.patch(`${skills(p)}/editable`, {
      files: [
        {
          filePath: 'SKILL.md',
          content: skillManifest('editable', 'A better description', 'metadata:\n  tier: gold\n'),
        },
        { filePath: 'docs/usage.md', content: 'usage' },
      ],
      removeFilePaths: ['scripts/run.sh'],
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      id: 'editable',
      description: 'A better description',
      metadata: { tier: 'gold' },
      createdAt: skill.createdAt,
    });
    expect(res.body.data.files.map((f: { filePath: string }) => f.filePath).sort()).toEqual([
      'SKILL.md',
      'docs/usage.md',
    ]);
    const manifestFile = res.body.data.files.find((f: { filePath: string }) => f.filePath === 'SKILL.md');
    expect(manifestFile.id).toBe(skill.files.find((f: { filePath: string }) => f.filePath === 'SKILL.md').id);
    expect(manifestFile.createdAt).toBe(skill.createdAt);
    expect((await admin.get(`${skills(p)}/editable`)).body.data).toEqual(res.body.data);
    expect(oldScript).toBeDefined();
  });

  test.each([
    ['the body is empty', {}, 400, ''],
    ['SKILL.md is removed', { removeFilePaths: ['SKILL.md'] }, 400, '/removeFilePaths/0'],
    ['a removed file does not exist', { removeFilePaths: ['nope.txt'] }, 422, '/removeFilePaths/0'],
    [
      'SKILL.md renames the skill',
      { files: [{ filePath: 'SKILL.md', content: skillManifest('renamed') }] },
      422,
      '/files/0/content',
    ],
    [
      'SKILL.md loses its description',
      { files: [{ filePath: 'SKILL.md', content: '---\nname: fixed\n---\n' }] },
      400,
      '/files/0/content',
    ],
    [
      'a path is both added and removed',
      { files: [{ filePath: 'x.md', content: 'x' }], removeFilePaths: ['x.md'] },
      400,
      '/removeFilePaths/0',
    ],
  ])('when an update has %s, then it is refused and the skill is unchanged', async (_what, body, status, pointer) => {
    const p = aProject();
    const skill = await aStoredSkill(admin, p, 'fixed');
    expectProblem(await admin.patch(`${skills(p)}/fixed`, body), status, pointer);
    expect((await admin.get(`${skills(p)}/fixed`)).body.data).toEqual(skill);
  });

  test('when a skill is deleted, then it answers 204 and is gone; a second delete or update is 404', async () => {
    const p = aProject();
    await aStoredSkill(admin, p, 'short-lived');
    const del = await admin.delete(`${skills(p)}/short-lived`);
    expect(del.status).toBe(204);
    expect(del.body).toBeUndefined();
    expectProblem(await admin.get(`${skills(p)}/short-lived`), 404);
    expectProblem(await admin.delete(`${skills(p)}/short-lived`), 404);
    expectProblem(await admin.patch(`${skills(p)}/short-lived`, { removeFilePaths: ['x'] }), 404);
    expect(await total(p)).toBe(0);
  });

  test('when many updates arrive at once, then every file lands', async () => {
    const p = aProject();
    await aStoredSkill(admin, p, 'busy');
    const paths = Array.from({ length: 6 }, (_, i) => `notes/${i}.md`);
    const results = await Promise.all(
      paths.map((filePath) => admin.patch(`${skills(p)}/busy`, { files: [{ filePath, content: filePath }] })),
    );
    expect(results.map((r) => r.status)).toEqual(paths.map(() => 200));
    const files = (await admin.get(`${skills(p)}/busy`)).body.data.files.map((f: { filePath: string }) => f.filePath);
    expect(files).toEqual(expect.arrayContaining(paths));
  });

  test('when skills are listed, then pagination defaults to page 1 of 10 and bounds are enforced', async () => {
    const p = aProject();
    for (let i = 0; i < 12; i++) await aStoredSkill(admin, p, `s-${i}`);
    const first = await admin.get(skills(p));
    expect(first.body.data).toHaveLength(10);
    expect(first.body.pagination).toEqual({ page: 1, limit: 10, total: 12, pages: 2, completedCount: 10 });
    const second = await admin.get(`${skills(p)}?page=2`);
    expect(second.body.data).toHaveLength(2);
    expect(second.body.pagination).toEqual({ page: 2, limit: 10, total: 12, pages: 2, completedCount: 12 });
    const ids = [...first.body.data, ...second.body.data].map((s: { id: string }) => s.id);
    expect(new Set(ids).size).toBe(12);
    expectProblem(await admin.get(`${skills(p)}?page=0`), 400, '#query/page');
    expectProblem(await admin.get(`${skills(p)}?limit=0`), 400, '#query/limit');
    expectProblem(await admin.get(`${skills(p)}?limit=101`), 400, '#query/limit');
    expect((await admin.get(`${skills(p)}?limit=100`)).body.data).toHaveLength(12);
  });

  test('when no credential is sent, then skill operations answer 401 and store nothing', async () => {
    const p = aProject();
    expect((await anonymous.get(skills(p))).status).toBe(401);
    expect((await anonymous.post(skills(p), aSkillInput())).status).toBe(401);
    expect((await anonymous.get(`${skills(p)}/x`)).status).toBe(401);
    expect(await total(p)).toBe(0);
  });

  test("when another tenant's token is used, then skill operations answer 403 and change nothing", async () => {
    const p = aProject();
    const skill = await aStoredSkill(admin, p, 'guarded');
    const other = client(stack.gatewayUrl, await aTenantToken(admin, `${p.tenantId}-other`));
    expect((await other.get(skills(p))).status).toBe(403);
    expect((await other.post(skills(p), aSkillInput())).status).toBe(403);
    expect((await other.get(`${skills(p)}/guarded`)).status).toBe(403);
    expect((await other.patch(`${skills(p)}/guarded`, { removeFilePaths: ['scripts/run.sh'] })).status).toBe(403);
    expect((await other.delete(`${skills(p)}/guarded`)).status).toBe(403);
    expect((await admin.get(`${skills(p)}/guarded`)).body.data).toEqual(skill);
    expect(await total(p)).toBe(1);
  });

  test("when a tenant's own token reads its skills, then it sees them; a viewer cannot create", async () => {
    const p = aProject();
    await aStoredSkill(admin, p);
    const viewer = client(stack.gatewayUrl, await aTenantToken(admin, p.tenantId, 'viewer'));
    expect((await viewer.get(skills(p))).body.pagination.total).toBe(1);
    expect((await viewer.post(skills(p), aSkillInput())).status).toBe(403);
  });
});
