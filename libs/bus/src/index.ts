export * from './codec';
export * from './connection';
export * from './rpc';
export * from './jetstream';
export * from './retry';
