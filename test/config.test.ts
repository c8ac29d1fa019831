import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      databaseUrl: 'pglite://./data',
      store: { kind: 'pglite', dataDir: path.resolve('data') },
      port: 3000,
      host: '127.0.0.1',
      publicUrl: undefined,
      trustProxy: false,
      rateLimitPerMinute: 60,
      redisUrl: undefined,
      logLevel: 'info',
    });
  });

  it('reads every variable, and flags win over the environment', () => {
    const config = loadConfig(
      { DATABASE_URL: 'postgres://u:p@db:5432/lending', PORT: '8080', HOST: '0.0.0.0', PUBLIC_URL: 'https://api.example.com/', TRUST_PROXY: 'true', RATE_LIMIT_PER_MINUTE: '0', REDIS_URL: 'redis://cache:6379', LOG_LEVEL: 'warn' },
      { PORT: '9090' },
    );
    expect(config).toMatchObject({ store: { kind: 'postgres' }, port: 9090, host: '0.0.0.0', publicUrl: 'https://api.example.com', trustProxy: true, rateLimitPerMinute: 0, redisUrl: 'redis://cache:6379', logLevel: 'warn' });
    expect(loadConfig({ DATABASE_URL: 'pglite://memory' }).store).toEqual({ kind: 'pglite', dataDir: undefined });
  });

  it.each([
    ['DATABASE_URL', 'mysql://x'],
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['PUBLIC_URL', 'not a url'],
    ['PUBLIC_URL', 'ftp://files.example.com'],
    ['TRUST_PROXY', 'maybe'],
    ['RATE_LIMIT_PER_MINUTE', '-5'],
    ['REDIS_URL', 'http://cache'],
    ['LOG_LEVEL', 'loud'],
  ])('names %s when its value %j is bad', (variable, value) => {
    expect(() => loadConfig({ [variable]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [variable]: value })).toThrow(new RegExp(`^${variable} `));
  });
});
