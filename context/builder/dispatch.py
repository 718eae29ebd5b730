"""The one entry to the builder: `build(inputs)` builds one request with `inputs.strategy`.

The names are context/strategies.py's STRATEGIES. Each strategy lives in its own module, and none
imports another; this module wires them:

    ctxagent                              context/builder/engine.py (+ relief.py, warm.py)
    full, window                          context/builder/baselines.py
    anthropic-clear, anthropic-compact    baselines.py's server-side build, with the ctxagent
                                          strategy for a step whose whole history is over the limit

`request_sha256` fingerprints what a build sent: inspect re-builds a step from the log and compares.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ctxagent.context.builder.baselines import build_baseline, build_server_side
from ctxagent.context.builder.engine import build_ctxagent
from ctxagent.context.builder.inputs import BuildInputs, BuildResult
from ctxagent.context.server_edits import SERVER_STRATEGIES
from ctxagent.context.strategies import BASELINES, CTXAGENT, STRATEGIES


def build(inputs: BuildInputs) -> BuildResult:
    """The request (and its report) for one step; ValueError for a strategy not in STRATEGIES."""
    if inputs.strategy == CTXAGENT:
        result = build_ctxagent(inputs)
    elif inputs.strategy in BASELINES:
        result = build_baseline(inputs)
    elif inputs.strategy in SERVER_STRATEGIES:
        result = build_server_side(inputs, fallback=build_ctxagent)
    else:
        raise ValueError(f"unknown strategy {inputs.strategy!r}: use " + ", ".join(repr(s) for s in STRATEGIES))
    result.request.cache_ttl = inputs.cache_ttl  # the provider marks its cache breakpoints with it
    return result


def request_sha256(body: dict[str, Any]) -> str:
    """A stable fingerprint of a request body (Request.to_dict() or a provider's wire body)."""
    data = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()
