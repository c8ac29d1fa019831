import pg from 'pg';

/** DATABASE_URL when it names PostgreSQL, else `lending_bench` on the local server (created if missing). */
export async function benchDatabaseUrl(): Promise<string> {
  const given = process.env.DATABASE_URL;
  if (given && /^postgres(ql)?:/.test(given)) return given;
  const server = process.env.BENCH_SERVER_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', ['lending_bench']);
    if (exists.rowCount === 0) await admin.query('CREATE DATABASE lending_bench');
  } finally {
    await admin.end();
  }
  const url = new URL(server);
  url.pathname = '/lending_bench';
  return url.toString();
}
