#!/usr/bin/env python3
"""Keeps the schemas the /v1 contract test needs from the reference API's OpenAPI document.

    git clone https://github.com/openai/openai-openapi && \
      scripts/extract-reference-schemas.py openai-openapi/openapi.json COMMIT > testdata/openai-reference/schemas.json

The output holds the named root schemas and every schema they reference, under
components/schemas as in the source (so the `#/components/schemas/X` references still
resolve), unchanged but for one adaptation: a schema marked `$recursiveAnchor` (a JSON
Schema 2019-09 keyword, which 2020-12 validators refuse) has it dropped and its
`$recursiveRef: "#"` replaced by a `$ref` to itself, which is what it means there; and the
few OpenAPI 3.0 `nullable: true` left in this 3.1 document (which a 2020-12 validator
ignores, refusing the null the reference API itself sends, e.g. a chunk's `finish_reason`)
are written the 3.1 way: `null` added to `type` (and to `enum`).
See testdata/openai-reference/README.md.
"""
import json
import sys

ROOTS = [
    "Response",
    "ResponseCreatedEvent", "ResponseOutputItemAddedEvent", "ResponseContentPartAddedEvent",
    "ResponseTextDeltaEvent", "ResponseTextDoneEvent", "ResponseContentPartDoneEvent",
    "ResponseOutputItemDoneEvent", "ResponseCompletedEvent", "ResponseErrorEvent",
    "CreateChatCompletionResponse", "CreateChatCompletionStreamResponse",
    "Model", "ListModelsResponse", "ErrorResponse",
]


def refs(node, out):
    if isinstance(node, dict):
        r = node.get("$ref")
        if isinstance(r, str) and r.startswith("#/components/schemas/"):
            out.add(r.rsplit("/", 1)[1])
        for v in node.values():
            refs(v, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, out)


def unrecurse(node, name):
    if isinstance(node, dict):
        node.pop("$recursiveAnchor", None)
        if node.get("$recursiveRef") == "#":
            del node["$recursiveRef"]
            node["$ref"] = "#/components/schemas/" + name
        for v in node.values():
            unrecurse(v, name)
    elif isinstance(node, list):
        for v in node:
            unrecurse(v, name)


def denull(node):
    if isinstance(node, dict):
        if node.pop("nullable", False) is True and isinstance(node.get("type"), str):
            node["type"] = [node["type"], "null"]
            if isinstance(node.get("enum"), list) and None not in node["enum"]:
                node["enum"].append(None)
        for v in node.values():
            denull(v)
    elif isinstance(node, list):
        for v in node:
            denull(v)


def main():
    src, commit = sys.argv[1], sys.argv[2]
    doc = json.load(open(src))
    schemas = doc["components"]["schemas"]
    keep, todo = set(), list(ROOTS)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        found = set()
        refs(schemas[name], found)
        todo.extend(found - keep)
    for name in keep:
        if isinstance(schemas[name], dict) and schemas[name].get("$recursiveAnchor") is True:
            unrecurse(schemas[name], name)
    for name in keep:
        denull(schemas[name])
    out = {
        "$comment": "Schemas of https://github.com/openai/openai-openapi openapi.json at commit "
        + commit + " (info.version " + doc["info"]["version"] + "), reduced to what the contract test needs by "
        "scripts/extract-reference-schemas.py ($recursiveAnchor/$recursiveRef written as a $ref to the schema itself, 3.0 nullable as a null type); otherwise unchanged.",
        "openapi": doc["openapi"],
        "components": {"schemas": {k: schemas[k] for k in sorted(keep)}},
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
