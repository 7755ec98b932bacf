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
 * Run it while the embedded server is stopped: PGlite's data directory has one owner at a time.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.ts';
import { migrate, openDatabase } from './db/index.ts';
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
  const db = await openDatabase(config);
  try {
    await migrate(db);
    const settings = collectionsSettings(config.env);
    const collections = new CollectionsService(db, settings);
    const need = (v: string | undefined, flag: string) => {
      if (!v) throw new AppError(400, 'BAD_REQUEST', `${flag} is required`);
      return v;
    };
    let out: unknown;
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
    await print(JSON.stringify(out, null, 2));
    return 0;
  } finally {
    await db.close();
  }
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
