import { applyPatch, compare, deepClone } from 'fast-json-patch';
import { z } from 'zod';
import {
  evalWorkSubject,
  FullAgent,
  IMPROVEMENT_TURN_WORK_TYPE,
  JsonPatchOperation,
  type Feedback,
  type ImprovementStatus,
  type ImprovementTurnWork,
  type PendingEvent,
  type ProjectScope,
} from '@platform/contracts';
import { AppError } from '@platform/problems';
import { getLogger } from '@platform/logger';
import { randomId } from '@platform/secrets';
import {
  type ImprovementRepo,
  type BranchState,
  type Turn,
  branchKey,
  type StoredDecision,
  type StoredTurnResult,
} from '../data/improvement.repo';
import type { Platform } from '../clients/platform';
import type { ChatMessage, Llm } from '../clients/llm';

const log = getLogger('evals.improvements');

export interface ImprovementDeps {
  improvements: ImprovementRepo;
  platform: Platform;
  llm: Llm;
  /** The most agents one branch copies (a project with more cannot be improved as a whole). */
  maxAgents: number;
}

type Definition = Record<string, unknown>;
/** The agents of a branch, keyed by agent id (the document the assistant patches: paths `/agents/<agentId>/…`). */
type Agents = Record<string, Definition>;

const NOT_CONFIGURED =
  'The improvement assistant is not configured (set LLM_BASE_URL); messages are recorded but no edits are made';

/** The definition without server timestamps (they are not edits). */
export function withoutTimestamps(agent: Definition): Definition {
  const { createdAt: _c, updatedAt: _u, ...rest } = agent;
  const subAgents: Record<string, unknown> = {};
  for (const [k, sub] of Object.entries((rest.subAgents ?? {}) as Record<string, Definition>)) {
    const { createdAt: _sc, updatedAt: _su, ...s } = sub;
    subAgents[k] = s;
  }
  return { ...rest, subAgents };
}

const latest = (state: BranchState): Turn | undefined => state.turns[state.turns.length - 1];

/** The latest answered turn before `seq` (all turns when omitted). */
function lastResult(state: BranchState, beforeSeq = Number.POSITIVE_INFINITY): StoredTurnResult | null {
  for (let i = state.turns.length - 1; i >= 0; i--) {
    const t = state.turns[i]!;
    if (t.seq < beforeSeq && t.result) return t.result;
  }
  return null;
}

/** The branch's edits: the agents whose branch definition differs from the copy, as of a turn's answer. */
const editsOf = (result: StoredTurnResult | null): Agents => (result ? (JSON.parse(result.edits) as Agents) : {});

/** A merge is finished when every agent it names has its step (applied or skipped). */
const mergeFinished = (state: BranchState, decision: StoredDecision) =>
  (decision.agentIds ?? []).every((id) => state.steps.some((s) => s.agentId === id));

export function statusOf(state: BranchState): { status: ImprovementStatus; statusMessage: string | null } {
  const { decision } = state;
  if (decision?.decision === 'merged') {
    if (!mergeFinished(state, decision))
      return {
        status: 'merging',
        statusMessage: 'The merge is being written to the live agents; call merge again to finish it now',
      };
    const skipped = state.steps.filter((s) => s.outcome === 'skipped');
    return {
      status: 'merged',
      statusMessage: skipped.length
        ? `Not written: ${skipped.map((s) => `agent "${s.agentId}" (${s.detail})`).join('; ')}`
        : null,
    };
  }
  if (decision) return { status: decision.decision, statusMessage: null };
  const turn = latest(state);
  if (!turn)
    return { status: 'failed', statusMessage: 'The branch was made without its first message; send one with continue' };
  if (!turn.result) return { status: 'running', statusMessage: null };
  return { status: turn.result.status, statusMessage: turn.result.statusMessage ?? null };
}

function updatedAt(state: BranchState): string {
  const times = [new Date(state.branch.createdAt).getTime()];
  for (const t of state.turns) times.push(new Date(t.result?.finishedAt ?? t.createdAt).getTime());
  if (state.decision) times.push(new Date(state.decision.at).getTime());
  for (const s of state.steps) times.push(new Date(s.at).getTime());
  return new Date(Math.max(...times)).toISOString();
}

async function load(deps: ImprovementDeps, scope: ProjectScope, branchName: string): Promise<BranchState> {
  const state = await deps.improvements.find(scope, branchName);
  if (!state) throw new AppError('not_found', `Improvement branch "${branchName}" not found`);
  return state;
}

/** A branch takes messages, merge and reject only while open and not busy. */
function assertOpen(state: BranchState, action: string): void {
  if (state.decision)
    throw new AppError(
      'conflict',
      `Improvement branch "${state.branch.branchName}" is ${state.decision.decision}; it cannot be ${action}`,
    );
  if (statusOf(state).status === 'running')
    throw new AppError(
      'conflict',
      `The assistant is still working on the previous message of "${state.branch.branchName}"`,
    );
}

const AssistantAnswer = z.object({
  reply: z.string().max(100_000).optional(),
  patch: z.array(JsonPatchOperation).max(500).optional(),
});

const systemPrompt = (focus: string) =>
  [
    'You improve the definitions of the AI agents of a project using feedback on their conversations.',
    'The definitions are one JSON document {"agents": {"<agentId>": <agent definition>}}.',
    `The feedback concerns agent "${focus}"; edit other agents only when that helps.`,
    'Answer with one JSON object: {"reply": "<what you changed and why>", "patch": [<RFC 6902 JSON Patch operations against that document, paths like /agents/<agentId>/...>]}.',
    'Use an empty patch when no change is needed. Never add or remove agents and never change an agent id.',
  ].join('\n');

type TurnOutcome = Pick<StoredTurnResult, 'status' | 'statusMessage' | 'assistantMessage'> & { agents: Agents };

/** Asks the assistant; the branch's agents change only when its patch applies cleanly and leaves every definition valid. */
async function assistantTurn(
  deps: ImprovementDeps,
  branch: { agentId: string; context: string; history: Turn[] },
  agents: Agents,
  message: string,
): Promise<TurnOutcome> {
  const messages: ChatMessage[] = [
    { role: 'system', content: systemPrompt(branch.agentId) },
    { role: 'user', content: branch.context },
  ];
  for (const t of branch.history) {
    messages.push({ role: 'user', content: t.userMessage });
    if (t.result?.assistantMessage) messages.push({ role: 'assistant', content: t.result.assistantMessage });
  }
  messages.push({ role: 'user', content: `${message}\n\nCurrent definitions:\n${JSON.stringify({ agents })}` });
  const unchanged = { agents };
  let answer: z.infer<typeof AssistantAnswer>;
  try {
    const parsed = AssistantAnswer.safeParse(await deps.llm.completeJson(messages));
    if (!parsed.success)
      return {
        status: 'failed',
        statusMessage: 'The assistant answered without a valid {reply, patch} object',
        assistantMessage: null,
        ...unchanged,
      };
    answer = parsed.data;
  } catch (err) {
    return {
      status: 'failed',
      statusMessage: `The assistant could not answer: ${(err as Error).message}`,
      assistantMessage: null,
      ...unchanged,
    };
  }
  const reply = answer.reply ?? null;
  if (!answer.patch?.length)
    return { status: 'completed', statusMessage: null, assistantMessage: reply ?? '', ...unchanged };
  let next: Agents;
  try {
    next = (applyPatch(deepClone({ agents }), answer.patch as never, true, false).newDocument as { agents: Agents })
      .agents;
  } catch (err) {
    return {
      status: 'failed',
      statusMessage: `The assistant's edit does not apply: ${(err as Error).message.split('\n')[0]}`,
      assistantMessage: reply,
      ...unchanged,
    };
  }
  const invalid = (issue: string): TurnOutcome => ({
    status: 'failed',
    statusMessage: `The assistant's edit would make the definitions invalid (${issue})`,
    assistantMessage: reply,
    ...unchanged,
  });
  if (!next || typeof next !== 'object' || Array.isArray(next)) return invalid('/agents must stay an object');
  const before = Object.keys(agents).sort().join('\n');
  if (Object.keys(next).sort().join('\n') !== before) return invalid('it adds or removes agents');
  for (const [id, def] of Object.entries(next)) {
    const valid = FullAgent.safeParse(def);
    if (!valid.success)
      return invalid(`/agents/${id}/${valid.error.issues[0]?.path.join('/')}: ${valid.error.issues[0]?.message}`);
    if (valid.data.id !== id) return invalid(`it changes the id of agent "${id}"`);
  }
  return { status: 'completed', statusMessage: null, assistantMessage: reply ?? '', agents: next };
}

function contextOf(
  agentId: string,
  feedback: Array<Pick<Feedback, 'id' | 'type' | 'details'>>,
  additionalContext: string | null,
): string {
  return JSON.stringify({ agentId, feedback, additionalContext });
}

function turnWork(scope: ProjectScope, branchName: string, seq: number): PendingEvent {
  const id = `imp_${randomId(24)}`;
  const data: ImprovementTurnWork = { ...scope, branchName, seq };
  return {
    id,
    subject: evalWorkSubject(scope.tenantId),
    envelope: {
      id,
      type: IMPROVEMENT_TURN_WORK_TYPE,
      version: 1,
      tenantId: scope.tenantId,
      projectId: scope.projectId,
      occurredAt: new Date().toISOString(),
      data,
    },
  };
}

/**
 * Records message `seq`: with an assistant, the turn and its work item are one insert (the worker answers it);
 * without one, the answer "not configured" is stored at once. False when another message took `seq`.
 */
async function recordMessage(
  deps: ImprovementDeps,
  scope: ProjectScope,
  branchName: string,
  seq: number,
  userMessage: string,
  edits: Agents,
): Promise<boolean> {
  const key = branchKey(scope, branchName);
  const configured = deps.llm.configured;
  const claimed = await deps.improvements.insertTurn(
    key,
    seq,
    { userMessage, createdAt: new Date() },
    configured ? [turnWork(scope, branchName, seq)] : [],
  );
  if (claimed && !configured) {
    await deps.improvements.insertResult(key, seq, {
      status: 'not_configured',
      statusMessage: NOT_CONFIGURED,
      assistantMessage: null,
      edits: JSON.stringify(edits),
    });
  }
  return claimed;
}

/** POST P/improvements/trigger: copies every agent of the project onto a new branch and queues the first message. */
export async function triggerImprovement(
  deps: ImprovementDeps,
  scope: ProjectScope,
  feedbackIds: string[],
  additionalContext: string | undefined,
) {
  const ids = [...new Set(feedbackIds)];
  const feedback = await deps.platform.feedbackByIds(scope, ids);
  const missing = ids.filter((id) => !feedback.some((f) => f.id === id));
  if (missing.length) throw new AppError('not_found', `Feedback not found: ${missing.join(', ')}`);
  const named = new Set(feedback.map((f) => f.agentId).filter((a): a is string => Boolean(a)));
  if (!named.size) {
    for (const f of feedback) {
      const agentId = (await deps.platform.conversationEvents(scope, f.conversationId)).find((e) => e.agentId)?.agentId;
      if (agentId) named.add(agentId);
    }
  }
  if (named.size === 0)
    throw new AppError(
      'unprocessable_entity',
      'The feedback names no agent (neither the feedback nor its conversations carry an agentId)',
    );
  if (named.size > 1)
    throw new AppError(
      'unprocessable_entity',
      `The feedback concerns several agents (${[...named].join(', ')}); trigger one improvement per agent`,
    );
  const agentId = [...named][0]!;
  const live = await deps.platform.projectAgentDefinitions(scope, deps.maxAgents);
  if (!live.some((a) => a.id === agentId))
    throw new AppError('unprocessable_entity', `Agent "${agentId}" of the feedback does not exist`);

  const copyId = randomId(24);
  await deps.improvements.insertBaseAgents(
    copyId,
    live.map((a) => ({
      agentId: a.id,
      definition: JSON.stringify(withoutTimestamps(a as Definition)),
      updatedAt: typeof a.updatedAt === 'string' ? a.updatedAt : null,
    })),
  );
  const feedbackItems = feedback.map((f) => ({
    createdAt: f.createdAt,
    details: f.details ?? null,
    id: f.id,
    type: f.type,
  }));
  const conversationId = `conv_${randomId(20)}`;
  let branchName = '';
  for (let attempt = 0; ; attempt++) {
    branchName = `improvement_${agentId}_${new Date().toISOString().replace(/[:.]/g, '-')}${attempt ? `-${attempt}` : ''}`;
    const inserted = await deps.improvements.insertBranch({
      branchName,
      ...scope,
      agentId,
      agentIds: live.map((a) => a.id),
      copyId,
      conversationId,
      feedbackItems: JSON.stringify(feedbackItems),
      additionalContext: additionalContext ?? null,
      createdAt: new Date(),
    });
    if (inserted) break;
    if (attempt === 4) throw new AppError('conflict', 'Could not name the improvement branch; retry');
  }
  const userMessage = `Improve agent "${agentId}" using ${feedback.length} feedback item(s)${additionalContext ? `. Additional context: ${additionalContext}` : ''}`;
  await recordMessage(deps, scope, branchName, 1, userMessage, {});
  return { branchName, conversationId };
}

/** POST P/improvements/{branchName}/continue: queues another message. */
export async function continueImprovement(
  deps: ImprovementDeps,
  scope: ProjectScope,
  branchName: string,
  message: string,
) {
  const state = await load(deps, scope, branchName);
  assertOpen(state, 'continued');
  const seq = (latest(state)?.seq ?? 0) + 1;
  if (!(await recordMessage(deps, scope, branchName, seq, message, editsOf(lastResult(state))))) {
    throw new AppError(
      'conflict',
      `Another message was sent to "${branchName}" at the same time; read the conversation and retry`,
    );
  }
  return { conversationId: state.branch.conversationId };
}

/**
 * The worker's side (EVAL_WORK queue): answers message `seq` of a branch and stores the answer once. A redelivery
 * (the worker died, or another replica answered first) finds the answer stored and does nothing. Transient failures
 * (database, NATS) throw, so the message comes back; assistant failures are stored as a `failed` answer.
 */
export async function answerTurn(deps: ImprovementDeps, work: ImprovementTurnWork): Promise<void> {
  const scope = { tenantId: work.tenantId, projectId: work.projectId };
  const state = await deps.improvements.find(scope, work.branchName);
  const turn = state?.turns.find((t) => t.seq === work.seq);
  if (!state || !turn || turn.result) return;
  const key = branchKey(scope, work.branchName);
  const previous = editsOf(lastResult(state, work.seq));
  if (!deps.llm.configured) {
    await deps.improvements.insertResult(key, work.seq, {
      status: 'not_configured',
      statusMessage: NOT_CONFIGURED,
      assistantMessage: null,
      edits: JSON.stringify(previous),
    });
    return;
  }
  const base: Agents = {};
  for (const b of await deps.improvements.baseAgents(state.branch.copyId))
    base[b.agentId] = JSON.parse(b.definition) as Definition;
  const agents: Agents = { ...base, ...previous };
  const feedback = JSON.parse(state.branch.feedbackItems) as Feedback[];
  const context = contextOf(state.branch.agentId, feedback, state.branch.additionalContext ?? null);
  const outcome = await assistantTurn(
    deps,
    { agentId: state.branch.agentId, context, history: state.turns.filter((t) => t.seq < work.seq) },
    agents,
    turn.userMessage,
  );
  const edits: Agents = {};
  for (const [id, def] of Object.entries(outcome.agents))
    if (!base[id] || compare(base[id], def).length) edits[id] = def;
  const { agents: _a, ...answer } = outcome;
  if (!(await deps.improvements.insertResult(key, work.seq, { ...answer, edits: JSON.stringify(edits) }))) {
    log.info({ branchName: work.branchName, seq: work.seq }, 'turn already answered (redelivery); nothing stored');
  }
}

export async function improvementConversation(deps: ImprovementDeps, scope: ProjectScope, branchName: string) {
  const state = await load(deps, scope, branchName);
  const { status, statusMessage } = statusOf(state);
  const messages: Array<{ role: 'user' | 'assistant'; content: string; createdAt: string }> = [];
  for (const t of state.turns) {
    messages.push({ role: 'user', content: t.userMessage, createdAt: new Date(t.createdAt).toISOString() });
    if (t.result && t.result.assistantMessage != null)
      messages.push({
        role: 'assistant',
        content: t.result.assistantMessage,
        createdAt: new Date(t.result.finishedAt).toISOString(),
      });
  }
  return {
    conversationIds: [state.branch.conversationId],
    feedbackItems: JSON.parse(state.branch.feedbackItems),
    status,
    statusMessage,
    messages,
  };
}

export async function listImprovements(deps: ImprovementDeps, scope: ProjectScope) {
  const states = await deps.improvements.list(scope);
  return states
    .map((s) => ({
      branchName: s.branch.branchName,
      status: statusOf(s).status,
      updatedAt: updatedAt(s),
      agentId: s.branch.agentId,
    }))
    .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
}

/** The live definitions of some agents, without timestamps (absent: the agent no longer exists). */
async function liveAgents(deps: ImprovementDeps, scope: ProjectScope, ids: string[]): Promise<Agents> {
  const found = await Promise.all(ids.map((id) => deps.platform.agentDefinition(scope, id)));
  const out: Agents = {};
  ids.forEach((id, i) => {
    const live = found[i];
    if (live) out[id] = withoutTimestamps(live as Definition);
  });
  return out;
}

/** The agents the branch changed against their live definitions: RFC 6902 over `{agents: {…}}` (live → branch). */
export async function improvementDiff(deps: ImprovementDeps, scope: ProjectScope, branchName: string) {
  const state = await load(deps, scope, branchName);
  const edits = editsOf(
    state.decision?.decision === 'merged' ? resultAt(state, state.decision.resultSeq) : lastResult(state),
  );
  const agentIds = Object.keys(edits).sort();
  const live = await liveAgents(deps, scope, agentIds);
  const patch = compare({ agents: live }, { agents: edits }) as JsonPatchOperation[];
  return {
    branchName,
    targetBranch: 'main' as const,
    agentId: state.branch.agentId,
    agentIds,
    format: 'json-patch' as const,
    hasChanges: patch.length > 0,
    patch,
    liveMissing: agentIds.some((id) => !live[id]),
  };
}

const resultAt = (state: BranchState, seq: number | null | undefined) =>
  seq === null ? null : (state.turns.find((t) => t.seq === seq)?.result ?? null);

/** Management's answer to a replacement it refused, as the merge's problem. */
function mergeRefusal(err: unknown, agentId: string): AppError | null {
  if (!(err instanceof AppError)) return null;
  if (err.status === 409)
    return new AppError('conflict', `Agent "${agentId}" changed since the branch was made; start a new improvement`);
  if (err.status === 404) return new AppError('unprocessable_entity', `Agent "${agentId}" no longer exists`);
  if (err.status === 422)
    return new AppError(
      'unprocessable_entity',
      `The branch's definition of agent "${agentId}" is not valid for the project: ${err.message}`,
      { errors: err.errors },
    );
  return null;
}

/**
 * Writes every agent of a decided merge that has no step yet, each through management (which emits `agent.updated`)
 * with the copy's `updatedAt` as the expected version and the branch key as the idempotency key, then records the
 * step. Anything interrupted is finished by the next call (merge again, or the sweep); a write already made answers
 * the same, so nothing is written twice. An agent changed or made invalid since the check is skipped (recorded).
 */
async function finishMerge(deps: ImprovementDeps, state: BranchState, decision: StoredDecision): Promise<void> {
  const scope = { tenantId: state.branch.tenantId, projectId: state.branch.projectId };
  const key = branchKey(scope, state.branch.branchName);
  const edits = editsOf(resultAt(state, decision.resultSeq));
  const base = new Map((await deps.improvements.baseAgents(state.branch.copyId)).map((b) => [b.agentId, b]));
  for (const agentId of decision.agentIds ?? []) {
    if (state.steps.some((s) => s.agentId === agentId)) continue;
    try {
      await deps.platform.replaceAgentDefinition(scope, agentId, edits[agentId], {
        expectedUpdatedAt: base.get(agentId)?.updatedAt ?? undefined,
        changeId: key,
        branchName: state.branch.branchName,
      });
      await deps.improvements.insertMergeStep(key, agentId, 'applied', null);
    } catch (err) {
      const refused = mergeRefusal(err, agentId);
      if (!refused) throw err;
      log.warn({ branchName: state.branch.branchName, agentId, err: refused.message }, 'merge step skipped');
      await deps.improvements.insertMergeStep(key, agentId, 'skipped', refused.message);
    }
  }
  await deps.improvements.completeMerge(key);
}

/**
 * POST P/improvements/{branchName}/merge. Every changed agent is checked first (a dry run of its replacement:
 * exists, unchanged since the copy, valid), so a refusal writes nothing; then the decision is recorded, and then each
 * agent is written (finishMerge). Calling merge on a branch whose merge was interrupted finishes it.
 */
export async function mergeImprovement(deps: ImprovementDeps, scope: ProjectScope, branchName: string) {
  let state = await load(deps, scope, branchName);
  const key = branchKey(scope, branchName);
  if (state.decision?.decision === 'merged' && !mergeFinished(state, state.decision)) {
    await finishMerge(deps, state, state.decision);
    return { branchName, status: 'merged' as const };
  }
  assertOpen(state, 'merged');
  const result = lastResult(state);
  const edits = editsOf(result);
  const agentIds = Object.keys(edits).sort();
  const base = new Map((await deps.improvements.baseAgents(state.branch.copyId)).map((b) => [b.agentId, b]));
  for (const agentId of agentIds) {
    try {
      await deps.platform.replaceAgentDefinition(scope, agentId, edits[agentId], {
        expectedUpdatedAt: base.get(agentId)?.updatedAt ?? undefined,
        dryRun: true,
      });
    } catch (err) {
      throw mergeRefusal(err, agentId) ?? err;
    }
  }
  const decided = await deps.improvements.decide({
    _id: key,
    ...scope,
    branchName,
    decision: 'merged',
    resultSeq: result?.seq ?? null,
    agentIds,
  });
  if (!decided) throw new AppError('conflict', `Improvement branch "${branchName}" was decided at the same time`);
  state = (await deps.improvements.find(scope, branchName))!;
  await finishMerge(deps, state, state.decision!);
  return { branchName, status: 'merged' as const };
}

/** Finishes merges a stopped process left half-written (decided before `olderThanMs` ago). */
export async function resumeMerges(deps: ImprovementDeps, olderThanMs: number): Promise<number> {
  const pending = await deps.improvements.unfinishedMerges(new Date(Date.now() - olderThanMs));
  let finished = 0;
  for (const decision of pending) {
    const state = await deps.improvements.findByKey(decision._id);
    if (!state) continue;
    await finishMerge(deps, state, decision);
    finished++;
  }
  return finished;
}

export async function rejectImprovement(deps: ImprovementDeps, scope: ProjectScope, branchName: string) {
  const state = await load(deps, scope, branchName);
  assertOpen(state, 'rejected');
  const decided = await deps.improvements.decide({
    _id: branchKey(scope, branchName),
    ...scope,
    branchName,
    decision: 'rejected',
    resultSeq: null,
    agentIds: [],
  });
  if (!decided) throw new AppError('conflict', `Improvement branch "${branchName}" was decided at the same time`);
  return { branchName, status: 'rejected' as const };
}

export async function recordCopilotRun(deps: ImprovementDeps, scope: ProjectScope, conversationId: string) {
  const id = `copilot_${randomId(20)}`;
  await deps.improvements.insertCopilotRun(scope, id, conversationId);
  return { conversationId, id };
}
