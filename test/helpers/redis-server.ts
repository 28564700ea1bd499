// Real redis-server processes for tests: the implementation lives in localcluster (dev uses it too).
export * from '../../localcluster/redis-server.ts';
