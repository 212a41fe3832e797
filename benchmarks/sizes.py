"""The package's size in formatted lines: in all, on the prompt path, and its largest modules.

The tree is formatted by ``ruff format`` (``tests/test_style.py``), so a line on disk is a
formatted line. The **prompt path** is the package modules a fresh interpreter loads to import
the package and call ``prepare_prompt`` (the default list, under a ceiling),
``PromptStrategyMiddleware()`` and ``read_back``, the inbox's modules aside.

    python benchmarks/sizes.py
    python benchmarks/sizes.py --json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "langchain_promptstrat"
LARGE = 600
"""A module over this many lines is listed as large."""

PROBE = """
import json, sys
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_promptstrat import PromptStrategyMiddleware, prepare_prompt, read_back
history = [HumanMessage("Audit the repository.")]
for i in range(160):
    call = {"name": "read", "args": {"path": f"f{i}.py"}, "id": f"c{i}"}
    output = ToolMessage("x = 1\\n" * 200, tool_call_id=f"c{i}")
    history += [AIMessage("", tool_calls=[call]), output]
prepare_prompt(history, max_tokens=16_000)
PromptStrategyMiddleware()
read_back(history, 3)
ours = [m.__file__ for n, m in sys.modules.items() if n.startswith("langchain_promptstrat")]
print(json.dumps(ours))
"""


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def prompt_path() -> list[Path]:
    """Return the package files the runtime calls load, the inbox's aside."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, cwd=ROOT
    )
    files = [Path(f) for f in json.loads(done.stdout.strip().splitlines()[-1])]
    return sorted(f for f in files if "inbox" not in f.relative_to(PACKAGE).parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    modules = {str(p.relative_to(PACKAGE)): lines(p) for p in sorted(PACKAGE.rglob("*.py"))}
    path = {str(p.relative_to(PACKAGE)): lines(p) for p in prompt_path()}
    figures = {
        "package": sum(modules.values()),
        "prompt_path": sum(path.values()),
        "prompt_path_modules": len(path),
        "largest": dict(sorted(modules.items(), key=lambda kv: -kv[1])[:10]),
        "over_600": {name: n for name, n in modules.items() if n > LARGE},
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"package: {figures['package']:,} lines in {len(modules)} modules")
    print(f"prompt path: {figures['prompt_path']:,} lines in {len(path)} modules")
    print(f"modules over {LARGE} lines: {len(figures['over_600'])}")
    for name, n in figures["largest"].items():
        print(f"  {n:>6,}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
