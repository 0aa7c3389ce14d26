"""The OpenRPC description of the table's inputs, made from their declarations.

``schema.json`` (shipped beside this module, served at ``GET /api/v1/schema``) holds every
method; the entries of the table's inputs are written from the declarations by
``python tools/openrpc.py --write``, and a test fails when the shipped copy differs from
what the declarations make.
"""

from __future__ import annotations

import json
from typing import Any, Final

from shoe_controller.api.methods import MAX_PROMPT, METHODS, roles_for
from shoe_controller.procedure.declarations import DECLARATIONS, InputDeclaration

#: The parameter every input takes.
PROMPT_PARAM: Final = {
    "name": "prompt",
    "required": False,
    "schema": {"type": "integer", "minimum": 1, "maximum": MAX_PROMPT},
    "description": (
        "the id of the prompt this input answers, as the console showed it (Event.prompt's "
        "id, the snapshot's prompt.id); refused with MovedOn when the table is no longer at "
        "that prompt as the controller takes the input. Without it, the input answers "
        "whatever the table asks then"
    ),
}
#: The errors any input may meet; its refusals (NotNow's data.refusal) are ``x-refusals``.
INPUT_ERRORS: Final = (
    "InvalidParams",
    "NotSignedIn",
    "RoleNotAllowed",
    "NotNow",
    "MovedOn",
    "Unavailable",
)


def input_method(decl: InputDeclaration) -> dict[str, Any]:
    """The OpenRPC method of the input ``decl``."""
    params = [
        {
            "name": p.name,
            "required": p.required,
            "schema": dict(p.schema),
            "description": p.description,
        }
        for p in decl.api_params()
    ]
    return {
        "name": decl.method,
        "summary": decl.summary,
        "paramStructure": "by-name",
        "params": [*params, PROMPT_PARAM],
        "result": {
            "name": "result",
            "schema": {"type": "null"},
            "description": "null once the controller journaled the input",
        },
        "errors": [{"$ref": f"#/components/errors/{name}"} for name in INPUT_ERRORS],
        "x-roles": [role.value for role in roles_for(METHODS[decl.method])],
        "x-refusals": sorted(code.value for code in decl.may_refuse),
    }


def with_inputs(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with each input's method as its declaration makes it, in the
    declarations' order after the methods that are no input."""
    inputs = {decl.method for decl in DECLARATIONS.values()}
    others = [m for m in document["methods"] if m["name"] not in inputs]
    made = [input_method(decl) for decl in DECLARATIONS.values()]
    return {**document, "methods": [*others, *made]}


def dumps(document: dict[str, Any]) -> str:
    """The document as schema.json holds it."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
