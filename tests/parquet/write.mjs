// The writer side of tests/parquet_test.cpp: Parquet files written by two independent real writers, with the
// expected content of their text column, so the C++ reader is checked against what was really written.
//
//   node write.mjs OUT_DIR [ROWS]               test files + OUT_DIR/expected.json (ROWS: 3,000; fuzz seeds: 60)
//   node write.mjs --read FILE COLUMN OUT.json  one column of any file, read by hyparquet (a JavaScript reader):
//                                               the reference for the real fixtures in ../shared/data/parquet
//   node write.mjs --from-jsonl IN.jsonl.zst OUT_PREFIX   bench copies of a jsonl.zst shard (bench_readers)
//
// Writers (npm, installed by scripts/install_deps.sh into $FRONTIER_CACHE/npm):
//   - parquet-wasm (the Rust `parquet` crate compiled to WASM) fed by apache-arrow: nanochat's layout (PLAIN, ZSTD,
//     1,024-row groups, as pyarrow writes FineWeb/ClimbMix shards) and dictionary / SNAPPY / GZIP / data page v2
//     variants, several pages per column chunk;
//   - hyparquet-writer (pure JavaScript): an empty row group between full ones (rowGroupSize [1024, 0, 1024]), data
//     page v2, SNAPPY and GZIP.
// expected.json: {file: {"rows": n, "values": [sha256 hex of the UTF-8 bytes | null per row], "column": name}};
// --read writes one such record.
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";

const cache = process.env.FRONTIER_CACHE || path.join(os.homedir(), ".cache", "frontier");
const require = createRequire(path.join(cache, "npm", "node_modules", "x.js"));
const arrow = require("apache-arrow");
const pw = require("parquet-wasm/node");
const { parquetWriteFile } = await import(path.join(cache, "npm", "node_modules", "hyparquet-writer", "src", "node.js"));
const { parquetReadObjects } = await import(path.join(cache, "npm", "node_modules", "hyparquet", "src", "index.js"));

const sha = (s) => crypto.createHash("sha256").update(Buffer.from(s, "utf8")).digest("hex");

// Rust parquet crate: one Arrow table (text + id columns), the given writer properties.
function writeRust(file, texts, props, { nullable = true, binary = false } = {}) {
  const type = binary ? new arrow.Binary() : new arrow.Utf8();
  const values = binary ? texts.map((t) => (t === null ? null : Uint8Array.from(Buffer.from(t, "latin1")))) : texts;
  const text = arrow.vectorFromArray(values, type);
  const ids = arrow.vectorFromArray(texts.map((_, i) => i), new arrow.Int32());
  const schema = new arrow.Schema([new arrow.Field("id", new arrow.Int32(), false), new arrow.Field("text", type, nullable)]);
  const data = arrow.makeData({
    type: new arrow.Struct(schema.fields), length: texts.length, nullCount: 0, children: [ids.data[0], text.data[0]],
  });
  const table = new arrow.Table([new arrow.RecordBatch(schema, data)]);
  const wasmTable = pw.Table.fromIPCStream(arrow.tableToIPC(table, "stream"));
  fs.writeFileSync(file, pw.writeParquet(wasmTable, props));
}

function rustProps({ codec, dict, v2 = false, pageBytes = 64 << 10, group = 1024 }) {
  let b = new pw.WriterPropertiesBuilder()
    .setCompression(codec)
    .setDictionaryEnabled(dict)
    .setMaxRowGroupSize(group)
    .setDataPageSizeLimit(pageBytes)
    .setWriterVersion(v2 ? pw.WriterVersion.V2 : pw.WriterVersion.V1);
  if (!dict) b = b.setEncoding(pw.Encoding.PLAIN);
  return b.build();
}

// Deterministic documents: ASCII, 2-, 3- and 4-byte UTF-8, empty strings, nulls, repeats (for dictionaries) and a
// few long ones (several pages per column chunk).
function documents(n) {
  const words = ["the", "model", "naïve", "café", "日本語", "テキスト", "🎉", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "Ελληνικά", "data", "шард", "\t", "\n"];
  let seed = 12345;
  const rnd = (k) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % k);
  const out = [];
  for (let i = 0; i < n; i++) {
    if (i % 7 === 3) out.push(null);
    else if (i % 97 === 5) out.push("");
    else if (i % 11 === 0) out.push(`repeated document ${i % 5} ✓`);
    else {
      const len = i % 251 === 0 ? 4000 : 5 + rnd(60);
      const w = [];
      for (let k = 0; k < len; k++) w.push(words[rnd(words.length)]);
      out.push(`doc ${i}: ` + w.join(" "));
    }
  }
  return out;
}

function main() {
  const args = process.argv.slice(2);
  if (args[0] === "--from-jsonl") return fromJsonl(args[1], args[2]);
  if (args[0] === "--read") return readColumn(args[1], args[2], args[3]);
  const dir = args[0];
  fs.mkdirSync(dir, { recursive: true });
  const texts = documents(Number(args[1] || 3000));
  const group = texts.length >= 3000 ? 1024 : 16;
  const expected = {};
  const record = (name, t, column = "text") => (expected[name] = { rows: t.length, column, values: t.map((x) => (x === null ? null : sha(x))) });
  const C = pw.Compression;
  const rust = {
    "rust_plain_zstd.parquet": { codec: C.ZSTD, dict: false },  // nanochat's layout
    "rust_dict_snappy.parquet": { codec: C.SNAPPY, dict: true },
    "rust_plain_gzip_v2.parquet": { codec: C.GZIP, dict: false, v2: true },
    "rust_dict_zstd_v2.parquet": { codec: C.ZSTD, dict: true, v2: true },
    "rust_plain_none.parquet": { codec: C.UNCOMPRESSED, dict: false },
  };
  for (const [name, p] of Object.entries(rust)) {
    writeRust(path.join(dir, name), texts, rustProps({ ...p, group }));
    record(name, texts);
  }
  const required = texts.map((t) => (t === null ? "was null" : t));  // a REQUIRED column: no definition levels
  writeRust(path.join(dir, "rust_required_zstd.parquet"), required, rustProps({ codec: C.ZSTD, dict: false, group }), { nullable: false });
  record("rust_required_zstd.parquet", required);

  // hyparquet-writer: an empty row group, data page v2.
  const hy = [
    ["hyparquet_empty_group_snappy.parquet", "SNAPPY", {}],
    ["hyparquet_empty_group_gzip.parquet", "GZIP", { GZIP: (b) => new Uint8Array(zlib.gzipSync(b)) }],
  ];
  for (const [name, codec, compressors] of hy) {
    parquetWriteFile({
      filename: path.join(dir, name),
      codec,
      compressors: Object.keys(compressors).length ? compressors : undefined,
      columnData: [{ name: "text", data: texts, type: "STRING" }],
      rowGroupSize: [group, 0, group],
    });
    record(name, texts);
  }

  // Not UTF-8: a BYTE_ARRAY (binary) column whose row 8 holds Latin-1 bytes.
  const latin = texts.slice(0, 20).map((t, i) => (t === null ? null : i === 8 ? "caf\xe9 cr\xe8me" : Buffer.from(t, "utf8").toString("latin1")));
  writeRust(path.join(dir, "rust_latin1.parquet"), latin, rustProps({ codec: C.SNAPPY, dict: false }), { binary: true });

  // Outside the reader's subset: a nested (list) column and an LZ4_RAW codec; DELTA_LENGTH_BYTE_ARRAY values.
  const few = texts.slice(0, 50);
  const listType = new arrow.List(new arrow.Field("item", new arrow.Utf8(), true));
  const tags = arrow.vectorFromArray(few.map((_, i) => ["a", `t${i}`]), listType);
  const text = arrow.vectorFromArray(few, new arrow.Utf8());
  const schema = new arrow.Schema([new arrow.Field("text", new arrow.Utf8(), true), new arrow.Field("tags", listType, true)]);
  const data = arrow.makeData({ type: new arrow.Struct(schema.fields), length: few.length, nullCount: 0, children: [text.data[0], tags.data[0]] });
  const nested = pw.Table.fromIPCStream(arrow.tableToIPC(new arrow.Table([new arrow.RecordBatch(schema, data)]), "stream"));
  fs.writeFileSync(path.join(dir, "rust_nested_lz4.parquet"),
    pw.writeParquet(nested, new pw.WriterPropertiesBuilder().setCompression(C.LZ4_RAW).build()));
  writeRust(path.join(dir, "rust_delta.parquet"), few, new pw.WriterPropertiesBuilder().setCompression(C.ZSTD)
    .setDictionaryEnabled(false).setColumnEncoding("text", pw.Encoding.DELTA_LENGTH_BYTE_ARRAY).build());

  fs.writeFileSync(path.join(dir, "expected.json"), JSON.stringify(expected));
}

// Bench copies: the documents of a jsonl.zst shard as nanochat-layout Parquet (PLAIN + ZSTD, 1,024-row groups) and
// as dictionary + SNAPPY (pyarrow's defaults).
function fromJsonl(input, prefix) {
  const text = execFileSync("zstd", ["-dc", input], { maxBuffer: 1 << 30 }).toString("utf8");
  const docs = text.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l).text);
  const C = pw.Compression;
  writeRust(`${prefix}_zstd.parquet`, docs, rustProps({ codec: C.ZSTD, dict: false, pageBytes: 1 << 20 }));
  writeRust(`${prefix}_snappy_dict.parquet`, docs, rustProps({ codec: C.SNAPPY, dict: true, pageBytes: 1 << 20 }));
}

// hyparquet decodes SNAPPY itself; ZSTD pages go through the zstd command line tool (node 20 has no zstd).
async function readColumn(file, column, out) {
  const buf = fs.readFileSync(file);
  const compressors = { ZSTD: (input) => new Uint8Array(execFileSync("zstd", ["-dc"], { input })) };
  const rows = await parquetReadObjects({ file: buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength), columns: [column], compressors, utf8: false });
  const values = rows.map((r) => (r[column] === null || r[column] === undefined ? null : crypto.createHash("sha256").update(r[column]).digest("hex")));
  fs.writeFileSync(out, JSON.stringify({ rows: rows.length, column, values }));
}

await main();
