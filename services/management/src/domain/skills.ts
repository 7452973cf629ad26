import { parse as parseYaml } from 'yaml';
import {
  MAX_SKILL_FILES,
  SKILL_MANIFEST,
  type ProjectScope,
  type SkillCreate,
  type SkillUpdate,
} from '@platform/contracts';
import { AppError } from '@platform/problems';
import { randomId } from '@platform/secrets';
import { type StoredSkill, type StoredSkillFile, toSkill, toSkillWithFiles } from '../data/skill.repo';
import { skillLockKey, type AgentDeps } from './agents';

export type SkillDeps = AgentDeps;

/** Agent Skills naming: lowercase letters and digits in hyphen-separated runs, at most 64 characters. */
const SKILL_NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const FRONT_MATTER = /^\uFEFF?---[ \t]*\r?\n(?:([\s\S]*?)\r?\n)?---[ \t]*(?:\r?\n|$)/;

export interface Manifest {
  name: string;
  description: string;
  metadata: Record<string, string> | null;
  content: string;
}

const notFound = (id: string) => new AppError('not_found', `Skill "${id}" not found`);

function invalidManifest(
  pointer: string,
  detail: string,
  code: 'bad_request' | 'unprocessable_entity' = 'bad_request',
) {
  return new AppError(code, `${SKILL_MANIFEST} is invalid (${pointer}: ${detail})`, { errors: [{ pointer, detail }] });
}

/** Reads SKILL.md: YAML front matter (name, description, metadata; other keys are kept in the file only) and the body. */
export function readManifest(text: string, pointer: string): Manifest {
  const m = FRONT_MATTER.exec(text);
  if (!m) throw invalidManifest(pointer, 'must start with YAML front matter between "---" lines');
  let data: unknown;
  try {
    data = parseYaml(m[1] ?? '');
  } catch (err) {
    throw invalidManifest(pointer, `front matter is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    throw invalidManifest(pointer, 'front matter must be a YAML mapping');
  const fm = data as Record<string, unknown>;
  const name = fm.name;
  if (typeof name !== 'string' || name.length < 1 || name.length > 64 || !SKILL_NAME.test(name)) {
    throw invalidManifest(
      pointer,
      'front matter "name" is required: 1 to 64 lowercase letters, digits and single inner hyphens',
    );
  }
  const description = fm.description;
  if (typeof description !== 'string' || description.trim().length < 1 || description.length > 1024) {
    throw invalidManifest(pointer, 'front matter "description" is required: a string of 1 to 1024 characters');
  }
  let metadata: Record<string, string> | null = null;
  if (fm.metadata !== undefined && fm.metadata !== null) {
    if (typeof fm.metadata !== 'object' || Array.isArray(fm.metadata))
      throw invalidManifest(pointer, 'front matter "metadata" must be a mapping of string to string');
    metadata = {};
    for (const [k, v] of Object.entries(fm.metadata as Record<string, unknown>)) {
      if (typeof v !== 'string')
        throw invalidManifest(pointer, `front matter "metadata.${k}" must be a string (quote it)`);
      metadata[k] = v;
    }
  }
  return { name, description, metadata, content: text.slice(m[0].length).replace(/^(\r?\n)+/, '') };
}

function manifestOf(files: Array<{ filePath: string; content: string }>, prefix = '/files'): Manifest | undefined {
  const i = files.findIndex((f) => f.filePath === SKILL_MANIFEST);
  return i < 0 ? undefined : readManifest(files[i]!.content, `${prefix}/${i}/content`);
}

export async function addSkill(deps: SkillDeps, scope: ProjectScope, input: SkillCreate) {
  const manifest = manifestOf(input.files);
  if (!manifest) throw invalidManifest('/files', `must contain a ${SKILL_MANIFEST} file at the root`);
  const now = new Date();
  const doc: Omit<StoredSkill, '_id'> = {
    id: manifest.name,
    ...scope,
    name: manifest.name,
    description: manifest.description,
    content: manifest.content,
    metadata: manifest.metadata ? JSON.stringify(manifest.metadata) : null,
    files: input.files.map((f) => ({
      id: randomId(16),
      filePath: f.filePath,
      content: f.content,
      createdAt: now,
      updatedAt: now,
    })),
    revision: 1,
    createdAt: now,
    updatedAt: now,
  };
  const saved = await deps.skills.insert(doc);
  if (!saved) throw new AppError('conflict', `A skill named "${manifest.name}" already exists in this project`);
  return toSkillWithFiles(saved);
}

export async function findSkill(deps: SkillDeps, scope: ProjectScope, id: string) {
  const doc = await deps.skills.findById(scope, id);
  if (!doc) throw notFound(id);
  return toSkillWithFiles(doc);
}

export async function listSkillsPage(deps: SkillDeps, scope: ProjectScope, q: { page: number; limit: number }) {
  const { rows, total } = await deps.skills.list(scope, q.page, q.limit);
  return { rows: rows.map(toSkill), total };
}

/** Adds or replaces files by path and removes others; a new SKILL.md re-reads description, metadata and content. */
export async function changeSkill(deps: SkillDeps, scope: ProjectScope, id: string, input: SkillUpdate) {
  return deps.lock(skillLockKey(scope, id), () => writeSkillChange(deps, scope, id, input));
}

async function writeSkillChange(deps: SkillDeps, scope: ProjectScope, id: string, input: SkillUpdate) {
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = await deps.skills.findById(scope, id);
    if (!current) throw notFound(id);
    const now = new Date();
    const files = new Map<string, StoredSkillFile>(current.files.map((f) => [f.filePath, f]));
    (input.removeFilePaths ?? []).forEach((p, i) => {
      if (!files.delete(p)) {
        throw new AppError('unprocessable_entity', `The skill has no file "${p}"`, {
          errors: [{ pointer: `/removeFilePaths/${i}`, detail: `the skill has no file "${p}"` }],
        });
      }
    });
    for (const f of input.files ?? []) {
      const old = files.get(f.filePath);
      files.set(f.filePath, {
        id: old?.id ?? randomId(16),
        filePath: f.filePath,
        content: f.content,
        createdAt: old?.createdAt ?? now,
        updatedAt: now,
      });
    }
    if (files.size > MAX_SKILL_FILES) {
      throw new AppError('unprocessable_entity', `A skill holds at most ${MAX_SKILL_FILES} files`, {
        errors: [{ pointer: '/files', detail: `a skill holds at most ${MAX_SKILL_FILES} files` }],
      });
    }
    const set: Partial<StoredSkill> = { files: [...files.values()], updatedAt: now };
    const manifest = manifestOf(input.files ?? []);
    if (manifest) {
      if (manifest.name !== current.id) {
        const i = input.files!.findIndex((f) => f.filePath === SKILL_MANIFEST);
        throw invalidManifest(
          `/files/${i}/content`,
          `front matter "name" must stay "${current.id}" (a skill cannot be renamed)`,
          'unprocessable_entity',
        );
      }
      Object.assign(set, {
        description: manifest.description,
        content: manifest.content,
        metadata: manifest.metadata ? JSON.stringify(manifest.metadata) : null,
      });
    }
    const saved = await deps.skills.update(current, set);
    if (saved) return toSkillWithFiles(saved);
  }
  throw new AppError('conflict', 'The skill changed concurrently; retry');
}

export async function removeSkill(deps: SkillDeps, scope: ProjectScope, id: string) {
  await deps.lock(skillLockKey(scope, id), () => removeUnusedSkill(deps, scope, id));
}

async function removeUnusedSkill(deps: SkillDeps, scope: ProjectScope, id: string) {
  const current = await deps.skills.findById(scope, id);
  if (!current) throw notFound(id);
  const users = await deps.agents.usingSkill(scope, id);
  if (users.length) {
    throw new AppError(
      'conflict',
      `Skill "${id}" is attached to sub-agents of agent(s) ${users.map((u) => `"${u}"`).join(', ')}; detach it first`,
    );
  }
  const removed = await deps.skills.remove(current);
  if (!removed) throw notFound(id);
}
