#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The independent side of tests/e2e/fsdp_data.sh: the files `fsdp-data prepare` should write,
# written here by transformers' tokenizer (run by the pinned reference environment's python,
# offline) from documents Python reads from the inputs on its own.
#   expect MODEL_DIR EOS WANT.bin INPUT... [-- MODEL_DIR EOS WANT.bin INPUT...]...
#       WANT.bin (llm.c tokens) and WANT.bin.trained (the mask) for INPUT..., and WANT.bin.json
#       (document, chat, token and trained counts, the largest id); several in one process
#       (transformers takes seconds to import)
#   check WANT.bin GOT.bin INFO.json
#       GOT.bin and its mask byte for byte against WANT's (the first differing token named),
#       bar the pair id fsdp-data writes into both headers (the same in the two), and
#       `fsdp-data info --json`'s counts against WANT.bin.json
#   tiny DIR
#       a byte-level tokenizer.json (256 byte tokens, no merges, <|endoftext|> = 256): loads at
#       once, for the error cases
# The tokenizer is AutoTokenizer.from_pretrained(MODEL_DIR) (PreTrainedTokenizerFast where
# tokenizer_config.json names no class). A text document is tokenizer(text) (with its special
# tokens, the post-processor's BOS) then EOS; a prompt/completion is tokenizer(prompt), then the
# completion without special tokens, trained with the EOS; a chat is apply_chat_template's text
# (add_generation_prompt off), cut into trained and untrained parts by the rule of docs/data.md,
# found independently by tests/reference/chat_render.py (an assistant turn's trained text runs
# from its own first character through the end-of-turn string that follows), each part encoded
# without special tokens, the EOS trained.
import json
import os
import struct
import sys

# The end of an assistant turn as each template writes it (what the rule trains through).
END_OF_TURN = {'<|begin_of_text|>': '<|eot_id|>', None: '<|im_end|>\n'}


def load_tokenizer(model_dir):
    from transformers import AutoTokenizer, PreTrainedTokenizerFast
    cfg = json.load(open(os.path.join(model_dir, 'tokenizer_config.json')))
    if 'tokenizer_class' in cfg:
        return AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    return PreTrainedTokenizerFast.from_pretrained(model_dir, local_files_only=True)


def chat_parts(tok, model_dir, messages):
    """[(text, trained)]: transformers' render, cut where chat_render's flags change."""
    import chat_render  # tests/reference, on the path from main()
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
    cfg = json.load(open(os.path.join(model_dir, 'tokenizer_config.json')))
    case = {'messages': messages, 'add_generation_prompt': False,
            'bos_token': cfg.get('bos_token') or '', 'eos_token': cfg.get('eos_token') or ''}
    marked, trained = chat_render.reference(chat_render.load_template(model_dir), case,
                                            END_OF_TURN[cfg.get('bos_token')])
    if marked != text:
        raise SystemExit('FAIL: chat_render.py renders a chat unlike apply_chat_template: %r, %r'
                         % (marked[:200], text[:200]))
    parts, at = [], 0
    for i in range(1, len(text) + 1):
        if i == len(text) or trained[i] != trained[at]:
            parts.append((text[at:i], trained[at]))
            at = i
    return parts


def documents(paths):
    """[(kind, document)] in input order, read with Python's own JSON and files."""
    out = []
    for p in paths:
        data = open(p, 'rb').read().decode('utf-8')
        if p.endswith('.txt'):
            out.append(('text', data))
            continue
        for line in data.split('\n'):
            if line.strip(' \t\r'):
                o = json.loads(line)
                out.append(('text' if 'text' in o else 'pc' if 'prompt' in o else 'chat', o))
    return out


def expect(model_dir, eos, want, paths):
    import transformers
    tok = load_tokenizer(model_dir)
    ids, bits, chats = [], [], 0

    def add(t, on):
        ids.extend(t)
        bits.extend([int(on)] * len(t))

    docs = documents(paths)
    for kind, d in docs:
        if kind == 'text':
            add(tok(d if isinstance(d, str) else d['text'])['input_ids'], True)
        elif kind == 'pc':
            add(tok(d['prompt'])['input_ids'], False)
            add(tok(d['completion'], add_special_tokens=False)['input_ids'], True)
        else:
            chats += 1
            for text, on in chat_parts(tok, model_dir, d['messages']):
                add(tok(text, add_special_tokens=False)['input_ids'], on)
        add([eos], True)
    # llm.c's formats: GPT-2's (uint16) for a vocabulary of at most 65,536 tokens, else the
    # Llama 3 branch's (uint32); a 1024-byte header of int32s.
    wide = len(tok) > 65536
    header = struct.pack('<3i', 20240801 if wide else 20240520, 7 if wide else 1, len(ids))
    with open(want, 'wb') as f:
        f.write(header.ljust(1024, b'\0') + struct.pack('<%d%s' % (len(ids), 'I' if wide else 'H'), *ids))
    # The mask (src/data/trained_mask.hpp): magic, version, tokens, trained, eos; a bit a token,
    # least significant first.
    body = bytearray((len(bits) + 7) // 8)
    for i, b in enumerate(bits):
        body[i // 8] |= b << (i % 8)
    with open(want + '.trained', 'wb') as f:
        f.write(struct.pack('<iiqqiQ', 20261204, 1, len(bits), sum(bits), eos, 0).ljust(1024, b'\0') + bytes(body))
    json.dump({'documents': len(docs), 'chats': chats, 'tokens': len(ids), 'trained_tokens': sum(bits),
               'max_id': max(ids), 'width': 32 if wide else 16,
               'tokenizer': '%s (transformers %s)' % (type(tok).__name__, transformers.__version__)},
              open(want + '.json', 'w'))


def first_difference(a, b):
    return next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))


def without_pair_id(data, at):
    """data with its 8-byte pair id at `at` zeroed, and the id: fsdp-data ties the two files
    together with a hash of its own (src/data/trained_mask.hpp), which the reference leaves 0."""
    return data[:at] + bytes(8) + data[at + 8:], struct.unpack_from('<Q', data, at)[0]


def check(want, got, info_path):
    a = open(want, 'rb').read()
    b, pair = without_pair_id(open(got, 'rb').read(), 12)
    width = 4 if a[:4] == struct.pack('<i', 20240801) else 2
    if a != b:
        at = first_difference(a, b)
        token = (at - 1024) // width if at >= 1024 else None
        print('FAIL: %s differs from what transformers gives at byte %d%s (%d and %d bytes)'
              % (got, at, '' if token is None else ' (token %d)' % token, len(b), len(a)))
        return 1
    a = open(want + '.trained', 'rb').read()
    b, mask_pair = without_pair_id(open(got + '.trained', 'rb').read(), 28)
    if pair != mask_pair:
        print('FAIL: the pair ids of %s (%#x) and its mask (%#x) differ' % (got, pair, mask_pair))
        return 1
    if a != b:
        at = first_difference(a, b)
        print('FAIL: %s.trained differs at byte %d%s' % (got, at, '' if at < 1024 else ' (tokens %d-%d)' % (8 * (at - 1024), 8 * (at - 1024) + 7)))
        return 1
    counts = json.load(open(want + '.json'))
    info = json.load(open(info_path))
    for key in ('documents', 'tokens', 'trained_tokens', 'max_id'):
        if info.get(key) != counts[key]:
            print('FAIL: info says %s = %s, the inputs and transformers give %s' % (key, info.get(key), counts[key]))
            return 1
    print('ok: %d documents (%d chats), %d tokens (uint%d), %d trained: .bin and .trained byte for byte '
          'as %s writes them (bar their common pair id), info agrees'
          % (counts['documents'], counts['chats'], counts['tokens'], counts['width'],
             counts['trained_tokens'], counts['tokenizer']))
    return 0


def tiny(out):
    bs = list(range(ord('!'), ord('~') + 1)) + list(range(0xa1, 0xad)) + list(range(0xae, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    vocab = {chr(c): b for b, c in zip(bs, cs)}
    tok = {'version': '1.0', 'truncation': None, 'padding': None,
           'added_tokens': [{'id': 256, 'content': '<|endoftext|>', 'single_word': False,
                             'lstrip': False, 'rstrip': False, 'normalized': False, 'special': True}],
           'normalizer': None,
           'pre_tokenizer': {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': True, 'use_regex': True},
           'post_processor': None,
           'decoder': {'type': 'ByteLevel', 'add_prefix_space': True, 'trim_offsets': True, 'use_regex': True},
           'model': {'type': 'BPE', 'dropout': None, 'unk_token': None, 'continuing_subword_prefix': None,
                     'end_of_word_suffix': None, 'fuse_unk': False, 'byte_fallback': False,
                     'ignore_merges': False, 'vocab': vocab, 'merges': []}}
    json.dump(tok, open(out + '/tokenizer.json', 'w'))
    json.dump({'eos_token': '<|endoftext|>'}, open(out + '/tokenizer_config.json', 'w'))


def main():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'reference'))
    cmd, a = sys.argv[1], sys.argv[2:]
    if cmd == 'expect':
        while a:
            n = a.index('--') if '--' in a else len(a)
            expect(a[0], int(a[1]), a[2], a[3:n])
            a = a[n + 1:]
        return 0
    if cmd == 'check':
        return check(a[0], a[1], a[2])
    if cmd == 'tiny':
        tiny(a[0])
        return 0
    print('usage: fsdp_data_check.py expect|check|tiny ...', file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main())
