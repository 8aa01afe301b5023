// Times DuckDB on the Parquet benchmark's two paths, in this process:
//   write IN.jsonl OUT.parquet: COPY the JSONL file to Parquet (zstd)
//   read  IN.parquet:           scan every message (dialogues, turns, characters)
//   start:                      nothing (the CPU of node's start and DuckDB's load, to subtract)
// Prints {"seconds": S, ...} where S excludes node's start and the module load.
// Module resolution: DUCKDB_NODE_MODULES points at a node_modules holding @duckdb/node-api.
import { createRequire } from "node:module";
import path from "node:path";

const [mode, a, b] = process.argv.slice(2);
const require = createRequire(path.join(process.env.DUCKDB_NODE_MODULES || process.cwd(), "x.js"));
const { DuckDBInstance } = require("@duckdb/node-api");
const lit = (s) => "'" + s.replaceAll("'", "''") + "'";
const inst = await DuckDBInstance.create(":memory:");
const con = await inst.connect();
const threads = (await con.runAndReadAll("SELECT current_setting('threads')::INTEGER AS t")).getRowObjects()[0].t;
const start = process.hrtime.bigint();
let out = {};
if (mode === "write") {
  await con.run(`COPY (SELECT * FROM read_json(${lit(a)}, format = 'newline_delimited')) TO ${lit(b)} (FORMAT parquet, COMPRESSION zstd)`);
} else if (mode === "read") {
  const r = await con.runAndReadAll(`SELECT count(*)::BIGINT AS n, sum(len(messages))::BIGINT AS turns, sum(list_sum(list_transform(messages, x -> length(x.content))))::BIGINT AS chars FROM read_parquet(${lit(a)})`);
  out = r.getRowObjects()[0];
  for (const k in out) out[k] = Number(out[k]);
} else if (mode !== "start") {
  console.error("usage: node duckdb_bench.mjs write IN.jsonl OUT.parquet | read IN.parquet | start");
  process.exit(2);
}
out.seconds = Number(process.hrtime.bigint() - start) / 1e9;
out.threads = threads;
console.log(JSON.stringify(out));
