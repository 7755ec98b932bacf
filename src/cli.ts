/**
 * Offline administration against the configured database (DATABASE_URL or DATA_DIR):
 *
 *   npm run cli -- migrate
 *   npm run cli -- collection:create --name "Acme" [--id acme]
 *   npm run cli -- key:create --collection acme [--name "ci"]
 *   npm run cli -- token:issue --collection acme --user u1 [--contact c1] [--ttl 3600]
 *   npm run cli -- openapi > openapi.json
 *
 * It uses the same services as the HTTP routes, so the rules are the same.
 *
 * An embedded (PGlite) data directory has one owner at a time (db/data-dir-lock.ts): while the
 * server (or another CLI run) holds it, the CLI changes nothing, says what to do instead (stop
 * the server, or make the change through the running server's HTTP API) and exits non-zero. A
 * write beside the server went into a second copy of the database the server never read, and
 * was lost at its next start. Success is printed only after the database has closed cleanly,
 * so what the CLI reports done is on disk.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.ts';
import { DataDirLockedError, migrate, openDatabase } from './db/index.ts';
import { CollectionsService, collectionsSettings, generatedSuperAdminKey } from './modules/collections/index.ts';
import { openApiDocument } from './openapi-document.ts';
import { AppError } from './platform/errors.ts';

const USAGE = `usage: npm run cli -- <command> [options]
  migrate                                   apply pending migrations
  collection:create --name N [--id ID]      create a collection
  collection:list                           list collections
  key:create --collection ID [--name N]     create an admin API key (printed once)
  token:issue --collection ID --user U [--contact C] [--ttl SECONDS]
                                            issue a user token for public routes
  super-key                                 show the super admin key generated at first start
                                            (only when SUPER_ADMIN_KEY is unset)
  openapi                                   print the OpenAPI document (/openapi.json) without
                                            a server or a database`;

async function main(): Promise<number> {
  const [command, ...rest] = process.argv.slice(2);
  const { values } = parseArgs({
    args: rest,
    options: {
      name: { type: 'string' },
      id: { type: 'string' },
      collection: { type: 'string' },
      user: { type: 'string' },
      contact: { type: 'string' },
      ttl: { type: 'string' },
    },
  });
  if (!command || command === 'help' || command === '--help') {
    console.log(USAGE);
    return command ? 0 : 2;
  }
  if (command === 'openapi') {
    await print(JSON.stringify(await openApiDocument(), null, 2));
    return 0;
  }
  const config = loadConfig();
  let db: Awaited<ReturnType<typeof openDatabase>>;
  try {
    db = await openDatabase({ ...config, owner: `cli ${command}` });
  } catch (err) {
    if (!(err instanceof DataDirLockedError)) throw err;
    console.error(`error: ${err.message}\n\nNothing was changed. ${instead(command)}`);
    return 1;
  }
  let out: unknown;
  try {
    await migrate(db);
    const settings = collectionsSettings(config.env);
    const collections = new CollectionsService(db, settings);
    const need = (v: string | undefined, flag: string) => {
      if (!v) throw new AppError(400, 'BAD_REQUEST', `${flag} is required`);
      return v;
    };
    switch (command) {
      case 'migrate':
        out = { migrated: true };
        break;
      case 'super-key':
        out = settings.superAdminKey
          ? { superAdminKey: 'set by SUPER_ADMIN_KEY' }
          : { superAdminKey: (await generatedSuperAdminKey(db)).key };
        break;
      case 'collection:create':
        out = await collections.createCollection({ id: values.id, name: need(values.name, '--name') });
        break;
      case 'collection:list':
        out = await collections.listCollections(1000, 0);
        break;
      case 'key:create':
        out = await collections.createApiKey(need(values.collection, '--collection'), values.name ?? 'cli');
        break;
      case 'token:issue':
        out = await collections.issueUserToken(need(values.collection, '--collection'), {
          userId: need(values.user, '--user'),
          contactId: values.contact,
          ttlSeconds: values.ttl ? Number(values.ttl) : undefined,
        });
        break;
      default:
        console.error(`unknown command "${command}"\n${USAGE}`);
        return 2;
    }
  } finally {
    await db.close();
  }
  // Only now: a failed close (the write not safely on disk) is an error, not a success.
  await print(JSON.stringify(out, null, 2));
  return 0;
}

/** What to do when the data directory is held: stop its owner, or ask the running server. */
function instead(command: string): string {
  const http: Record<string, string> = {
    'collection:create': 'POST /platform/collections {"id", "name"} with the super admin key',
    'collection:list': 'GET /platform/collections with the super admin key',
    'key:create': 'POST /admin/collection/{id}/api-keys {"name"} with the super admin key or an admin key',
    'token:issue': 'POST /admin/collection/{id}/user-tokens {"userId"} with an admin key',
    migrate: 'nothing: the running server applied the migrations when it started',
    'super-key': 'the key the server logged at its first start, or stop the server',
  };
  const api = http[command];
  return (
    'Either stop the server that holds it (SIGTERM or Ctrl-C; a graceful stop releases the lock) and run this ' +
    `command again, or use the running server's HTTP API instead${api ? `: ${api}` : ''}. ` +
    'If that process is not this service (its pid was reused after a crash), remove the lock file.'
  );
}

/**
 * Writes to stdout and waits until the text has left the process. The CLI ends with
 * process.exit, which does not wait for a pipe to drain: a document larger than the pipe's
 * buffer (the OpenAPI document is 400 KB) came out cut at 64 KB when piped.
 */
function print(text: string): Promise<void> {
  return new Promise((resolve, reject) => process.stdout.write(`${text}\n`, (err) => (err ? reject(err) : resolve())));
}

main().then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof ConfigError || err instanceof AppError) console.error(`error: ${err.message}`);
    else console.error(err);
    process.exit(1);
  },
);
