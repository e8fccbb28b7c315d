// The peer side of tests/tiktoken_parity_test.cpp: encodes texts with the real tiktoken (npm `tiktoken`, the
// WASM build of OpenAI's Rust core) and writes the token ids.
//
//   node encode.mjs request.json response.json
// request:  {"encoding": "cl100k_base" | null, "ranks_file": path | null, "pattern": str | null,
//            "specials": {name: id} | null, "texts_b64": [base64 of UTF-8 bytes], "cl100k_out": path | null}
//   encoding "cl100k_base" uses tiktoken's bundled ranks (and its pattern unless "pattern" overrides it);
//   otherwise ranks_file (tiktoken rank-file text) + pattern + specials build a custom Tiktoken.
//   cl100k_out: also write the bundled cl100k_base ranks as a plain rank file there.
//   Bytes are decoded with TextDecoder (invalid UTF-8 -> U+FFFD, WHATWG), as a JS caller would.
//   timing_only: return just encode_seconds and n_tokens (bench_tokenizer).
// response: {"ids": [[...]], "texts_b64": [base64 of the UTF-8 that was encoded], "encode_seconds", "n_tokens"}
import { createRequire } from "node:module";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const cache = process.env.FRONTIER_CACHE || path.join(os.homedir(), ".cache", "frontier");
const require = createRequire(path.join(cache, "npm", "node_modules", "x.js"));
const { Tiktoken } = require("tiktoken");

const [reqPath, outPath] = process.argv.slice(2);
const req = JSON.parse(fs.readFileSync(reqPath, "utf8"));

let ranks, specials, pattern;
if (req.encoding === "cl100k_base") {
  const enc = require("tiktoken/encoders/cl100k_base.json");
  ranks = enc.bpe_ranks;
  specials = enc.special_tokens;
  pattern = req.pattern || enc.pat_str;
  if (req.cl100k_out) {
    // Expand tiktoken's compressed "! offset tok tok ..." lines into "tok rank" lines.
    const lines = [];
    for (const line of ranks.split("\n")) {
      if (!line) continue;
      const parts = line.split(" ");
      if (parts[0] === "!") {
        const off = parseInt(parts[1], 10);
        for (let i = 2; i < parts.length; i++) lines.push(`${parts[i]} ${off + i - 2}`);
      } else {
        lines.push(line);
      }
    }
    fs.writeFileSync(req.cl100k_out, lines.join("\n") + "\n");
  }
} else {
  ranks = fs.readFileSync(req.ranks_file, "utf8");
  specials = req.specials || {};
  pattern = req.pattern;
}
const tk = new Tiktoken(ranks, specials, pattern);
const dec = new TextDecoder("utf-8", { fatal: false });
const out = { ids: [], texts_b64: [], encode_seconds: 0, n_tokens: 0 };
const texts = req.texts_b64.map((b64) => dec.decode(Buffer.from(b64, "base64")));
const t0 = process.hrtime.bigint();
const encoded = texts.map((t) => tk.encode_ordinary(t));
out.encode_seconds = Number(process.hrtime.bigint() - t0) / 1e9;  // encoding only, for bench_tokenizer
for (let i = 0; i < texts.length; i++) {
  out.n_tokens += encoded[i].length;
  if (!req.timing_only) {
    out.ids.push(Array.from(encoded[i]));
    out.texts_b64.push(Buffer.from(texts[i], "utf8").toString("base64"));
  }
}
tk.free();
fs.writeFileSync(outPath, JSON.stringify(out));
