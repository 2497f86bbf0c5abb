#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The independent side of tests/e2e/fsdp_data.sh: the documents of the test's inputs read by
# Python's own JSON and file reading, and the token file and mask fsdp-data wrote compared with
# ids from the reference tokenizer (tests/reference/hf_tokenizer.js, @lenml/tokenizers).
#   docs MODEL_DIR OUT.json INPUT...
#                                  every document's parts, in input order, for the reference
#   check MODEL_DIR OUT.bin REF.json EOS INFO.json INPUT...
#                                  the .bin's ids and .trained's bits against the reference's,
#                                  and `fsdp-data info --json`'s counts against these
#   tiny DIR                       a byte-level tokenizer.json (256 byte tokens, no merges,
#                                  <|endoftext|> = 256): loads at once, for the error cases
# A chat is rendered by python3-jinja2 as transformers renders it and split by the rule of
# docs/data.md, found independently (tests/reference/chat_render.py): an assistant turn's
# trained text runs from its own first character through the end-of-turn string that follows.
import json
import os
import struct
import sys


# The end of an assistant turn as each template writes it (what the rule trains through).
END_OF_TURN = {'<|begin_of_text|>': '<|eot_id|>', None: '<|im_end|>\n'}


def chat_parts(model_dir, messages):
    """The chat as python3-jinja2 renders it, cut into (text, False, trained) by the trained
    flags tests/reference/chat_render.py derives on its own (marked strings)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'reference'))
    import chat_render
    cfg = json.load(open(os.path.join(model_dir, 'tokenizer_config.json')))
    case = {'messages': messages, 'add_generation_prompt': False,
            'bos_token': cfg.get('bos_token') or '', 'eos_token': cfg.get('eos_token') or ''}
    text, trained = chat_render.reference(chat_render.load_template(model_dir), case,
                                          END_OF_TURN[cfg.get('bos_token')])
    parts, at = [], 0
    for i in range(1, len(text) + 1):
        if i == len(text) or trained[i] != trained[at]:
            parts.append((text[at:i], False, trained[at]))
            at = i
    return [p for p in parts if p[0]]


def documents(paths, model_dir):
    """[(kind, parts)] where parts are (text, add_special_tokens, trained)."""
    out = []
    for p in paths:
        data = open(p, 'rb').read().decode('utf-8')
        if p.endswith('.txt'):
            out.append(('text', [(data, True, True)]))
            continue
        for line in data.split('\n'):
            if not line.strip(' \t\r'):
                continue
            o = json.loads(line)
            if 'text' in o:
                out.append(('text', [(o['text'], True, True)]))
            elif 'prompt' in o:
                out.append(('pc', [(o['prompt'], True, False), (o['completion'], False, True)]))
            else:
                out.append(('chat', chat_parts(model_dir, o['messages'])))
    return out


def read_bin(path):
    raw = open(path, 'rb').read()
    magic, version, count = struct.unpack('<3i', raw[:12])
    width = {20240520: 2, 20240801: 4}[magic]
    assert version == {2: 1, 4: 7}[width], version
    assert len(raw) == 1024 + width * count, 'size'
    return width, list(struct.unpack('<%d%s' % (count, 'H' if width == 2 else 'I'), raw[1024:]))


def read_mask(path, n):
    raw = open(path, 'rb').read()
    magic, version, tokens, trained, eos = struct.unpack('<iiqqi', raw[:28])
    assert (magic, version, tokens) == (20261204, 1, n), (magic, version, tokens)
    bits = [(raw[1024 + i // 8] >> (i % 8)) & 1 for i in range(n)]
    assert sum(bits) == trained
    return bits, eos


def main():
    cmd = sys.argv[1]
    if cmd == 'docs':
        items = []
        for _, parts in documents(sys.argv[4:], sys.argv[2]):
            for text, _, _ in parts:
                items.append({'name': 'doc', 'text': text})
        json.dump(items, open(sys.argv[3], 'w'))
        return 0
    if cmd == 'tiny':
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
        json.dump(tok, open(sys.argv[2] + '/tokenizer.json', 'w'))
        json.dump({'eos_token': '<|endoftext|>'}, open(sys.argv[2] + '/tokenizer_config.json', 'w'))
        return 0
    # check
    model_dir = sys.argv[2]
    width, ids = read_bin(sys.argv[3])
    ref = json.load(open(sys.argv[4]))['encode']
    eos = int(sys.argv[5])
    want, trained, k, docs = [], [], 0, 0
    for kind, parts in documents(sys.argv[7:], model_dir):
        docs += 1
        for _, special, on in parts:
            t = ref[k]['special' if special else 'plain']
            k += 1
            want += t
            trained += [int(on)] * len(t)
        want.append(eos)
        trained.append(1)
    bits, mask_eos = read_mask(sys.argv[3] + '.trained', len(ids))
    for i, (a, b) in enumerate(zip(ids, want)):
        if a != b:
            print('FAIL: token %d is %d, the reference says %d' % (i, a, b))
            return 1
    if len(ids) != len(want):
        print('FAIL: %d tokens, the reference says %d' % (len(ids), len(want)))
        return 1
    if bits != trained or mask_eos != eos:
        first = next((i for i in range(len(bits)) if bits[i] != trained[i]), -1)
        print('FAIL: mask differs (first at token %d), eos %d' % (first, mask_eos))
        return 1
    info = json.load(open(sys.argv[6]))
    counts = {'documents': docs, 'tokens': len(want), 'trained_tokens': sum(trained), 'max_id': max(want)}
    for key, value in counts.items():
        if info.get(key) != value:
            print('FAIL: info says %s = %s, the inputs and the reference give %s' % (key, info.get(key), value))
            return 1
    chats = sum(1 for kind, _ in documents(sys.argv[7:], model_dir) if kind == 'chat')
    print('ok: %d documents (%d chats), %d tokens (uint%d), %d trained: ids, mask and info as the reference has them'
          % (docs, chats, len(ids), 8 * width, sum(trained)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
