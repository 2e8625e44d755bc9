"""One module per subcommand; each has ``register(subparsers)``. Shared output helpers live here."""
from __future__ import annotations

import json
import sys


def print_report_result(res: dict, json_arg: str | None, label: str) -> None:
    """The last lines of a report-writing command (``analyze``, ``geometry``): with ``--json -`` the JSON object is
    the only thing on stdout and the report's path goes to stderr; otherwise the path (and the JSON file) on stdout."""
    if json_arg == "-":
        print(json.dumps(res, ensure_ascii=False), flush=True)
        print(f"{label}: {res['markdown']}", file=sys.stderr)
    else:
        print(f"{label}: {res['markdown']}" + (f"  (JSON: {json_arg})" if json_arg else ""))
