/**
 * The transactional outbox: a change and its pending events are one document write (fields.ts); the relay publishes
 * them to JetStream with the event id as Nats-Msg-Id and then clears them (relay.ts).
 */
export { outboxFields, live, traced, storedPending, pendingEntries, outboxOnCreate, outboxOnUpdate, outboxOnDelete, type PendingEventsField } from './fields';
export { outboxRelay, type OutboxRelay, type OutboxDoc } from './relay';
export { KeyedLock } from './lock';
export { groupInsert, type GroupInsertOutcome, type GroupInsertOptions, type GroupCollection } from './group-commit';
export { deleteTogether } from './delete-together';
