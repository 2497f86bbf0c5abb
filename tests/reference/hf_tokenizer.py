#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The independent side of fsdp's tokenizer tests and benchmark: Hugging Face's own `tokenizers`
(the Rust library, `Tokenizer.from_file`) and tiktoken's native core, from the pinned reference
environment (scripts/pyenv.sh). The inputs are generated here, deterministically.

  texts OUT.json [cases]                 the test texts: named cases and a generated corpus
                                         (with "cases", the named cases only)
  id-lists DIR N OUT.json                N random id lists (bytes that split UTF-8 sequences,
                                         added and special tokens) for decode
  run DIR TEXTS.json IDS.json OUT.json   tokenizers' encode of each text, without and with special
                                         tokens, and decode of each id list, plain and skipping
                                         special tokens (IDS.json may be "-": none)
  compare DIR TEXTS.json OURS.json REF.json
                                         prints "FAIL:" lines and a last "ok:"/"FAIL:" line
  template SRC_DIR OUT_DIR               SRC_DIR's files with the post-processor Llama 3.1 ships:
                                         ByteLevel, then "<|begin_of_text|> $A"
  gpt2 TIKTOKEN_DIR OUT_DIR              GPT-2's tokenizer.json (ByteLevel with GPT-2's own split),
                                         its encoder.json and tokenizer_config.json, made from
                                         tiktoken's gpt2 ranks (merges as Hugging Face derives
                                         them from ranks)
  gpt2-compare TIKTOKEN_DIR TEXTS.json OURS.json
                                         our plain ids against tiktoken's gpt2 encoding of each text
  join FIRST.txt TEXTS.json OUT.json     FIRST.txt as the first text, then TEXTS.json's
  unigram SRC_DIR OUT_DIR                SRC_DIR's files with model.type set to "Unigram"
  bench-text BYTES OUT.txt               about BYTES bytes of text for the benchmark: words of a
                                         60,000-word lexicon (Latin, CJK, Cyrillic, Arabic, emoji)
                                         drawn by Zipf's law, numbers, punctuation
  bench tokenizers|tiktoken DIR FILE RUNS
                                         MB/s of one thread's encode of FILE, one line per run:
                                         tokenizers from DIR's tokenizer.json (encode_batch_fast of
                                         its paragraphs, its word cache cleared before each run),
                                         or tiktoken built from DIR's vocabulary and split pattern
                                         (encode_ordinary of the whole text)
"""
import base64
import bisect
import json
import os
import shutil
import sys
import time
import unicodedata


def read_json(path):
    with open(path, encoding='utf-8') as f:
        return json.load(f)


def write_json(path, value):
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(value, f, ensure_ascii=False)


def utf8_len(s):
    return len(s.encode('utf-8'))


M32 = 0xffffffff


def rng(seed):
    """mulberry32, in uint32 arithmetic: the same stream the earlier JavaScript generator gave,
    so the corpus is the one the tests have always used."""
    state = [seed & M32]

    def imul(a, b):
        return (a * b) & M32

    def draw():
        state[0] = (state[0] + 0x6d2b79f5) & M32
        t = state[0]
        t = imul(t ^ (t >> 15), t | 1)
        t = (t ^ ((t + imul(t ^ (t >> 7), t | 61)) & M32)) & M32
        return (t ^ (t >> 14)) / 4294967296

    return draw


# Cases the two tokenizers' pipelines treat differently (Llama 3: digits in threes, no normalizer;
# Qwen3: single digits, NFC), and the characters where regex engines' classes differ (U+FEFF and
# U+180E in \s, U+017F in a case-insensitive 's). Characters newer than Unicode 14 are left out:
# PCRE2 10.42's tables (fsdp's) predate them; tests/unit covers how they are classified.
CASES = {
    'empty': '',
    'english': "The quick brown fox jumps over the lazy dog. It's 5 o'clock; we'll see what they've done.",
    'contractions': "DON'T I'M YOU'RE WE'VE SHE'LL HE'D IT'S don't i'm Don'T 'S 'sup '' 'Ll",
    'cjk': '我爱北京天安门。日本語のテキスト、カタカナとひらがな。한국어 문장입니다. 中文，标点！',
    'arabic': 'مرحبا بالعالم، هذا نص عربي. العدد ١٢٣٤٥ والرقم 678.',
    'scripts': 'שלום עולם हिन्दी भाषा ภาษาไทย Ελληνικά Русский текст ქართული Հայերեն',
    'emoji': '👩‍💻 👨‍👩‍👧‍👦 👍🏽👍🏿 🇫🇷🇯🇵🏳️‍🌈 ❤️‍🔥 😀😃😄 ☕️ 1️⃣ 🫠',
    'nfd': 'e\u0301cole cafe\u0301 n\u0303an\u0303a A\u030a Ko\u0308ln \u1100\u1161\u11a8 o\u0308\u0301',
    'nbsp': 'a\u00a0b \u00a0 c\u202fd\u2009e\u3000f \u2028 g\u200bh\u00a0\u00a0\u00a0i',
    'digits': '1234567890 12345 3.14159 2024-12-04 1,000,000 ٣٤٥ １２３ 0.5e-10 99999999999999999999',
    'tabs_crlf': 'a\tb\t\tc\r\nd\r\n\r\ne\n\r f \r',
    'runs': '   \n\n\n    x  \n \t \n\n  y      \n',
    'specials': '<|begin_of_text|>Hello<|end_of_text|> <|im_start|>user\nhi<|im_end|>\n'
                '<|im_start|>assistant\n<think>\n\n</think>\n\nok<|im_end|><|endoftext|>',
    'special_partial': '<|im_start <|begin_of_text| <|endoftext|><|im_end|><|im_start|><|im_start|>x',
    'code': "def f(x):\n    return x**2  # square\n\nif __name__ == '__main__':\n\tprint(f(3))\n",
    'long_runs': 'a' * 1000 + ' ' + '🙂' * 200 + ' ' + '9' * 200 + ' ' + '-' * 300 + ' ' * 100 + '\n' * 50,
    'latin': 'naïve façade Zürich Ærøskøbing İstanbul ǅ ß ẞ ﬁ Ǆemal',
    'punctuation': 'Hello!!! What?? ... --- ((())) [x] {y} <z> @#$%^&*_+=|\\/~`',
    'urls': 'https://example.com/path?q=1&r=2#frag user@mail.org C:\\Windows\\path',
    # Oniguruma's \s (Hugging Face's) lacks U+180E and U+FEFF; U+017F (long s) folds to 's' in
    # the case-insensitive contractions.
    'oniguruma': "a\u180eb \u180e c\ufeffd \ufeff\ufeff e IT\u017fS it'\u017f DON'\u017fT \u017f\u017f",
}

# Fragments the corpus is woven from; each pick is one of these or a generated run.
WORDS = ['the', 'of', 'and', 'tokenizer', 'shard', 'gradient', 'Hello', 'WORLD', 'naïve',
         'über', 'café', 'résumé', "DON'T", "I'M", "we'll", "You've", "it's", "SHE'D", '我们', '北京',
         '東京タワー', 'カタカナ', '한국어', 'مرحبا', 'العالم', 'שלום', 'हिन्दी', 'Ελληνικά', 'Привет',
         '👩‍💻', '👨‍👩‍👧‍👦', '👍🏽', '🇫🇷', '🇯🇵', '❤️', '😀', 'e\u0301', 'n\u0303', 'A\u030a', '\u1100\u1161',
         '(x)', '[1]', '{a: b}', '...', '--', '!?', '#include', 'i++', 'a_b', 'C:\\path', '$10.99']
SPACES = [' ', ' ', ' ', ' ', '  ', '\t', '\n', '\n\n', '\r\n', '\u00a0', '   \n', ' \n ',
          '\u3000', '\u2009']
SPECIALS = ['<|begin_of_text|>', '<|end_of_text|>', '<|eot_id|>', '<|im_start|>',
            '<|im_end|>', '<|endoftext|>', '<think>', '</think>', '<|start_header_id|>']
# Woven in as well, now that the reference is Hugging Face's own regex engine (the JavaScript
# reference's \s and case folding differed on them).
ONIGURUMA = ['\u180e', '\ufeff', "'\u017f", "IT'\u017f", '\u017f']


def corpus(size, seed, extra=()):
    r = rng(seed)
    words = WORDS + list(extra)

    def pick(lst):
        return lst[int(r() * len(lst))]

    parts, n = [], 0
    while n < size:
        u = r()
        if u < 0.62:
            p = pick(words)
        elif u < 0.72:
            p = str(int(r() * 10 ** (1 + int(r() * 12))))
        elif u < 0.74:
            p = pick(SPECIALS)
        elif u < 0.76:
            p = pick(words).upper()
        else:
            p = pick(SPACES)
        parts.append(p)
        if u < 0.76:
            parts.append(' ' if r() < 0.8 else pick(SPACES))
        n += utf8_len(p) + 1
    return ''.join(parts)


def bench_text(size, seed):
    """Text whose words follow Zipf's law over a large lexicon, so that a cache of merged words
    helps only as much as it does on real text."""
    r = rng(seed)

    def rand_int(n):
        return int(r() * n)

    def from_range(lo, hi, n):
        return ''.join(chr(lo + rand_int(hi - lo)) for _ in range(n))

    syllables = ['ka', 'to', 're', 'mi', 'an', 'el', 'st', 'or', 'in', 'th', 'qu', 'ing', 'er',
                 'pro', 'con', 'ver', 'al', 'ment', 'ous', 'ly', 'tion', 'be', 'de', 'ch', 'sh', 'o',
                 'u', 'y']
    lexicon = []
    for _ in range(60000):
        u = r()
        if u < 0.78:
            w = ''.join(syllables[rand_int(len(syllables))] for _ in range(1 + rand_int(4)))
            if r() < 0.12:
                w = w[0].upper() + w[1:]
        elif u < 0.9:
            w = from_range(0x4e00, 0x9fa5, 1 + rand_int(3))
        elif u < 0.95:
            w = from_range(0x430, 0x44f, 3 + rand_int(6))
        elif u < 0.98:
            w = from_range(0x627, 0x64a, 3 + rand_int(5))
        else:
            w = from_range(0x1f600, 0x1f64f, 1 + rand_int(2))
        lexicon.append(w)
    cumulative, total = [], 0.0
    for k in range(1, len(lexicon) + 1):
        total += 1 / k ** 1.07
        cumulative.append(total)
    parts, n = [], 0
    while n < size:
        words = []
        for _ in range(6 + rand_int(14)):
            words.append(str(rand_int(100000)) if r() < 0.05 else
                         lexicon[bisect.bisect_left(cumulative, r() * total)])
        s = ' '.join(words)
        s = s[0].upper() + s[1:] + ['.', '.', '?', '!', ';', ':'][rand_int(6)]
        s += '\n\n' if r() < 0.15 else ' '
        parts.append(s)
        n += utf8_len(s)
    return ''.join(parts)


def texts(cases_only):
    out = [{'name': k, 'text': v} for k, v in CASES.items()]
    if cases_only:
        return out
    for i in range(40):
        out.append({'name': 'doc%d' % i, 'text': corpus(1000 + 250 * i, 100 + i, ONIGURUMA)})
    out.append({'name': 'corpus', 'text': corpus(200 * 1024, 7)})
    return out


def load(dir_):
    from tokenizers import Tokenizer
    return Tokenizer.from_file(os.path.join(dir_, 'tokenizer.json'))


def run(dir_, items, lists):
    """What tests/data/tokenize_json writes for the same inputs, from Hugging Face's library."""
    t = load(dir_)
    return {
        'encode': [{'plain': t.encode(x['text'], add_special_tokens=False).ids,
                    'special': t.encode(x['text'], add_special_tokens=True).ids} for x in items],
        'decode': [{'text': t.decode(ids, skip_special_tokens=False),
                    'skip': t.decode(ids, skip_special_tokens=True)} for ids in lists],
    }


def id_lists(dir_, n):
    """Random id lists over the whole vocabulary, the byte tokens (so that lists end or begin
    inside a UTF-8 sequence) and the added tokens."""
    j = read_json(os.path.join(dir_, 'tokenizer.json'))
    # The vocabulary in the order the earlier JavaScript generator saw it (a JavaScript object
    # lists keys that are array indices, "0" to "4294967294", first and in numeric order), so
    # the lists are the ones the tests have always used.
    def index_key(k):
        return k.isdigit() and k.isascii() and str(int(k)) == k and int(k) < 2 ** 32 - 1
    entries = list(j['model']['vocab'].items())
    entries = sorted((e for e in entries if index_key(e[0])), key=lambda e: int(e[0])) + \
        [e for e in entries if not index_key(e[0])]
    vocab = [v for _, v in entries]
    added = [t['id'] for t in j['added_tokens']]
    byte_ids = [v for k, v in entries if len(k) == 1]
    r = rng(99)

    def pick(lst):
        return lst[int(r() * len(lst))]

    lists = []
    for _ in range(n):
        ids = []
        for _ in range(1 + int(r() * 24)):
            u = r()
            ids.append(pick(vocab) if u < 0.5 else pick(byte_ids) if u < 0.9 else pick(added))
        lists.append(ids)
    return lists


def first_difference(a, b):
    i = 0
    while i < len(a) and i < len(b) and a[i] == b[i]:
        i += 1
    return i


def show(seq, at):
    return json.dumps(seq[max(0, at - 3):at + 4], ensure_ascii=False)


def compare(dir_, items, ours, ref):
    """Prints FAIL lines and a summary; returns the number of differences."""
    nfc = '"NFC"' in json.dumps(read_json(os.path.join(dir_, 'tokenizer.json')).get('normalizer') or {})
    fails = []

    def differ(name, a, b):
        if a != b:
            at = first_difference(a, b)
            fails.append('%s: differs at %d of %d: ours %s, reference %s' % (name, at, len(b), show(a, at), show(b, at)))

    for i, r in enumerate(ref['encode']):
        o, name = ours['encode'][i], items[i]['name']
        differ(name + ' ids', o['plain'], r['plain'])
        differ(name + ' ids with special tokens', o['special'], r['special'])
        want = unicodedata.normalize('NFC', items[i]['text']) if nfc else items[i]['text']
        if o['decoded'] != want:
            fails.append('%s: decode(encode(text)) is not the text%s' % (name, ' (NFC)' if nfc else ''))
    for i, r in enumerate(ref['decode']):
        differ('decode of id list %d' % i, ours['decode'][i]['text'], r['text'])
        differ('decode of id list %d skipping special tokens' % i, ours['decode'][i]['skip'], r['skip'])
    for f in fails:
        print('FAIL: ' + f)
    size = sum(utf8_len(x['text']) for x in items)
    print('%s: %d texts (%d bytes) encoded and decoded, %d id lists decoded: %d differences'
          % ('FAIL' if fails else 'ok', len(ref['encode']), size, len(ref['decode']), len(fails)))
    return len(fails)


def with_template(src, out):
    """Llama 3.1 and later ship this post-processor; the Llama 3 file predates it."""
    j = read_json(os.path.join(src, 'tokenizer.json'))
    bos = next(t for t in j['added_tokens'] if t['content'] == '<|begin_of_text|>')
    special = {'SpecialToken': {'id': bos['content'], 'type_id': 0}}
    j['post_processor'] = {
        'type': 'Sequence',
        'processors': [
            {'type': 'ByteLevel', 'add_prefix_space': True, 'trim_offsets': False, 'use_regex': True},
            {'type': 'TemplateProcessing',
             'single': [special, {'Sequence': {'id': 'A', 'type_id': 0}}],
             'pair': [special, {'Sequence': {'id': 'A', 'type_id': 0}},
                      {'SpecialToken': {'id': bos['content'], 'type_id': 1}},
                      {'Sequence': {'id': 'B', 'type_id': 1}}],
             'special_tokens': {bos['content']: {'id': bos['content'], 'ids': [bos['id']],
                                                 'tokens': [bos['content']]}}},
        ],
    }
    os.makedirs(out, exist_ok=True)
    write_json(os.path.join(out, 'tokenizer.json'), j)
    shutil.copyfile(os.path.join(src, 'tokenizer_config.json'), os.path.join(out, 'tokenizer_config.json'))


def tiktoken_ranks(path):
    """tiktoken's ranks as the file holds them: `bpe_ranks` is lines of "<first token's text>
    <first rank> <base64 token> ...", consecutive ranks from the first."""
    j = read_json(path)
    ranks = {}
    for line in j['bpe_ranks'].split('\n'):
        fields = line.split(' ')
        if len(fields) < 2:
            continue
        first = int(fields[1])
        for k, tok in enumerate(fields[2:]):
            ranks[base64.b64decode(tok)] = first + k
    return j, ranks


def tiktoken_encoding(tiktoken_dir, name):
    import tiktoken
    j, ranks = tiktoken_ranks(os.path.join(tiktoken_dir, name + '.json'))
    return tiktoken.Encoding(name, pat_str=j['pat_str'], mergeable_ranks=ranks,
                             special_tokens=j['special_tokens'], explicit_n_vocab=j.get('explicit_n_vocab'))


def byte_alphabet():
    """The byte-level spelling of each byte (GPT-2's alphabet)."""
    spelled, extra = {}, 256
    for b in range(256):
        if 0x21 <= b <= 0x7e or 0xa1 <= b <= 0xac or b >= 0xae:
            spelled[b] = chr(b)
        else:
            spelled[b] = chr(extra)
            extra += 1
    return spelled


def gpt2(tiktoken_dir, out):
    """GPT-2 from tiktoken's ranks: the vocabulary is the ranks; each token's merges are the ways
    of cutting it into two tokens, ordered by the merged token's rank, then by the parts' ranks."""
    alphabet = byte_alphabet()
    j, ranks = tiktoken_ranks(os.path.join(tiktoken_dir, 'gpt2.json'))
    vocab = {''.join(alphabet[b] for b in tok): rank for tok, rank in sorted(ranks.items(), key=lambda x: x[1])}
    merges = []
    for tok, rank in vocab.items():
        cuts = [(tok[:i], tok[i:]) for i in range(1, len(tok)) if tok[:i] in vocab and tok[i:] in vocab]
        cuts.sort(key=lambda c: (vocab[c[0]], vocab[c[1]]))
        merges += [(rank, a, b) for a, b in cuts]
    merges.sort(key=lambda m: m[0])  # stable: each token's cuts keep their order

    def byte_level(prefix, trim=True):
        return {'type': 'ByteLevel', 'add_prefix_space': prefix, 'trim_offsets': trim, 'use_regex': True}

    (eot, eot_id), = j['special_tokens'].items()
    tok = {
        'version': '1.0', 'truncation': None, 'padding': None,
        'added_tokens': [{'id': eot_id, 'content': eot, 'single_word': False, 'lstrip': False,
                          'rstrip': False, 'normalized': True, 'special': True}],
        'normalizer': None, 'pre_tokenizer': byte_level(False), 'post_processor': byte_level(True, False),
        'decoder': byte_level(False),
        'model': {'type': 'BPE', 'dropout': None, 'unk_token': None, 'continuing_subword_prefix': '',
                  'end_of_word_suffix': '', 'fuse_unk': False, 'byte_fallback': False,
                  'ignore_merges': False, 'vocab': dict(vocab, **{eot: eot_id}),
                  'merges': ['%s %s' % (a, b) for _, a, b in merges]},
    }
    os.makedirs(out, exist_ok=True)
    write_json(os.path.join(out, 'tokenizer.json'), tok)
    write_json(os.path.join(out, 'encoder.json'), tok['model']['vocab'])
    write_json(os.path.join(out, 'tokenizer_config.json'), {'bos_token': eot, 'eos_token': eot})


def gpt2_compare(tiktoken_dir, items, ours):
    import tiktoken
    enc = tiktoken_encoding(tiktoken_dir, 'gpt2')
    fails = 0
    for i, x in enumerate(items):
        want = enc.encode(x['text'], allowed_special='all')  # <|endoftext|> as the special token
        got = ours['encode'][i]['plain']
        if got != want:
            fails += 1
            at = first_difference(got, want)
            print('FAIL: %s: differs at %d of %d: ours %s, tiktoken %s' % (x['name'], at, len(want), show(got, at), show(want, at)))
    size = sum(utf8_len(x['text']) for x in items)
    print('%s: %d texts (%d bytes) against tiktoken %s gpt2: %d differences'
          % ('FAIL' if fails else 'ok', len(items), size, tiktoken.__version__, fails))
    return fails


def unigram(src, out):
    j = read_json(os.path.join(src, 'tokenizer.json'))
    j['model']['type'] = 'Unigram'
    os.makedirs(out, exist_ok=True)
    write_json(os.path.join(out, 'tokenizer.json'), j)
    shutil.copyfile(os.path.join(src, 'tokenizer_config.json'), os.path.join(out, 'tokenizer_config.json'))


def bench(peer, dir_, path, runs):
    """One thread (RAYON_NUM_THREADS=1, set before the library starts its pool), load time
    excluded, a line per run: bytes, tokens, seconds, MB/s."""
    with open(path, encoding='utf-8') as f:
        text = f.read()
    size = utf8_len(text)
    if peer == 'tokenizers':
        t = load(dir_)
        # Paragraphs, each ending in its "\n\n": the split pattern cuts there anyway, so the ids
        # are the whole text's; one call on the whole text would build one Encoding of
        # millions of tokens (offsets, strings) that nobody asks for.
        paragraphs = text.split('\n\n')
        paragraphs = [p + '\n\n' for p in paragraphs[:-1]] + [paragraphs[-1]]

        def encode():
            t.model._clear_cache()  # each run from an empty word cache, as fsdp-bench does
            return sum(len(e) for e in t.encode_batch_fast(paragraphs, add_special_tokens=False))
    else:
        import tiktoken
        j = read_json(os.path.join(dir_, 'tokenizer.json'))
        byte_of = {c: b for b, c in byte_alphabet().items()}
        ranks = {bytes(byte_of[c] for c in tok): i for tok, i in j['model']['vocab'].items()}

        def split_of(p):
            if p.get('type') == 'Split':
                return p['pattern']['Regex']
            return next((s for s in map(split_of, p.get('pretokenizers', [])) if s), None)

        enc = tiktoken.Encoding('bench', pat_str=split_of(j['pre_tokenizer']), mergeable_ranks=ranks,
                                special_tokens={})

        def encode():
            return len(enc.encode_ordinary(text))
    for _ in range(runs):
        t0 = time.perf_counter()
        n = encode()
        s = time.perf_counter() - t0
        print('%s %d bytes %d tokens %.3f s %.2f MB/s' % (peer, size, n, s, size / s / 1e6), flush=True)


def main(argv):
    cmd, a = (argv[0], argv[1:]) if argv else ('', [])
    if cmd == 'texts':
        write_json(a[0], texts(len(a) > 1 and a[1] == 'cases'))
    elif cmd == 'id-lists':
        write_json(a[2], id_lists(a[0], int(a[1])))
    elif cmd == 'run':
        write_json(a[3], run(a[0], read_json(a[1]), [] if a[2] == '-' else read_json(a[2])))
    elif cmd == 'compare':
        return 1 if compare(a[0], read_json(a[1]), read_json(a[2]), read_json(a[3])) else 0
    elif cmd == 'template':
        with_template(a[0], a[1])
    elif cmd == 'gpt2':
        gpt2(a[0], a[1])
    elif cmd == 'gpt2-compare':
        return 1 if gpt2_compare(a[0], read_json(a[1]), read_json(a[2])) else 0
    elif cmd == 'join':
        with open(a[0], encoding='utf-8', newline='') as f:
            write_json(a[2], [{'name': os.path.basename(a[0]), 'text': f.read()}] + read_json(a[1]))
    elif cmd == 'unigram':
        unigram(a[0], a[1])
    elif cmd == 'bench-text':
        with open(a[1], 'w', encoding='utf-8', newline='') as f:
            f.write(bench_text(int(a[0]), 2024))
    elif cmd == 'bench':
        bench(a[0], a[1], a[2], int(a[3]))
    else:
        print('usage: hf_tokenizer.py texts|id-lists|run|compare|template|gpt2|gpt2-compare|join|'
              'unigram|bench-text|bench ...', file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
