import { z } from 'zod';
import { operation } from '../operation';
import { getOperation } from '../record-operations';
import { erasingServices } from '../services';
import { ProjectPath, Rid, dataReply } from '../common';

/**
 * The services that hold conversation data: each erases its part of a conversation (the gateway: the stored answers
 * of Idempotency-Key requests that named the conversation). From `erases` in libs/contracts/src/services.ts.
 */
export const CONVERSATION_ERASURE_SERVICES = erasingServices('conversation');

/**
 * The services that hold project data: each erases every document (and Redis key) of the project it stores; the
 * gateway erases the stored answers of the project's Idempotency-Key requests.
 */
export const PROJECT_ERASURE_SERVICES = erasingServices('project');

export const ErasureService = z.enum(PROJECT_ERASURE_SERVICES);
export type ErasureService = z.infer<typeof ErasureService>;

export const ErasureState = z.enum(['pending', 'done']);

export const Erasure = z.object({
  id: z.string(),
  kind: z.enum(['conversation', 'project']),
  conversationId: z.string().nullable().describe('The erased conversation (null for a project erasure)'),
  status: ErasureState.describe('`done` once every service has erased its part'),
  services: z.array(z.object({ service: ErasureService, state: ErasureState, doneAt: z.string().nullable() })),
  createdAt: z.string(),
  completedAt: z.string().nullable(),
});
export type Erasure = z.infer<typeof Erasure>;

/** The erasure job each owning service consumes from the ERASURE stream (libs/contracts internal/streams.ts). */
export const ErasureRequest = z.object({
  erasureId: z.string(),
  tenantId: z.string(),
  projectId: z.string(),
  /** Set for a conversation erasure; absent for a project erasure. */
  conversationId: z.string().nullable(),
  services: z.array(ErasureService),
});
export type ErasureRequest = z.infer<typeof ErasureRequest>;

/** The runEventsErased notice: the run events of a project (conversationId null) or of one conversation are gone. */
export const RunEventsErased = z.object({
  tenantId: z.string(),
  projectId: z.string(),
  conversationId: z.string().nullable(),
});

/** Payload of the `projectErasing` notice: a project's erasure started (`erasing: true`) or is done. */
export const ProjectErasing = z.object({ tenantId: z.string(), projectId: z.string(), erasing: z.boolean() });

export const ReportErasureRequest = z.object({
  tenantId: z.string(),
  projectId: z.string(),
  erasureId: z.string(),
  service: ErasureService,
});
export const ReportErasureReply = z.object({ status: ErasureState });

const tags = ['Erasure'];
const base = '/manage/tenants/{tenantId}/projects/{projectId}';
export const ConversationPath = ProjectPath.extend({ conversationId: Rid });
export const ErasurePath = ProjectPath.extend({ id: Rid });

export const deleteConversation = operation({
  operationId: 'deleteConversation',
  summary: "Erase a conversation's data in every service",
  description:
    'Starts an erasure job (202): the run events with this `conversationId`, its analytics events, its feedback and its evaluation results are removed by the services that hold them. Follow it with `getErasure`. Repeating the request while a job for the conversation is pending answers that job.',
  tags,
  method: 'delete',
  path: `${base}/conversations/{conversationId}`,
  service: 'management',
  subject: 'svc.management.conversations.delete',
  auth: 'manage',
  permission: 'edit',
  params: ConversationPath,
  reply: { status: 202, body: dataReply(Erasure) },
  errors: [400, 401, 403, 409, 422, 500],
});

export const deleteProject = operation({
  operationId: 'deleteProject',
  summary: 'Erase a project in every service',
  description:
    'Starts an erasure job (202): every service removes every document of the project. Until the job is done, writes to the project answer 409. Repeating the request while the job is pending answers that job.',
  tags,
  method: 'delete',
  path: base,
  service: 'management',
  subject: 'svc.management.projects.delete',
  auth: 'manage',
  permission: 'admin',
  params: ProjectPath,
  reply: { status: 202, body: dataReply(Erasure) },
  errors: [400, 401, 403, 422, 500],
});

export const getErasure = getOperation({
  operationId: 'getErasure',
  summary: 'Get an erasure job and the state of each service',
  tags,
  path: `${base}/erasures/{id}`,
  service: 'management',
  subject: 'svc.management.erasures.get',
  auth: 'manage',
  permission: 'view',
  params: ErasurePath,
  item: Erasure,
  errors: [400, 401, 403, 404, 422, 500],
});

/**
 * The Redis set (under REDIS_KEY_PREFIX) of the projects being erased, members `erasingProjectMember(scope)`:
 * management adds a project when it starts the job and removes it when the job is done, announcing both with the
 * `projectErasing` notice. Every gateway keeps a copy (read at start and again every few seconds) and refuses writes
 * to those projects (409).
 */
export const ERASING_PROJECTS_KEY = 'erasing-projects';
export const erasingProjectMember = (scope: { tenantId: string; projectId: string }) =>
  `${scope.tenantId}:${scope.projectId}`;
