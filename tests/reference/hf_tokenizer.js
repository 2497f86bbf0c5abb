#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// The independent side of fsdp's tokenizer tests and benchmark: @lenml/tokenizers (a fork of
// transformers.js, a JavaScript reimplementation of Hugging Face's tokenizers) and tiktoken (its
// Rust core built to WASM). Modules are looked up under $TOKENIZER_NODE_MODULES.
//   texts OUT.json [cases]               the test texts: named cases and a generated corpus
//                                        (with "cases", the named cases only)
//   id-lists DIR N OUT.json              N random id lists (bytes that split UTF-8 sequences,
//                                        added and special tokens) for decode
//   run DIR TEXTS.json IDS.json OUT.json lenml's encode of each text, without and with special
//                                        tokens, and decode of each id list, plain and skipping
//                                        special tokens (IDS.json may be "-": none)
//   compare DIR TEXTS.json IDS.json OURS.json REF.json
//                                        prints "ok:"/"FAIL:" lines and the first difference
//   template SRC_DIR OUT_DIR             SRC_DIR's files with the post-processor Llama 3.1
//                                        ships: ByteLevel, then "<|begin_of_text|> $A"
//   gpt2 OUT_DIR                         GPT-2's tokenizer.json as Hugging Face writes it, and its
//                                        encoder.json, made from tiktoken's gpt2 ranks (merges
//                                        as Hugging Face's converter derives them from ranks)
//   gpt2-compare TEXTS.json OURS.json    our ids against tiktoken's gpt2 encoding of each text
//   bench-text BYTES OUT.txt             about BYTES bytes of text for the benchmark: words of a
//                                        60,000-word lexicon (Latin, CJK, Cyrillic, Arabic,
//                                        emoji) drawn by Zipf's law, numbers, punctuation
//   tiktoken DIR FILE RUNS               tiktoken built from DIR's vocabulary and split pattern:
//                                        MB/s of encode_ordinary on FILE, one line per run
'use strict';
const fs = require('fs');
const path = require('path');

const MODULES = process.env.TOKENIZER_NODE_MODULES || path.join(process.cwd(), 'node_modules');
const need = (name) => require(require.resolve(name, { paths: [path.dirname(MODULES)] }));

function readJson(file) { return JSON.parse(fs.readFileSync(file, 'utf8')); }
function writeJson(file, value) { fs.writeFileSync(file, JSON.stringify(value)); }

function loadTokenizer(dir) {
  const { TokenizerLoader } = need('@lenml/tokenizers');
  const cfgFile = path.join(dir, 'tokenizer_config.json');
  return TokenizerLoader.fromPreTrained({
    tokenizerJSON: readJson(path.join(dir, 'tokenizer.json')),
    tokenizerConfig: fs.existsSync(cfgFile) ? readJson(cfgFile) : {},
  });
}

// A small deterministic generator (mulberry32), so both sides and every run see the same text.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Cases the two tokenizers' pipelines treat differently (Llama 3: digits in threes, no
// normalizer; Qwen3: single digits, NFC). Left out on purpose: U+FEFF and U+180E (JavaScript's
// \s and Oniguruma's disagree on them), U+017F (JavaScript's case-insensitive rewrite of the
// contraction pattern lacks it) and characters newer than Unicode 14; tests/unit covers those.
const CASES = {
  empty: '',
  english: "The quick brown fox jumps over the lazy dog. It's 5 o'clock; we'll see what they've done.",
  contractions: "DON'T I'M YOU'RE WE'VE SHE'LL HE'D IT'S don't i'm Don'T 'S 'sup '' 'Ll",
  cjk: '我爱北京天安门。日本語のテキスト、カタカナとひらがな。한국어 문장입니다. 中文，标点！',
  arabic: 'مرحبا بالعالم، هذا نص عربي. العدد ١٢٣٤٥ والرقم 678.',
  scripts: 'שלום עולם हिन्दी भाषा ภาษาไทย Ελληνικά Русский текст ქართული Հայերեն',
  emoji: '👩‍💻 👨‍👩‍👧‍👦 👍🏽👍🏿 🇫🇷🇯🇵🏳️‍🌈 ❤️‍🔥 😀😃😄 ☕️ 1️⃣ 🫠',
  nfd: 'e\u0301cole cafe\u0301 n\u0303an\u0303a A\u030a Ko\u0308ln \u1100\u1161\u11a8 o\u0308\u0301',
  nbsp: 'a\u00a0b \u00a0 c\u202fd\u2009e\u3000f \u2028 g\u200bh\u00a0\u00a0\u00a0i',
  digits: '1234567890 12345 3.14159 2024-12-04 1,000,000 ٣٤٥ １２３ 0.5e-10 99999999999999999999',
  tabs_crlf: 'a\tb\t\tc\r\nd\r\n\r\ne\n\r f \r',
  runs: '   \n\n\n    x  \n \t \n\n  y      \n',
  specials: '<|begin_of_text|>Hello<|end_of_text|> <|im_start|>user\nhi<|im_end|>\n' +
    '<|im_start|>assistant\n<think>\n\n</think>\n\nok<|im_end|><|endoftext|>',
  special_partial: '<|im_start <|begin_of_text| <|endoftext|><|im_end|><|im_start|><|im_start|>x',
  code: "def f(x):\n    return x**2  # square\n\nif __name__ == '__main__':\n\tprint(f(3))\n",
  long_runs: 'a'.repeat(1000) + ' ' + '🙂'.repeat(200) + ' ' + '9'.repeat(200) + ' ' +
    '-'.repeat(300) + ' '.repeat(100) + '\n'.repeat(50),
  latin: 'naïve façade Zürich Ærøskøbing İstanbul ǅ ß ẞ ﬁ Ǆemal',
  punctuation: 'Hello!!! What?? ... --- ((())) [x] {y} <z> @#$%^&*_+=|\\/~`',
  urls: 'https://example.com/path?q=1&r=2#frag user@mail.org C:\\Windows\\path',
};

// Fragments the corpus is woven from; each pick is one of these or a generated run.
const WORDS = ['the', 'of', 'and', 'tokenizer', 'shard', 'gradient', 'Hello', 'WORLD', 'naïve',
  'über', 'café', 'résumé', "DON'T", "I'M", "we'll", "You've", "it's", "SHE'D", '我们', '北京',
  '東京タワー', 'カタカナ', '한국어', 'مرحبا', 'العالم', 'שלום', 'हिन्दी', 'Ελληνικά', 'Привет',
  '👩‍💻', '👨‍👩‍👧‍👦', '👍🏽', '🇫🇷', '🇯🇵', '❤️', '😀', 'e\u0301', 'n\u0303', 'A\u030a', '\u1100\u1161',
  '(x)', '[1]', '{a: b}', '...', '--', '!?', '#include', 'i++', 'a_b', 'C:\\path', '$10.99'];
const SPACES = [' ', ' ', ' ', ' ', '  ', '\t', '\n', '\n\n', '\r\n', '\u00a0', '   \n', ' \n ',
  '\u3000', '\u2009'];
const SPECIALS = ['<|begin_of_text|>', '<|end_of_text|>', '<|eot_id|>', '<|im_start|>',
  '<|im_end|>', '<|endoftext|>', '<think>', '</think>', '<|start_header_id|>'];

function corpus(bytes, seed) {
  const r = rng(seed);
  const pick = (list) => list[Math.floor(r() * list.length)];
  const parts = [];
  let size = 0;
  while (size < bytes) {
    const u = r();
    let p;
    if (u < 0.62) p = pick(WORDS);
    else if (u < 0.72) p = String(Math.floor(r() * 10 ** (1 + Math.floor(r() * 12))));
    else if (u < 0.74) p = pick(SPECIALS);
    else if (u < 0.76) p = pick(WORDS).toUpperCase();
    else p = pick(SPACES);
    parts.push(p);
    if (u < 0.76) parts.push(r() < 0.8 ? ' ' : pick(SPACES));
    size += Buffer.byteLength(p) + 1;
  }
  return parts.join('');
}

// Text whose words follow Zipf's law over a large lexicon, so that a cache of merged words
// helps only as much as it does on real text.
function benchText(bytes, seed) {
  const r = rng(seed);
  const int = (n) => Math.floor(r() * n);
  const fromRange = (lo, hi, n) => Array.from({ length: n }, () => String.fromCodePoint(lo + int(hi - lo))).join('');
  const syllables = ['ka', 'to', 're', 'mi', 'an', 'el', 'st', 'or', 'in', 'th', 'qu', 'ing', 'er',
    'pro', 'con', 'ver', 'al', 'ment', 'ous', 'ly', 'tion', 'be', 'de', 'ch', 'sh', 'o', 'u', 'y'];
  const lexicon = [];
  for (let i = 0; i < 60000; ++i) {
    const u = r();
    let w;
    if (u < 0.78) {
      w = Array.from({ length: 1 + int(4) }, () => syllables[int(syllables.length)]).join('');
      if (r() < 0.12) w = w[0].toUpperCase() + w.slice(1);
    } else if (u < 0.9) w = fromRange(0x4e00, 0x9fa5, 1 + int(3));
    else if (u < 0.95) w = fromRange(0x430, 0x44f, 3 + int(6));
    else if (u < 0.98) w = fromRange(0x627, 0x64a, 3 + int(5));
    else w = fromRange(0x1f600, 0x1f64f, 1 + int(2));
    lexicon.push(w);
  }
  const cumulative = [];
  let total = 0;
  for (let k = 1; k <= lexicon.length; ++k) cumulative.push((total += 1 / k ** 1.07));
  const word = () => {
    const x = r() * total;
    let lo = 0, hi = cumulative.length - 1;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (cumulative[mid] < x) lo = mid + 1; else hi = mid; }
    return lexicon[lo];
  };
  const parts = [];
  let size = 0;
  while (size < bytes) {
    const n = 6 + int(14);
    const sentence = [];
    for (let i = 0; i < n; ++i) sentence.push(r() < 0.05 ? String(int(100000)) : word());
    let s = sentence.join(' ');
    s = s[0].toUpperCase() + s.slice(1) + ['.', '.', '?', '!', ';', ':'][int(6)];
    s += r() < 0.15 ? '\n\n' : ' ';
    parts.push(s);
    size += Buffer.byteLength(s);
  }
  return parts.join('');
}

function texts(casesOnly) {
  const out = Object.entries(CASES).map(([name, text]) => ({ name, text }));
  if (casesOnly) return out;
  for (let i = 0; i < 40; ++i) out.push({ name: `doc${i}`, text: corpus(1000 + 250 * i, 100 + i) });
  out.push({ name: 'corpus', text: corpus(200 * 1024, 7) });
  return out;
}

// What the C++ side's tokenize_json writes for the same inputs.
function run(dir, items, lists) {
  const t = loadTokenizer(dir);
  const opts = (skip) => ({ skip_special_tokens: skip, clean_up_tokenization_spaces: false });
  return {
    encode: items.map(({ text }) => ({
      plain: t.encode(text, { add_special_tokens: false }),
      special: t.encode(text, { add_special_tokens: true }),
    })),
    decode: lists.map((ids) => ({ text: t.decode(ids, opts(false)), skip: t.decode(ids, opts(true)) })),
  };
}

// Random id lists over the whole vocabulary, the byte tokens (so that lists end or begin inside
// a UTF-8 sequence) and the added tokens.
function idLists(dir, n) {
  const j = readJson(path.join(dir, 'tokenizer.json'));
  const vocab = Object.values(j.model.vocab);
  const added = j.added_tokens.map((t) => t.id);
  const byteIds = Object.entries(j.model.vocab).filter(([k]) => [...k].length === 1).map(([, v]) => v);
  const r = rng(99);
  const pick = (list) => list[Math.floor(r() * list.length)];
  const lists = [];
  for (let i = 0; i < n; ++i) {
    const len = 1 + Math.floor(r() * 24);
    const ids = [];
    for (let k = 0; k < len; ++k) {
      const u = r();
      ids.push(u < 0.5 ? pick(vocab) : u < 0.9 ? pick(byteIds) : pick(added));
    }
    lists.push(ids);
  }
  return lists;
}

function firstDifference(a, b) {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) ++i;
  return i;
}

function show(list, at) {
  return JSON.stringify(list.slice(Math.max(0, at - 3), at + 4));
}

// Prints ok/FAIL lines and returns the number of failures.
function compare(dir, items, ours, ref) {
  const nfc = JSON.stringify(readJson(path.join(dir, 'tokenizer.json')).normalizer || {}).includes('"NFC"');
  let fails = 0;
  const fail = (msg) => { ++fails; console.log(`FAIL: ${msg}`); };
  const differ = (name, a, b) => {
    if (JSON.stringify(a) === JSON.stringify(b)) return;
    const at = firstDifference(a, b);
    fail(`${name}: differs at ${at} of ${b.length}: ours ${show(a, at)}, reference ${show(b, at)}`);
  };
  ref.encode.forEach((r, i) => {
    const o = ours.encode[i], name = items[i].name;
    differ(`${name} ids`, o.plain, r.plain);
    differ(`${name} ids with special tokens`, o.special, r.special);
    const want = nfc ? items[i].text.normalize('NFC') : items[i].text;
    if (o.decoded !== want) fail(`${name}: decode(encode(text)) is not the text${nfc ? ' (NFC)' : ''}`);
  });
  ref.decode.forEach((r, i) => {
    differ(`decode of id list ${i}`, ours.decode[i].text, r.text);
    differ(`decode of id list ${i} skipping special tokens`, ours.decode[i].skip, r.skip);
  });
  const bytes = items.reduce((s, x) => s + Buffer.byteLength(x.text), 0);
  console.log(`${fails === 0 ? 'ok' : 'FAIL'}: ${ref.encode.length} texts (${bytes} bytes) encoded ` +
    `and decoded, ${ref.decode.length} id lists decoded: ${fails} differences`);
  return fails;
}

// Llama 3.1 and later ship this post-processor; the npm copy of Llama 3 predates it.
function withTemplate(src, out) {
  const j = readJson(path.join(src, 'tokenizer.json'));
  const bos = j.added_tokens.find((t) => t.content === '<|begin_of_text|>');
  j.post_processor = {
    type: 'Sequence',
    processors: [
      { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
      {
        type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: bos.content, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
        pair: [{ SpecialToken: { id: bos.content, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
          { SpecialToken: { id: bos.content, type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
        special_tokens: { [bos.content]: { id: bos.content, ids: [bos.id], tokens: [bos.content] } },
      },
    ],
  };
  fs.mkdirSync(out, { recursive: true });
  writeJson(path.join(out, 'tokenizer.json'), j);
  fs.copyFileSync(path.join(src, 'tokenizer_config.json'), path.join(out, 'tokenizer_config.json'));
}

// The byte-level spelling of bytes (GPT-2's alphabet).
function spell(bytes) {
  let next = 256;
  const cp = [];
  for (let b = 0; b < 256; ++b) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
    cp.push(printable ? b : next++);
  }
  return [...bytes].map((b) => String.fromCodePoint(cp[b])).join('');
}

// GPT-2 from tiktoken's ranks: the vocabulary is the ranks; each token's merges are the ways of
// cutting it into two tokens, ordered by the merged token's rank, then by the parts' ranks.
function gpt2(out) {
  const { get_encoding } = need('tiktoken');
  const enc = get_encoding('gpt2');
  const vocab = Object.create(null);  // no inherited keys: "constructor" is a GPT-2 token
  for (let id = 0; id < 50256; ++id) vocab[spell(enc.decode_single_token_bytes(id))] = id;
  enc.free();
  const merges = [];
  for (const [tok, id] of Object.entries(vocab)) {
    const chars = [...tok];
    const local = [];
    for (let i = 1; i < chars.length; ++i) {
      const a = chars.slice(0, i).join(''), b = chars.slice(i).join('');
      if (a in vocab && b in vocab) local.push([a, b, id]);
    }
    local.sort((x, y) => vocab[x[0]] - vocab[y[0]] || vocab[x[1]] - vocab[y[1]]);
    merges.push(...local);
  }
  merges.sort((x, y) => x[2] - y[2]);
  const byteLevel = (prefix) => ({ type: 'ByteLevel', add_prefix_space: prefix, trim_offsets: true, use_regex: true });
  const eot = { id: 50256, content: '<|endoftext|>', single_word: false, lstrip: false, rstrip: false,
    normalized: true, special: true };
  const j = {
    version: '1.0', truncation: null, padding: null, added_tokens: [eot], normalizer: null,
    pre_tokenizer: byteLevel(false), post_processor: { ...byteLevel(true), trim_offsets: false },
    decoder: byteLevel(false),
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '',
      end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, ignore_merges: false,
      vocab: { ...vocab, '<|endoftext|>': 50256 }, merges: merges.map(([a, b]) => `${a} ${b}`) },
  };
  fs.mkdirSync(out, { recursive: true });
  writeJson(path.join(out, 'tokenizer.json'), j);
  writeJson(path.join(out, 'encoder.json'), j.model.vocab);
  writeJson(path.join(out, 'tokenizer_config.json'), { bos_token: '<|endoftext|>', eos_token: '<|endoftext|>' });
}

function gpt2Compare(items, ours) {
  const { get_encoding } = need('tiktoken');
  const enc = get_encoding('gpt2');
  let fails = 0, bytes = 0;
  items.forEach(({ name, text }, i) => {
    const want = Array.from(enc.encode(text, 'all'));  // <|endoftext|> as the special token
    bytes += Buffer.byteLength(text);
    if (JSON.stringify(want) !== JSON.stringify(ours.encode[i].plain)) {
      const at = firstDifference(ours.encode[i].plain, want);
      ++fails;
      console.log(`FAIL: ${name}: differs at ${at} of ${want.length}: ours ${show(ours.encode[i].plain, at)}, tiktoken ${show(want, at)}`);
    }
  });
  enc.free();
  console.log(`${fails === 0 ? 'ok' : 'FAIL'}: ${items.length} texts (${bytes} bytes) against tiktoken's gpt2: ${fails} differences`);
  return fails;
}

// tiktoken from the same vocabulary (rank = id, bytes from the byte-level spelling) and pattern.
function tiktokenBench(dir, file, runs) {
  const { Tiktoken } = need('tiktoken/lite');
  const j = readJson(path.join(dir, 'tokenizer.json'));
  const byteOf = new Map();
  let next = 256;
  for (let b = 0; b < 256; ++b) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
    byteOf.set(String.fromCodePoint(printable ? b : next++), b);
  }
  const lines = Object.entries(j.model.vocab).map(([tok, id]) =>
    `${Buffer.from([...tok].map((c) => byteOf.get(c))).toString('base64')} ${id}`);
  const split = (function find(p) {
    if (p.type === 'Split') return p.pattern.Regex;
    return (p.pretokenizers || []).map(find).find((x) => x);
  })(j.pre_tokenizer);
  const enc = new Tiktoken(lines.join('\n'), {}, split);
  const text = fs.readFileSync(file, 'utf8');
  const bytes = Buffer.byteLength(text);
  for (let i = 0; i < runs; ++i) {
    const t0 = process.hrtime.bigint();
    const n = enc.encode_ordinary(text).length;
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    console.log(`tiktoken ${bytes} bytes ${n} tokens ${s.toFixed(3)} s ${(bytes / s / 1e6).toFixed(2)} MB/s`);
  }
  enc.free();
}

function main(argv) {
  const [cmd, ...a] = argv;
  switch (cmd) {
    case 'texts': writeJson(a[0], texts(a[1] === 'cases')); return 0;
    case 'id-lists': writeJson(a[2], idLists(a[0], Number(a[1]))); return 0;
    case 'run': writeJson(a[3], run(a[0], readJson(a[1]), a[2] === '-' ? [] : readJson(a[2]))); return 0;
    case 'compare': return compare(a[0], readJson(a[1]), readJson(a[2]), readJson(a[3])) ? 1 : 0;
    case 'template': withTemplate(a[0], a[1]); return 0;
    case 'gpt2': gpt2(a[0]); return 0;
    case 'gpt2-compare': return gpt2Compare(readJson(a[0]), readJson(a[1])) ? 1 : 0;
    case 'bench-text': fs.writeFileSync(a[1], benchText(Number(a[0]), 2024)); return 0;
    case 'tiktoken': tiktokenBench(a[0], a[1], Number(a[2] || 5)); return 0;
    default:
      console.error('usage: hf_tokenizer.js texts|id-lists|run|compare|template|gpt2|gpt2-compare|bench-text|tiktoken ...');
      return 2;
  }
}

process.exitCode = main(process.argv.slice(2));
