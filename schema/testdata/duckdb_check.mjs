// Reads a dialogue Parquet file exported by codefeedback with DuckDB and
// checks the trainer-facing contract: messages is a list of struct(role,
// content), id is a string, and the row count is as expected.
// Usage: node duckdb_check.mjs FILE.parquet EXPECTED_ROWS
// Module resolution: NODE_PATH may point at a node_modules holding @duckdb/node-api.
import { createRequire } from "node:module";
import path from "node:path";

const [file, expected] = process.argv.slice(2);
if (!file || expected === undefined) {
  console.error("usage: node duckdb_check.mjs FILE.parquet EXPECTED_ROWS");
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
if (types.id !== "VARCHAR") fail(`id has type ${types.id}, want VARCHAR`);

const cnt = await con.runAndReadAll(`SELECT count(*)::INTEGER AS n, sum(len(messages))::INTEGER AS turns, min(messages[1].role) AS r FROM read_parquet(${lit})`);
const row = cnt.getRowObjects()[0];
if (row.n !== Number(expected)) fail(`got ${row.n} rows, want ${expected}`);
console.log(JSON.stringify({ rows: row.n, turns: row.turns, first_role: row.r, messages: types.messages }));
