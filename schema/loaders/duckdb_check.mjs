// Reads a dialogue Parquet file exported by codefeedback with DuckDB and
// checks the trainer-facing contract: messages is a list of struct(role,
// content), id has the expected type, the row count is as expected, and
// (when given) every role is one of the allowed ones.
// Usage: node duckdb_check.mjs FILE.parquet EXPECTED_ROWS ID_TYPE [ROLE,ROLE...]
// Module resolution: DUCKDB_NODE_MODULES may point at a node_modules holding @duckdb/node-api.
import { createRequire } from "node:module";
import path from "node:path";

const [file, expected, idType, roles] = process.argv.slice(2);
if (!file || expected === undefined || !idType) {
  console.error("usage: node duckdb_check.mjs FILE.parquet EXPECTED_ROWS ID_TYPE [ROLES]");
  process.exit(2);
}
const require = createRequire(path.join(process.env.DUCKDB_NODE_MODULES || process.cwd(), "x.js"));
const { DuckDBInstance } = require("@duckdb/node-api");

const fail = (msg) => { console.error("duckdb check FAILED: " + msg); process.exit(1); };
const inst = await DuckDBInstance.create(":memory:");
const con = await inst.connect();
const lit = "'" + file.replaceAll("'", "''") + "'";

const desc = await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${lit})`);
const types = Object.fromEntries(desc.getRowObjects().map((r) => [r.column_name, r.column_type]));
const want = 'STRUCT("role" VARCHAR, "content" VARCHAR)[]';
const norm = (t) => String(t).replaceAll('"', "").replace(/\s+/g, " ");
if (norm(types.messages) !== norm(want)) fail(`messages has type ${types.messages}, want ${want}`);
if (types.id !== idType) fail(`id has type ${types.id}, want ${idType}`);

const cnt = await con.runAndReadAll(`SELECT count(*)::INTEGER AS n, sum(len(messages))::INTEGER AS turns, min(messages[1].role) AS r FROM read_parquet(${lit})`);
const row = cnt.getRowObjects()[0];
if (row.n !== Number(expected)) fail(`got ${row.n} rows, want ${expected}`);
const seen = (await con.runAndReadAll(`SELECT DISTINCT m.role AS role FROM (SELECT unnest(messages) AS m FROM read_parquet(${lit})) ORDER BY 1`)).getRowObjects().map((r) => r.role);
if (roles) {
  const ok = new Set(roles.split(","));
  for (const r of seen) if (!ok.has(r)) fail(`role ${r} in messages, want only ${roles}`);
}
console.log(JSON.stringify({ rows: row.n, turns: row.turns, first_role: row.r, roles: seen, columns: types }));
