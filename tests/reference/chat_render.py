#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reference for fsdp's chat templates: transformers' own apply_chat_template for the text, and
the trained text found independently (run by the pinned reference environment's python).

  chat_render.py cases MODEL_DIR OUT.json
      the conversations the test renders (some with "tools"), with the config's bos_token and
      eos_token (the ones fsdp's chat_render gives the template)
  chat_render.py jsonl CASES.json OUT.jsonl
      the cases without the generation prompt as fsdp-data chat lines ({"messages"[, "tools"]})
  chat_render.py check render LABEL MODEL_DIR CASES.json OURS.json END_OF_TURN
                       [render ... | decoded LABEL MODEL_DIR CASES.json GOT.txt EOS]...
      one process for every group (transformers is imported once, each tokenizer loaded once).
      render: renders each case with AutoTokenizer.from_pretrained(MODEL_DIR).apply_chat_template(
      messages, tools=..., add_generation_prompt=..., tokenize=False) and compares fsdp's text
      byte for byte (a case transformers refuses must be refused by fsdp too); then fsdp's
      trained segments against the rule of docs/data.md, computed here on their own: each
      assistant message's content, reasoning fields and tool_calls are rendered as strings that
      carry the turn's number per character (Marked), through transformers' own Jinja
      environment with only tojson replaced by one that keeps the marks, so the first character
      of a turn's own text is found in the output; the trained text runs from it through the
      end-of-turn string the template writes after the turn (END_OF_TURN, e.g. '<|eot_id|>').
      That marked render must equal apply_chat_template's text too.
      decoded: GOT.txt (`fsdp-data decode` of what prepare made of `jsonl`'s lines) must be each
      line's apply_chat_template text as the tokenizer's normalizer leaves it (Qwen3's is NFC),
      then EOS.
      Each group ends with one line "LABEL: ok: ..." or "LABEL: ... differ", after its
      "LABEL: FAIL ..." lines.
"""
import json
import os
import sys

import jinja2

# The message fields whose text an assistant turn trains (fsdp's chat_template.cpp marks the same).
TRAINED_FIELDS = ("content", "reasoning_content", "thinking", "reasoning", "tool_calls")


class Marked(str):
    """A str whose characters carry the number of the assistant turn they come from (or None),
    kept by the operations the templates apply to message text: +, slicing, strip, split."""

    def __new__(cls, s, marks):
        o = super().__new__(cls, s)
        o.marks = list(marks)
        return o

    def __str__(self):
        return self

    def plain(self):
        return str.__getitem__(self, slice(None))

    def __add__(self, other):
        if not isinstance(other, str):
            return NotImplemented
        return Marked(self.plain() + other, self.marks + marks_of(other))

    def __radd__(self, other):
        if not isinstance(other, str):
            return NotImplemented
        return Marked(other + self.plain(), marks_of(other) + self.marks)

    def __getitem__(self, key):
        if isinstance(key, slice):
            return Marked(self.plain()[key], self.marks[key])
        return Marked(self.plain()[key], [self.marks[key]])

    def _span(self, i, j):
        return Marked(self.plain()[i:j], self.marks[i:j])

    def strip(self, chars=None):
        p = self.plain()
        i = len(p) - len(p.lstrip(chars))
        return self._span(i, max(i, len(p.rstrip(chars))))

    def lstrip(self, chars=None):
        p = self.plain()
        return self._span(len(p) - len(p.lstrip(chars)), len(p))

    def rstrip(self, chars=None):
        return self._span(0, len(self.plain().rstrip(chars)))

    def split(self, sep=None, maxsplit=-1):
        if sep is None:
            raise NotImplementedError("Marked.split() on whitespace")
        parts, pos = [], 0
        for part in self.plain().split(sep, maxsplit):
            parts.append(self._span(pos, pos + len(part)))
            pos += len(part) + len(sep)
        return parts


def marks_of(s):
    return s.marks if isinstance(s, Marked) else [None] * len(s)


def turn_of(x):
    """The assistant turn a value's text comes from, or None."""
    if isinstance(x, Marked):
        return next((m for m in x.marks if m is not None), None)
    if isinstance(x, dict):
        x = list(x.keys()) + list(x.values())
    if isinstance(x, list):
        return next((t for t in map(turn_of, x) if t is not None), None)
    return None


def mark(x, turn):
    if isinstance(x, str):
        return Marked(x, [turn] * len(x))
    if isinstance(x, list):
        return [mark(v, turn) for v in x]
    if isinstance(x, dict):
        return {mark(k, turn): mark(v, turn) for k, v in x.items()}
    return x


def marking_template(source):
    """transformers' compiled environment for `source` (its sandbox, extensions, globals,
    raise_exception, strftime_now, namespace, dict), overlaid so that only tojson differs:
    the JSON of a marked value is marked whole."""
    from transformers.utils import chat_template_utils as ctu
    env = ctu._compile_jinja_template(source).environment.overlay()
    env.filters = dict(env.filters)  # overlay shares the dict: transformers' own stays as it is
    plain = env.filters["tojson"]

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        s = plain(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                  sort_keys=sort_keys)
        turn = turn_of(x)
        return s if turn is None else Marked(s, [turn] * len(s))

    env.filters["tojson"] = tojson
    return env.from_string(source)


def load_template(model_dir, tools=None):
    """The template transformers picks: chat_template.jinja beside the config, else the
    config's; of named templates "tool_use" when there are tools, else "default"."""
    jinja = os.path.join(model_dir, "chat_template.jinja")
    if os.path.exists(jinja):
        return open(jinja, encoding="utf-8").read()
    t = json.load(open(os.path.join(model_dir, "tokenizer_config.json")))["chat_template"]
    if isinstance(t, list):
        named = {n["name"]: n["template"] for n in t}
        return named["tool_use"] if tools is not None and "tool_use" in named else named["default"]
    return t


def special_tokens(case):
    # apply_chat_template passes the tokenizer's special_tokens_map: only the tokens it has.
    return {k: case[k] for k in ("bos_token", "eos_token") if case.get(k)}


def reference(source, case, end_of_turn, tokens=None):
    """The text the template renders as transformers renders it (messages with their None
    values dropped and reasoning aliased by transformers' own code), and the per-character
    trained flags the rule predicts. tokens: the special tokens given to the template
    (default: the case's bos_token and eos_token, where set)."""
    from transformers.utils import chat_template_utils as ctu
    messages = []
    for k, m in enumerate(case["messages"]):
        m = {key: v for key, v in m.items() if v is not None}  # apply_chat_template does this
        if m.get("role") == "assistant":
            m = {key: mark(v, k) if key in TRAINED_FIELDS else v for key, v in m.items()}
        messages.append(m)
    messages = ctu._alias_reasoning_fields(messages)
    variables = dict(special_tokens(case) if tokens is None else tokens)
    variables.update(messages=messages, tools=case.get("tools"), documents=None,
                     add_generation_prompt=case["add_generation_prompt"])
    out, marks = "", []
    for chunk in marking_template(source).generate(**variables):
        out += chunk
        marks += marks_of(chunk)
    text = str.__getitem__(out, slice(None))
    trained = [False] * len(text)
    for turn in sorted({m for m in marks if m is not None}):
        first = marks.index(turn)
        last = len(marks) - 1 - marks[::-1].index(turn)
        end = text.find(end_of_turn, last)
        assert end >= 0, f"turn {turn}: no {end_of_turn!r} after its text"
        for i in range(first, end + len(end_of_turn)):
            trained[i] = True
    return text, trained


def cases(model_dir, path):
    config = json.load(open(os.path.join(model_dir, "tokenizer_config.json")))

    def token(name):
        t = config.get(name)
        return (t.get("content") if isinstance(t, dict) else t) or ""

    S = lambda c: {"role": "system", "content": c}
    U = lambda c: {"role": "user", "content": c}
    A = lambda c, **kw: dict({"role": "assistant", "content": c}, **kw)
    # Keys deliberately out of sorted order: tojson keeps the caller's order, as json.dumps does.
    call = {"type": "function", "function": {"name": "get_weather", "arguments":
            {"when": {"hour": 9.5, "day": 1}, "unit": "celsius", "city": "Z\u00fcrich"}}}
    text_call = {"type": "function", "function": {"name": "now", "arguments": "{\"tz\": \"UTC\"}"}}
    tools = [
        {"type": "function", "function": {
            "name": "get_weather", "description": "The weather in a city, \u00b0C or \u00b0F.",
            "parameters": {"type": "object", "properties": {
                "city": {"type": "string", "description": "a city's name, e.g. Z\u00fcrich"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "when": {"type": "object", "properties": {"day": {"type": "integer"}}}},
                "required": ["city"]}}},
        {"type": "function", "function": {"name": "now", "description": "The time.",
                                          "parameters": {"type": "object", "properties": {}}}}]
    conversations = {
        "turns": [S("You are a helpful assistant."), U("Hi!"), A("Hello! How can I help?"),
                  U("What is 2+2?"), A("2+2 = 4."), U("Thanks.")],
        "no_system": [U("one"), A("two"), U("three"), A("four")],
        "unicode": [S("\u8bf7\u7528\u4e2d\u6587\u56de\u7b54\u3002"),
                    U("\u0645\u0631\u062d\u0628\u0627 \U0001F469\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466"),
                    A("Cafe\u0301 na\u0131\u0308ve \u00e9t\u00e9 \u65e5\u672c\u8a9e \U0001F44D\U0001F3FD"),
                    U("\u00a0\u3000  needs trim \t\n"), A("\n\n  padded answer \u2003\n")],
        "think_in_content": [U("Solve x+1=3."),
                             A("<think>\nx = 3 - 1\n</think>\n\nx = 2."),
                             U("And x+2=5?"),
                             A("<think>\n\nsubtract 2\n\n</think>\n\n\nx = 3.")],
        "reasoning_content": [S("Think first."), U("Capital of France?"),
                              A("Paris.", reasoning_content="\nThe capital is Paris.\n"),
                              U("And of Italy?"),
                              A("\nRome.", reasoning_content="Rome is the capital.")],
        # transformers copies "reasoning" and "thinking" into reasoning_content (and the other
        # way round), and drops keys whose value is null.
        "reasoning_aliases": [U("a?"), A("A.", reasoning="because a"), U("b?"),
                              A("B.", thinking="because b", reasoning_content=None),
                              U("c?"), A("C.", reasoning_content="", name=None)],
        "tool_turns": [U("Weather in Z\u00fcrich?"), A("", tool_calls=[call]),
                       {"role": "tool", "content": "{\"temp\": 21}"},
                       {"role": "tool", "content": "sunny"},
                       A("It is 21 \u00b0C and sunny.", tool_calls=None),
                       U("<tool_response>\nlate\n</tool_response>"), A("Noted.", tool_calls=[call])],
        "empty_answer": [U("Say nothing."), A(""), U("ok")],
        "last_is_assistant": [U("q"), A("<think>\nr\n</think>\n\na")],
    }
    with_tools = {
        "tools": ([S("Use the tools."), U("Weather in Z\u00fcrich, and the time?"),
                   A("Checking.", tool_calls=[call, text_call]),
                   {"role": "tool", "content": "{\"temp\": 21}"},
                   {"role": "tool", "content": "12:00"},
                   A("21 \u00b0C at noon.")], tools),
        "tools_no_system": ([U("Time?"), A("", tool_calls=[text_call]),
                             {"role": "tool", "content": "12:00"}, A("Noon.")], tools[1:]),
        "tools_empty_list": ([U("Hi"), A("Hello.")], []),
    }
    out = []
    for gen in (False, True):
        for name, messages in conversations.items():
            out.append({"name": f"{name}/gen={int(gen)}", "messages": messages,
                        "add_generation_prompt": gen})
        for name, (messages, t) in with_tools.items():
            out.append({"name": f"{name}/gen={int(gen)}", "messages": messages, "tools": t,
                        "add_generation_prompt": gen})
    for c in out:
        c.update(bos_token=token("bos_token"), eos_token=token("eos_token"))
    json.dump(out, open(path, "w"), ensure_ascii=False, indent=1)


_tokenizers = {}


def tokenizer(model_dir):
    from transformers import AutoTokenizer
    if model_dir not in _tokenizers:
        _tokenizers[model_dir] = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    return _tokenizers[model_dir]


def jsonl(cases_path, out_path):
    with open(out_path, "w") as out:
        for c in json.load(open(cases_path)):
            if not c["add_generation_prompt"]:
                line = {"messages": c["messages"]}
                if "tools" in c:
                    line["tools"] = c["tools"]
                out.write(json.dumps(line, ensure_ascii=False) + "\n")


def decoded(label, model_dir, cases_path, got_path, eos):
    tok = tokenizer(model_dir)
    normalizer = tok.backend_tokenizer.normalizer
    want = ""
    chats = [c for c in json.load(open(cases_path)) if not c["add_generation_prompt"]]
    for c in chats:
        t = tok.apply_chat_template(c["messages"], tools=c.get("tools"), tokenize=False)
        want += (normalizer.normalize_str(t) if normalizer else t) + eos
    got = open(got_path, encoding="utf-8").read()
    if got != want:
        i = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        print(f"{label}: prepare's chats differ from apply_chat_template's at character {i}: "
              f"ours {got[i:i + 40]!r}, transformers {want[i:i + 40]!r}")
        return 1
    print(f"{label}: ok: fsdp-data prepare's {len(chats)} chats "
          f"({sum('tools' in c for c in chats)} with tools) decode to apply_chat_template's text")
    return 0


def check(label, model_dir, cases_path, ours_path, end_of_turn):
    tok = tokenizer(model_dir)
    todo = json.load(open(cases_path))
    ours = {r["name"]: r for r in json.load(open(ours_path))}
    fails = refused = 0

    def fail(message):
        nonlocal fails
        print(f"{label}: FAIL {message}")
        fails += 1

    for case in todo:
        name = case["name"]
        if special_tokens(case) != {k: v for k, v in tok.special_tokens_map.items()
                                    if k in ("bos_token", "eos_token")}:
            fail(f"{name}: the case's bos/eos are not transformers' {tok.special_tokens_map}")
            continue
        got = ours.get(name, {"error": "no result"})
        try:
            text = tok.apply_chat_template(case["messages"], tools=case.get("tools"),
                                           add_generation_prompt=case["add_generation_prompt"],
                                           tokenize=False)
        except jinja2.TemplateError as e:
            refused += 1
            if "error" not in got:
                fail(f"{name}: transformers refuses it ({e}), fsdp renders it")
            continue
        if "error" in got:
            fail(f"{name}: {got['error']}")
            continue
        marked, trained = reference(tok.get_chat_template(None, case.get("tools")), case,
                                    end_of_turn, tok.special_tokens_map)
        got_text = "".join(t for t, _ in got["segments"])
        got_trained = [flag for t, flag in got["segments"] for _ in t]
        if got_text != text:
            i = next((k for k, (a, b) in enumerate(zip(got_text, text)) if a != b),
                     min(len(got_text), len(text)))
            fail(f"{name}: text differs at {i}: ours {got_text[i:i + 40]!r}, "
                 f"transformers {text[i:i + 40]!r}")
        elif marked != text:
            fail(f"{name}: the marked render differs from apply_chat_template's")
        elif got_trained != trained:
            want = ["".join(c for c, f in zip(text, trained) if f)]
            have = ["".join(t for t, f in got["segments"] if f)]
            fail(f"{name}: trained text differs: ours {have!r}, rule {want!r}")
        elif not any(trained) and any(m.get("role") == "assistant" and m.get("content")
                                      for m in case["messages"]):
            fail(f"{name}: nothing trained")
    if fails:
        print(f"{label}: {fails} of {len(todo)} cases differ")
        return 1
    print(f"{label}: ok: {len(todo) - refused} cases byte-identical to apply_chat_template, trained text "
          f"as the rule predicts" + (f"; {refused} refused by both" if refused else ""))
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) == 3 and args[0] == "cases":
        cases(args[1], args[2])
    elif len(args) == 3 and args[0] == "jsonl":
        jsonl(args[1], args[2])
    elif len(args) > 1 and args[0] == "check" and (len(args) - 1) % 6 == 0 and \
            all(args[k] in ("render", "decoded") for k in range(1, len(args), 6)):
        groups = [args[k:k + 6] for k in range(1, len(args), 6)]
        sys.exit(max((check if g[0] == "render" else decoded)(*g[1:]) for g in groups))
    else:
        sys.exit(__doc__)
