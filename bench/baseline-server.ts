/**
 * Baselines for the ratio: a bare Fastify process with none of the service's plugins.
 *   BASELINE=constant  GET /x answers a constant JSON body
 *   BASELINE=select    GET /x/:id runs SELECT_SQL (one $1 parameter) through the same driver
 *                      and database as the service (DATABASE_URL or DATA_DIR) and returns the row
 *   BASELINE=redirect  GET /x answers 302 to a constant location
 *   BASELINE=location  GET /x/:id calls the locations repository's findGlobal: the exact SQL
 *                      and driver of the public location read, without the service around it
 */
import Fastify from 'fastify';
import { openDatabase } from '../src/db/index.ts';

const mode = process.env.BASELINE ?? 'constant';
const app = Fastify({ logger: false });
app.get('/healthz', async () => ({ ok: true }));
if (mode === 'constant') {
  app.get('/x', async () => ({ hello: 'world' }));
} else if (mode === 'redirect') {
  app.get('/x', async (_req, reply) => reply.redirect(process.env.LOCATION ?? 'https://example.com/', 302));
} else if (mode === 'select') {
  const db = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: process.env.DATA_DIR ?? './data' });
  const sql = process.env.SELECT_SQL ?? 'SELECT 1';
  app.get('/x/:id', async (req, reply) => {
    const { rows } = await db.query(sql, [(req.params as { id: string }).id]);
    if (!rows[0]) return reply.code(404).send({ error: 'not found' });
    return rows[0];
  });
  app.addHook('onClose', () => db.close());
} else if (mode === 'location') {
  const { findGlobal } = await import('../src/modules/locations/locations.repository.ts');
  const db = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: process.env.DATA_DIR ?? './data' });
  app.get('/x/:id', async (req, reply) => {
    const row = await findGlobal(db, (req.params as { id: string }).id);
    if (!row) return reply.code(404).send({ error: 'not found' });
    return row;
  });
  app.addHook('onClose', () => db.close());
}
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
await app.listen({ port: Number(process.env.PORT ?? 3999), host: '127.0.0.1' });
