/**
 * The transactional outbox (outbox.ts): a change and its events are stored in one write and the events published to
 * JetStream afterwards, with a sweep for what a crash left in between. A service makes one `Outbox`; a repository
 * writes its collection through `outbox.of(Model)`, whose schema spreads `outboxFields`.
 */
export {
  Outbox,
  type OutboxOptions,
  type OutboxWriter,
  type WriterOptions,
  type WriteFilter,
  type Change,
} from './outbox';
export { outboxFields, type PendingEventsField } from './fields';
export type { InsertOutcome } from './group-commit';
