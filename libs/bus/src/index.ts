export * from './codec';
export * from './connection';
export * from './rpc';
export * from './notices';
export * from './jetstream';
export * from './retry';
export * from './signature';
export * from './erasure';
