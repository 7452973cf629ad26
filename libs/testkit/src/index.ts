export * from './infra';
export * from './stack';
export * from './http';
export * from './receiver';
export * from './fixtures';
export * from './nats';
export * from './fakes/chatapp';
