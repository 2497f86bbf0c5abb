#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reference for fsdp's chat templates: python3-jinja2 configured exactly as transformers'
apply_chat_template configures it (ImmutableSandboxedEnvironment with trim_blocks,
lstrip_blocks and loopcontrols; its tojson, raise_exception, strftime_now; tools=None, documents=None).

  chat_render.py cases MODEL_DIR OUT.json        the conversations the test renders
  chat_render.py check MODEL_DIR CASES.json OURS.json END_OF_TURN
      renders each case, compares fsdp's text byte for byte and its trained segments with the
      rule of docs/data.md, computed here independently: each assistant message's content,
      reasoning_content and tool_calls are rendered as strings that carry the turn's number per
      character (Marked), so the first character of a turn's own text is found in the output;
      the trained text runs from it through the end-of-turn string the template writes after
      the turn (END_OF_TURN, e.g. '<|eot_id|>').
"""
import json
import os
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


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


def environment(marked):
    # transformers' _compile_jinja_template
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        s = json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                       sort_keys=sort_keys)
        turn = turn_of(x) if marked else None  # the JSON of marked values is marked whole
        return s if turn is None else Marked(s, [turn] * len(s))

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda format: datetime.now().strftime(format)
    return env


def load_template(model_dir):
    jinja = os.path.join(model_dir, "chat_template.jinja")
    if os.path.exists(jinja):
        return open(jinja, encoding="utf-8").read()
    return json.load(open(os.path.join(model_dir, "tokenizer_config.json")))["chat_template"]


def variables(case, messages):
    return dict(messages=messages, tools=None, documents=None,
                add_generation_prompt=case["add_generation_prompt"],
                bos_token=case["bos_token"], eos_token=case["eos_token"])


def reference(source, case, end_of_turn):
    """The text transformers renders, and the per-character trained flags the rule predicts."""
    text = environment(False).from_string(source).render(**variables(case, case["messages"]))
    messages = []
    for k, m in enumerate(case["messages"]):
        if m.get("role") == "assistant":
            m = {key: mark(v, k) if key in ("content", "reasoning_content", "tool_calls") else v
                 for key, v in m.items()}
        messages.append(m)
    out, marks = "", []
    for chunk in environment(True).from_string(source).generate(**variables(case, messages)):
        out += chunk
        marks += marks_of(chunk)
    assert out == text, "the marked render differs from the plain one"
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
    call = {"type": "function", "function": {"name": "get_weather", "arguments":
            # keys in sorted order: fsdp takes messages as nlohmann::json, whose objects sort them
            {"city": "Z\u00fcrich", "unit": "celsius", "when": {"day": 1, "hour": 9.5}}}}
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
        "tools": [U("Weather in Z\u00fcrich?"), A("", tool_calls=[call]),
                  {"role": "tool", "content": "{\"temp\": 21}"},
                  {"role": "tool", "content": "sunny"},
                  A("It is 21 \u00b0C and sunny.", tool_calls=None),
                  U("<tool_response>\nlate\n</tool_response>"), A("Noted.", tool_calls=[call])],
        "empty_answer": [U("Say nothing."), A(""), U("ok")],
        "last_is_assistant": [U("q"), A("<think>\nr\n</think>\n\na")],
    }
    out = []
    for name, messages in conversations.items():
        for gen in (False, True):
            out.append({"name": f"{name}/gen={int(gen)}", "messages": messages,
                        "add_generation_prompt": gen, "bos_token": token("bos_token"),
                        "eos_token": token("eos_token")})
    json.dump(out, open(path, "w"), ensure_ascii=False, indent=1)


def check(model_dir, cases_path, ours_path, end_of_turn):
    source = load_template(model_dir)
    todo = json.load(open(cases_path))
    ours = {r["name"]: r for r in json.load(open(ours_path))}
    fails = 0
    for case in todo:
        name = case["name"]
        text, trained = reference(source, case, end_of_turn)
        got = ours.get(name, {"error": "no result"})
        if "error" in got:
            print(f"FAIL {name}: {got['error']}")
            fails += 1
            continue
        got_text = "".join(t for t, _ in got["segments"])
        got_trained = [flag for t, flag in got["segments"] for _ in t]
        if got_text != text:
            i = next((k for k, (a, b) in enumerate(zip(got_text, text)) if a != b),
                     min(len(got_text), len(text)))
            print(f"FAIL {name}: text differs at {i}: ours {got_text[i:i + 40]!r}, "
                  f"jinja2 {text[i:i + 40]!r}")
            fails += 1
        elif got_trained != trained:
            want = ["".join(c for c, f in zip(text, trained) if f)]
            have = ["".join(t for t, f in got["segments"] if f)]
            print(f"FAIL {name}: trained text differs: ours {have!r}, rule {want!r}")
            fails += 1
        elif not any(trained) and any(m.get("role") == "assistant" and m.get("content")
                                      for m in case["messages"]):
            print(f"FAIL {name}: nothing trained")
            fails += 1
    if fails:
        print(f"{fails} of {len(todo)} cases differ")
        return 1
    print(f"ok: {len(todo)} cases byte-identical, trained text as the rule predicts")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "cases":
        cases(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 6 and sys.argv[1] == "check":
        sys.exit(check(*sys.argv[2:]))
    else:
        sys.exit(__doc__)
