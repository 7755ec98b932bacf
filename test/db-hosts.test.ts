/**
 * libpq's multi-host DATABASE_URL and DATABASE_READ_URL's list (src/db/hosts.ts): what each
 * host's own address becomes, and the refusals a bad value gets at start-up.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { parseDatabaseUrl, parseReadUrls, replicaName } from '../src/db/hosts.ts';

describe('DATABASE_URL with several hosts', () => {
  it('gives one address per host, in order, keeping user, password, database and parameters', () => {
    const parsed = parseDatabaseUrl(
      'postgres://app:s3cret@db1:5432,db2:5433,[::1]:5434/main?target_session_attrs=read-write&sslmode=disable',
    );
    expect(parsed.readWrite).toBe(true);
    expect(parsed.targets).toEqual([
      { name: 'db1:5432', connectionString: 'postgres://app:s3cret@db1:5432/main?sslmode=disable' },
      { name: 'db2:5433', connectionString: 'postgres://app:s3cret@db2:5433/main?sslmode=disable' },
      { name: '[::1]:5434', connectionString: 'postgres://app:s3cret@[::1]:5434/main?sslmode=disable' },
    ]);
  });

  it('reads a single host as before, with target_session_attrs=any by default', () => {
    const parsed = parseDatabaseUrl('postgresql://postgres@127.0.0.1:5432/test');
    expect(parsed).toEqual({
      readWrite: false,
      targets: [{ name: '127.0.0.1:5432', connectionString: 'postgresql://postgres@127.0.0.1:5432/test' }],
    });
  });

  it('refuses what it cannot read, naming the variable', () => {
    expect(() => parseDatabaseUrl('mysql://x/y')).toThrow(/DATABASE_URL must be a postgres:\/\/ address/);
    expect(() => parseDatabaseUrl('postgres://a:1,b:2/db?target_session_attrs=standby')).toThrow(
      /target_session_attrs must be any or read-write/,
    );
    expect(() => parseDatabaseUrl('postgres://a:1:2/db')).toThrow(/no host or host:port/);
    expect(() => loadConfig({ DATABASE_URL: 'postgres://h1,h2/db?target_session_attrs=primary' })).toThrow(
      /DATABASE_URL: target_session_attrs/,
    );
  });
});

describe('DATABASE_READ_URL', () => {
  it('lists replicas separated by commas or white space', () => {
    expect(parseReadUrls('postgres://r1:5432/db, postgres://u:p@r2/db postgresql://r3:6000/db')).toEqual([
      'postgres://r1:5432/db',
      'postgres://u:p@r2/db',
      'postgresql://r3:6000/db',
    ]);
    expect(parseReadUrls('  ')).toEqual([]);
    expect(replicaName('postgres://u:secret@r2:5433/db?sslmode=disable')).toBe('r2:5433/db');
  });

  it('is refused without DATABASE_URL (the embedded database has no replicas) and with several hosts in one', () => {
    expect(() => loadConfig({ DATABASE_READ_URL: 'postgres://r1/db' })).toThrow(/DATABASE_READ_URL needs DATABASE_URL/);
    expect(() => parseReadUrls('postgres://r1,r2/db')).toThrow(/each replica is one host/);
    const config = loadConfig({
      DATABASE_URL: 'postgres://p/db',
      DATABASE_READ_URL: 'postgres://r1/db,postgres://r2/db',
      DATABASE_READ_MAX_LAG_MS: '2000',
    });
    expect(config.databaseReadUrls).toEqual(['postgres://r1/db', 'postgres://r2/db']);
    expect(config.databaseReadMaxLagMs).toBe(2000);
  });
});
