import { applyPatch, compare, deepClone } from 'fast-json-patch';
import { z } from 'zod';
import { FullAgent, JsonPatchOperation, type Feedback, type ImprovementStatus, type ProjectScope } from '@platform/contracts';
import { AppError } from '@platform/problems';
import { randomId } from '@platform/secrets';
import type { ImprovementRepo, BranchState } from '../data/improvement.repo';
import { branchKey } from '../data/improvement.repo';
import type { TurnDoc } from '../data/improvement.model';
import type { Platform } from '../clients/platform';
import type { ChatMessage, Llm } from '../clients/llm';

export interface ImprovementDeps {
  improvements: ImprovementRepo;
  platform: Platform;
  llm: Llm;
  /** A turn still `running` after this long was interrupted (the process answering it stopped). */
  staleTurnMs: number;
}

type Definition = Record<string, unknown>;

const NOT_CONFIGURED = 'The improvement assistant is not configured (set LLM_BASE_URL); messages are recorded but no edits are made';

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

function latest(state: BranchState): TurnDoc {
  return state.turns[state.turns.length - 1]!;
}

function turnStatus(deps: ImprovementDeps, turn: TurnDoc): { status: ImprovementStatus; statusMessage: string | null } {
  if (turn.status === 'running' && Date.now() - new Date(turn.createdAt).getTime() > deps.staleTurnMs) {
    return { status: 'failed', statusMessage: 'The assistant was interrupted before it answered; send the message again' };
  }
  return { status: turn.status, statusMessage: turn.statusMessage };
}

export function statusOf(deps: ImprovementDeps, state: BranchState): { status: ImprovementStatus; statusMessage: string | null } {
  if (state.decision) return { status: state.decision.decision, statusMessage: null };
  return turnStatus(deps, latest(state));
}

function updatedAt(state: BranchState): string {
  const times = [new Date(state.branch.createdAt).getTime()];
  for (const t of state.turns) times.push(new Date(t.finishedAt ?? t.createdAt).getTime());
  if (state.decision) times.push(new Date(state.decision.at).getTime());
  return new Date(Math.max(...times)).toISOString();
}

const currentDefinition = (state: BranchState): Definition => JSON.parse(latest(state).definition) as Definition;

async function load(deps: ImprovementDeps, scope: ProjectScope, branchName: string): Promise<BranchState> {
  const state = await deps.improvements.find(scope, branchName);
  if (!state) throw new AppError('not_found', `Improvement branch "${branchName}" not found`);
  return state;
}

/** A branch takes messages, merge and reject only while open and not busy. */
function assertOpen(deps: ImprovementDeps, state: BranchState, action: string): void {
  if (state.decision) throw new AppError('conflict', `Improvement branch "${state.branch.branchName}" is ${state.decision.decision}; it cannot be ${action}`);
  if (statusOf(deps, state).status === 'running') throw new AppError('conflict', `The assistant is still working on the previous message of "${state.branch.branchName}"`);
}

const AssistantAnswer = z.object({
  reply: z.string().max(100_000).optional(),
  patch: z.array(JsonPatchOperation).max(500).optional(),
});

const SYSTEM_PROMPT = [
  'You improve the definition of an AI agent using feedback on its conversations.',
  'Answer with one JSON object: {"reply": "<what you changed and why>", "patch": [<RFC 6902 JSON Patch operations against the agent definition>]}.',
  'Use an empty patch when no change is needed. Never change the agent id.',
].join('\n');

/** Asks the assistant; returns the finished turn fields (the new definition only when its patch applied cleanly). */
async function assistantTurn(deps: ImprovementDeps, state: { agentId: string; context: string; history: TurnDoc[] }, definition: Definition, message: string) {
  const messages: ChatMessage[] = [{ role: 'system', content: SYSTEM_PROMPT }, { role: 'user', content: state.context }];
  for (const t of state.history) {
    messages.push({ role: 'user', content: t.userMessage });
    if (t.assistantMessage) messages.push({ role: 'assistant', content: t.assistantMessage });
  }
  messages.push({ role: 'user', content: `${message}\n\nCurrent definition:\n${JSON.stringify(definition)}` });
  const unchanged = JSON.stringify(definition);
  let answer: z.infer<typeof AssistantAnswer>;
  try {
    const raw = await deps.llm.completeJson(messages);
    const parsed = AssistantAnswer.safeParse(raw);
    if (!parsed.success) return { status: 'failed' as const, statusMessage: 'The assistant answered without a valid {reply, patch} object', assistantMessage: null, definition: unchanged };
    answer = parsed.data;
  } catch (err) {
    return { status: 'failed' as const, statusMessage: `The assistant could not answer: ${(err as Error).message}`, assistantMessage: null, definition: unchanged };
  }
  let next: Definition = definition;
  if (answer.patch?.length) {
    try {
      next = applyPatch(deepClone(definition), answer.patch as never, true, false).newDocument as Definition;
    } catch (err) {
      return { status: 'failed' as const, statusMessage: `The assistant's edit does not apply: ${(err as Error).message.split('\n')[0]}`, assistantMessage: answer.reply ?? null, definition: unchanged };
    }
    const valid = FullAgent.safeParse(next);
    if (!valid.success || valid.data.id !== state.agentId) {
      const issue = valid.success ? 'it changes the agent id' : `${valid.error.issues[0]?.path.join('/')}: ${valid.error.issues[0]?.message}`;
      return { status: 'failed' as const, statusMessage: `The assistant's edit would make the definition invalid (${issue})`, assistantMessage: answer.reply ?? null, definition: unchanged };
    }
  }
  return { status: 'completed' as const, statusMessage: null, assistantMessage: answer.reply ?? '', definition: JSON.stringify(next) };
}

function contextOf(agentId: string, feedback: Array<Pick<Feedback, 'id' | 'type' | 'details' | 'conversationId'>>, additionalContext: string | null): string {
  return JSON.stringify({ agentId, feedback, additionalContext });
}

/** POST P/improvements/trigger. */
export async function triggerImprovement(deps: ImprovementDeps, scope: ProjectScope, feedbackIds: string[], additionalContext: string | undefined) {
  const ids = [...new Set(feedbackIds)];
  const feedback = await deps.platform.feedbackByIds(scope, ids);
  const missing = ids.filter((id) => !feedback.some((f) => f.id === id));
  if (missing.length) throw new AppError('not_found', `Feedback not found: ${missing.join(', ')}`);
  const agents = new Set(feedback.map((f) => f.agentId).filter((a): a is string => Boolean(a)));
  if (!agents.size) {
    for (const f of feedback) {
      const agentId = (await deps.platform.conversationEvents(scope, f.conversationId)).find((e) => e.agentId)?.agentId;
      if (agentId) agents.add(agentId);
    }
  }
  if (agents.size === 0) throw new AppError('unprocessable_entity', 'The feedback names no agent (neither the feedback nor its conversations carry an agentId)');
  if (agents.size > 1) throw new AppError('unprocessable_entity', `The feedback concerns several agents (${[...agents].join(', ')}); trigger one improvement per agent`);
  const agentId = [...agents][0]!;
  const live = await deps.platform.agentDefinition(scope, agentId);
  if (!live) throw new AppError('unprocessable_entity', `Agent "${agentId}" of the feedback does not exist`);
  const base = withoutTimestamps(live as Definition);
  const feedbackItems = feedback.map((f) => ({ createdAt: f.createdAt, details: f.details, id: f.id, type: f.type }));
  const conversationId = `conv_${randomId(20)}`;
  const userMessage = `Improve agent "${agentId}" using ${feedback.length} feedback item(s)${additionalContext ? `. Additional context: ${additionalContext}` : ''}`;
  const configured = deps.llm.configured;
  let branchName = '';
  for (let attempt = 0; attempt < 5; attempt++) {
    branchName = `improvement_${agentId}_${new Date().toISOString().replace(/[:.]/g, '-')}${attempt ? `-${attempt}` : ''}`;
    const inserted = await deps.improvements.insertBranch(
      {
        branchName,
        ...scope,
        agentId,
        conversationId,
        feedbackItems: JSON.stringify(feedbackItems),
        additionalContext: additionalContext ?? null,
        baseDefinition: JSON.stringify(base),
        baseUpdatedAt: typeof live.updatedAt === 'string' ? live.updatedAt : null,
        createdAt: new Date(),
      },
      {
        userMessage,
        status: configured ? 'running' : 'not_configured',
        statusMessage: configured ? null : NOT_CONFIGURED,
        assistantMessage: null,
        definition: JSON.stringify(base),
        createdAt: new Date(),
        finishedAt: configured ? null : new Date(),
      },
    );
    if (inserted) break;
    if (attempt === 4) throw new AppError('conflict', 'Could not name the improvement branch; retry');
  }
  if (configured) {
    const context = contextOf(agentId, feedback, additionalContext ?? null);
    const done = await assistantTurn(deps, { agentId, context, history: [] }, base, userMessage);
    await deps.improvements.finishTurn(branchKey(scope, branchName), 1, done);
  }
  return { branchName, conversationId };
}

/** POST P/improvements/{branchName}/continue. */
export async function continueImprovement(deps: ImprovementDeps, scope: ProjectScope, branchName: string, message: string) {
  const state = await load(deps, scope, branchName);
  assertOpen(deps, state, 'continued');
  const definition = currentDefinition(state);
  const seq = latest(state).seq + 1;
  const configured = deps.llm.configured;
  const key = branchKey(scope, branchName);
  const claimed = await deps.improvements.insertTurn(key, seq, {
    userMessage: message,
    status: configured ? 'running' : 'not_configured',
    statusMessage: configured ? null : NOT_CONFIGURED,
    assistantMessage: null,
    definition: JSON.stringify(definition),
    createdAt: new Date(),
    finishedAt: configured ? null : new Date(),
  });
  if (!claimed) throw new AppError('conflict', `Another message was sent to "${branchName}" at the same time; read the conversation and retry`);
  if (configured) {
    const feedback = JSON.parse(state.branch.feedbackItems) as Feedback[];
    const context = contextOf(state.branch.agentId, feedback, state.branch.additionalContext);
    const done = await assistantTurn(deps, { agentId: state.branch.agentId, context, history: state.turns }, definition, message);
    await deps.improvements.finishTurn(key, seq, done);
  }
  return { conversationId: state.branch.conversationId };
}

export async function improvementConversation(deps: ImprovementDeps, scope: ProjectScope, branchName: string) {
  const state = await load(deps, scope, branchName);
  const { status, statusMessage } = statusOf(deps, state);
  const messages: Array<{ role: 'user' | 'assistant'; content: string; createdAt: string }> = [];
  for (const t of state.turns) {
    messages.push({ role: 'user', content: t.userMessage, createdAt: new Date(t.createdAt).toISOString() });
    if (t.assistantMessage !== null) messages.push({ role: 'assistant', content: t.assistantMessage, createdAt: new Date(t.finishedAt ?? t.createdAt).toISOString() });
  }
  return { conversationIds: [state.branch.conversationId], feedbackItems: JSON.parse(state.branch.feedbackItems), status, statusMessage, messages };
}

export async function listImprovements(deps: ImprovementDeps, scope: ProjectScope) {
  const states = await deps.improvements.list(scope);
  return states
    .map((s) => ({ branchName: s.branch.branchName, status: statusOf(deps, s).status, updatedAt: updatedAt(s), agentId: s.branch.agentId }))
    .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
}

/** The branch against the live definition, as an RFC 6902 patch (live → branch). */
export async function improvementDiff(deps: ImprovementDeps, scope: ProjectScope, branchName: string) {
  const state = await load(deps, scope, branchName);
  const live = await deps.platform.agentDefinition(scope, state.branch.agentId);
  const patch = compare(live ? withoutTimestamps(live as Definition) : {}, currentDefinition(state));
  return {
    branchName,
    targetBranch: 'main' as const,
    agentId: state.branch.agentId,
    format: 'json-patch' as const,
    hasChanges: patch.length > 0,
    patch: patch as Array<z.infer<typeof JsonPatchOperation>>,
    liveMissing: !live,
  };
}

export async function mergeImprovement(deps: ImprovementDeps, scope: ProjectScope, branchName: string) {
  const state = await load(deps, scope, branchName);
  assertOpen(deps, state, 'merged');
  const key = branchKey(scope, branchName);
  if (!(await deps.improvements.decide(key, 'merged'))) throw new AppError('conflict', `Improvement branch "${branchName}" was decided at the same time`);
  try {
    await deps.platform.replaceAgentDefinition(scope, state.branch.agentId, currentDefinition(state), state.branch.baseUpdatedAt ?? undefined);
  } catch (err) {
    await deps.improvements.undecide(key);
    if (err instanceof AppError && err.status === 409) {
      throw new AppError('conflict', `Agent "${state.branch.agentId}" changed since the branch was made; start a new improvement`);
    }
    if (err instanceof AppError && err.status === 404) throw new AppError('unprocessable_entity', `Agent "${state.branch.agentId}" no longer exists`);
    throw err;
  }
  return { branchName, status: 'merged' as const };
}

export async function rejectImprovement(deps: ImprovementDeps, scope: ProjectScope, branchName: string) {
  const state = await load(deps, scope, branchName);
  assertOpen(deps, state, 'rejected');
  if (!(await deps.improvements.decide(branchKey(scope, branchName), 'rejected'))) throw new AppError('conflict', `Improvement branch "${branchName}" was decided at the same time`);
  return { branchName, status: 'rejected' as const };
}

export async function recordCopilotRun(deps: ImprovementDeps, scope: ProjectScope, conversationId: string) {
  const id = `copilot_${randomId(20)}`;
  await deps.improvements.insertCopilotRun(scope, id, conversationId);
  return { conversationId, id };
}
