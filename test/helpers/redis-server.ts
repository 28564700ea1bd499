// Real redis-server processes for tests: the implementation lives in src/localcluster (dev uses it too).
export * from '../../src/localcluster/redis-server.ts';
