// What every row module shares: the settings, the main stack and its clients, the table, the references, the
// fixtures, and the figures one section leaves for a later one.
import { randomUUID } from 'node:crypto';
import { client, type InfraEnv, type PrivateStack } from '@platform/testkit';
import { cpuAround } from './cpu';
import type { CpuRun } from './ceiling';
import { agentsIn, must } from './helpers';
import { measure, type LoadResult, type LoadSpec } from './load';
import type { Reference } from './paired';
import { cpuLabel, type MemoryWatch } from './processes';
import type { Row } from './results';
import { runId } from './run';
import type { BenchSettings } from './settings';
import type { StartBenchStack } from './stacks';
import type { Table } from './table';

export interface Project {
  tenantId: string;
  projectId: string;
}
/** One tenant per concern, so no measurement reads another's rows. */
export const proj = (name: string): Project => ({ tenantId: `bench-${name}-${runId}`, projectId: `p-${name}` });
export const projectPath = (p: Project) => `/manage/tenants/${p.tenantId}/projects/${p.projectId}`;

/** The parts every new event is made of, whose CPU per operation the floor row adds up. */
export type FloorPart = 'echo' | 'row' | 'publish';

/** The run as the rows find it before the first row: everything but the fixtures. */
export interface Bench {
  settings: BenchSettings;
  infra: InfraEnv;
  secrets: Record<string, string>;
  startStack: StartBenchStack;
  /** The stack of most rows. */
  stack: PrivateStack;
  gw: string;
  analyticsUrl: string;
  admin: ReturnType<typeof client>;
  adminH: Record<string, string>;
  baselineUrl: string;
  table: Table;
  memory: MemoryWatch;
  /** Figures one section leaves for a later one. */
  carry: {
    /** CPU ms per operation of the parts of a new event (ceiling and core sections), for the floor row. */
    floorParts: Map<FloorPart, number>;
    /** CPU per raw insertOne (note of the ceiling run), shown beside the CPU per new event. */
    cpuInsertOne: string;
    /** The new-event row, which the replicas row is read against. */
    evNew?: Row;
    /** How the growth rows sample (a line of the report). */
    growthNote: string;
  };
}

/** The events project every event row writes to, with its API key. */
export interface EventFixtures {
  key: string;
  headers: Record<string, string>;
  /** A new event's body with this id (`{{id}}` for a paced run's template). */
  withId(id: string): string;
  /** A new event's body, a new id each time. */
  newEvent(): string;
  /** The body of an event stored before the rows: sent again, it is a replay (200). */
  replayBody: string;
}

export interface BenchContext extends Bench {
  events: EventFixtures;
}

/** The event project and its key; its replayed event stored. */
export async function eventFixtures(bench: Bench): Promise<EventFixtures> {
  const evP = proj('events');
  await agentsIn(bench.admin, evP);
  const key = (
    await must(bench.admin.post(`${projectPath(evP)}/api-keys`, { agentId: 'agent-1', name: 'bench' }), 201, 'api key')
  ).data.key as string;
  const withId = (id: string) =>
    JSON.stringify({
      id,
      type: 'bench.event',
      conversationId: 'c-1',
      properties: { n: 1 },
      userProperties: { id: 'u-1' },
    });
  const replayBody = withId('replayed-1');
  await must(client(bench.gw, key).post('/run/v1/events', JSON.parse(replayBody)), 201, 'first event');
  return { key, headers: { authorization: `Bearer ${key}` }, withId, newEvent: () => withId(randomUUID()), replayBody };
}

/** One more run of B, no warm-up (the baseline is warm). */
export const runB = (ctx: Bench): Promise<LoadResult> =>
  measure({ url: ctx.baselineUrl }, { ...ctx.settings.load, runs: 1, warmupS: 0 });
/** B as the reference measured beside a row. */
export const besideB = (ctx: Bench): Reference => ({ name: 'B', run: async () => (await runB(ctx)).rps });

/** A CpuRun that keeps the CPU per operation of one part of a new event for the floor row. */
export const cpuPart = (
  ctx: Bench,
  part: FloorPart,
  what: string,
  label: (pid: number, comm: string) => string,
): CpuRun => cpuAround(what, label, (cpu) => ctx.carry.floorParts.set(part, cpu.perOpMs));

/**
 * One more run of `spec` (no warm-up) with every process's CPU read around it, logged per operation (`perRequest`
 * operations a request): the rate of a row moves with the machine and the database from run to run, the work does not.
 */
export async function cpuPerOperation(ctx: BenchContext, what: string, spec: LoadSpec, perRequest = 1): Promise<void> {
  await cpuAround(
    what,
    cpuLabel(ctx.stack),
    () => undefined,
  )(async () => {
    const run = await measure(spec, { ...ctx.settings.load, warmupS: 0, runs: 1 });
    return (run.completed ?? 1) * perRequest;
  });
}
