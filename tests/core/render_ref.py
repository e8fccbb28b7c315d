"""Peer for tests/core_prompts_test.cpp: nanochat's CORE prompt templates, rendered by the real Jinja2.

    /usr/bin/python3 render_ref.py request.json response.json
request: [{"type": "multiple_choice"|"schema"|"language_modeling", "delimiter", "item", "fewshot": [items]}]
response: [[prompt, ...], ...]
"""
import json
import sys

from jinja2 import Template

MC = """
{%- for example in fewshot_examples -%}
{{ example.query }}{{ continuation_delimiter }}{{ example.choices[example.gold] }}

{% endfor -%}
{{ item.query }}{{ continuation_delimiter }}{{ choice }}""".strip()

SCHEMA = """
{%- for example in fewshot_examples -%}
{{ example.context_options[example.gold] }}{{ continuation_delimiter }}{{ example.continuation }}

{% endfor -%}
{{ context }}{{ continuation_delimiter }}{{ item.continuation }}""".strip()

LM = """
{%- for example in fewshot_examples -%}
{{ example.context | trim }}{{ continuation_delimiter }}{{ example.continuation }}

{% endfor -%}
{{ item.context | trim }}{{ continuation_delimiter }}{% if include_continuation %}{{ item.continuation }}{% endif %}""".strip()


def render(case):
    ctx = {"fewshot_examples": case["fewshot"], "continuation_delimiter": case["delimiter"], "item": case["item"]}
    if case["type"] == "multiple_choice":
        return [Template(MC).render(choice=c, **ctx) for c in case["item"]["choices"]]
    if case["type"] == "schema":
        return [Template(SCHEMA).render(context=c, **ctx) for c in case["item"]["context_options"]]
    t = Template(LM)
    return [t.render(include_continuation=False, **ctx).strip(), t.render(include_continuation=True, **ctx)]


json.dump([render(c) for c in json.load(open(sys.argv[1]))], open(sys.argv[2], "w"))
