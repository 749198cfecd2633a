"""JSON text for result files: numpy values converted, non-finite numbers written as null.

``json.dumps`` writes NaN and Infinity tokens, which are not JSON; result files (run summaries,
reports) say "no value" with null instead.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

__all__ = ["json_text"]


def _clean(obj):
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _clean(obj.tolist())
    if isinstance(obj, (np.floating, float)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, Path):
        return str(obj)
    return obj


def json_text(data: dict, *, sort_keys: bool = False) -> str:
    """JSON of ``data`` (indent 2, trailing newline) with numpy values converted to Python ones,
    paths to strings and NaN / ±inf to null.

    Raises
    ------
    TypeError
        If a value cannot be serialised.
    """
    return json.dumps(_clean(data), indent=2, allow_nan=False, sort_keys=sort_keys) + "\n"
