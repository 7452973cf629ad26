import { z } from 'zod';
import { createOperation, deleteOperation, getOperation, listOperation, updateOperation } from '../record-operations';
import { Rid, ProjectPath } from '../common';

/**
 * Skills (SPEC "Skills"), in the Agent Skills layout: a skill is a set of files, one of which is `SKILL.md` at the
 * root. Its YAML front matter gives `name` (also the skill id), `description` and `metadata`; the Markdown after
 * the front matter is the skill's `content`.
 */

export const SkillFile = z.object({
  id: z.string(),
  skillId: z.string(),
  filePath: z.string(),
  content: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type SkillFile = z.infer<typeof SkillFile>;

export const Skill = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  content: z.string(),
  metadata: z.record(z.string(), z.string()).nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Skill = z.infer<typeof Skill>;
export const SkillWithFiles = Skill.extend({ files: z.array(SkillFile) });
export type SkillWithFiles = z.infer<typeof SkillWithFiles>;

export const SKILL_MANIFEST = 'SKILL.md';
export const MAX_SKILL_FILES = 100;

/** A relative path inside the skill: `/`-separated segments, no `.`/`..` segments, no leading `/`, no backslash. */
export const SkillFilePath = z
  .string()
  .min(1)
  .max(512)
  .regex(/^[^\\\0\r\n]+$/, 'must not contain a backslash, NUL or line break')
  .refine((p) => !p.startsWith('/') && p.split('/').every((s) => s !== '' && s !== '.' && s !== '..'), {
    message: 'must be a relative path without empty, "." or ".." segments',
  });

export const SkillFileInput = z.strictObject({
  filePath: SkillFilePath,
  content: z.string().max(500_000),
});

const uniquePaths = (files: Array<{ filePath: string }>, ctx: z.RefinementCtx, at: string) => {
  const seen = new Set<string>();
  files.forEach((f, i) => {
    if (seen.has(f.filePath))
      ctx.addIssue({ code: 'custom', message: `filePath "${f.filePath}" is given twice`, path: [at, i, 'filePath'] });
    seen.add(f.filePath);
  });
};

export const SkillCreate = z
  .strictObject({
    files: z.array(SkillFileInput).min(1).max(MAX_SKILL_FILES),
  })
  .superRefine((b, ctx) => {
    uniquePaths(b.files, ctx, 'files');
    if (!b.files.some((f) => f.filePath === SKILL_MANIFEST)) {
      ctx.addIssue({ code: 'custom', message: `must contain a ${SKILL_MANIFEST} file at the root`, path: ['files'] });
    }
  });
export type SkillCreate = z.infer<typeof SkillCreate>;

export const SkillUpdate = z
  .strictObject({
    files: z
      .array(SkillFileInput)
      .min(1)
      .max(MAX_SKILL_FILES)
      .optional()
      .describe('Files added, or replaced by filePath'),
    removeFilePaths: z
      .array(SkillFilePath)
      .min(1)
      .max(MAX_SKILL_FILES)
      .optional()
      .describe(`Files removed by filePath (never ${SKILL_MANIFEST})`),
  })
  .superRefine((b, ctx) => {
    if (!b.files && !b.removeFilePaths)
      ctx.addIssue({ code: 'custom', message: 'give files, removeFilePaths or both', path: [] });
    if (b.files) uniquePaths(b.files, ctx, 'files');
    b.removeFilePaths?.forEach((p, i) => {
      if (p === SKILL_MANIFEST)
        ctx.addIssue({ code: 'custom', message: `${SKILL_MANIFEST} cannot be removed`, path: ['removeFilePaths', i] });
      if (b.files?.some((f) => f.filePath === p))
        ctx.addIssue({ code: 'custom', message: 'is also given in files', path: ['removeFilePaths', i] });
    });
  });
export type SkillUpdate = z.infer<typeof SkillUpdate>;

const tags = ['Skills'];
const base = '/manage/tenants/{tenantId}/projects/{projectId}/skills';
/** The problems a skill operation answers (a write to the project also 409, see `operation()`). */
const skillErrors = [400, 401, 403, 404, 422, 500];
const SkillIdPath = ProjectPath.extend({ id: Rid });

export const listSkills = listOperation({
  operationId: 'listSkills',
  summary: 'List the skills of a project',
  tags,
  path: base,
  service: 'management',
  subject: 'svc.management.skills.list',
  auth: 'manage',
  permission: 'view',
  params: ProjectPath,
  item: Skill,
  errors: skillErrors,
});

export const createSkill = createOperation({
  operationId: 'createSkill',
  summary: 'Create a skill from its files',
  description: `The files must include ${SKILL_MANIFEST} whose YAML front matter has name (lowercase letters, digits and single hyphens, at most 64; it becomes the id), description (1 to 1024) and optionally metadata (string to string). An existing name is a 409.`,
  tags,
  path: base,
  service: 'management',
  subject: 'svc.management.skills.create',
  auth: 'manage',
  permission: 'edit',
  params: ProjectPath,
  body: SkillCreate,
  item: SkillWithFiles,
  errors: skillErrors,
});

export const getSkill = getOperation({
  operationId: 'getSkill',
  summary: 'Get a skill with its files',
  tags,
  path: `${base}/{id}`,
  service: 'management',
  subject: 'svc.management.skills.get',
  auth: 'manage',
  permission: 'view',
  params: SkillIdPath,
  item: SkillWithFiles,
  errors: skillErrors,
  addition: true,
});

export const updateSkill = updateOperation({
  operationId: 'updateSkill',
  summary: 'Add, replace or remove files of a skill',
  description: `A new ${SKILL_MANIFEST} re-reads description, metadata and content; its name must stay the skill id (422 otherwise).`,
  tags,
  path: `${base}/{id}`,
  service: 'management',
  subject: 'svc.management.skills.update',
  auth: 'manage',
  permission: 'edit',
  params: SkillIdPath,
  body: SkillUpdate,
  item: SkillWithFiles,
  errors: skillErrors,
  addition: true,
});

export const deleteSkill = deleteOperation({
  operationId: 'deleteSkill',
  summary: 'Delete a skill and its files',
  description: 'A skill still attached to a sub-agent is a 409: detach it first.',
  tags,
  path: `${base}/{id}`,
  service: 'management',
  subject: 'svc.management.skills.delete',
  auth: 'manage',
  permission: 'edit',
  params: SkillIdPath,
  errors: skillErrors,
  addition: true,
});
