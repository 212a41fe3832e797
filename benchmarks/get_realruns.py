"""Download the public agent transcripts the headline figures come from, check each, convert them.

21 mini-swe-agent runs on SWE-bench tasks, published by others on GitHub: GPT-5 mini with native
tool calls, Gemini 3 Pro in the text format (one ```bash block per answer, the next user message
its output). Each file is pinned by repository, commit and path and checked against its sha256
before anything is written. Nothing lands in this repository (they are other people's data):
the files go where the benchmarks look, ``PROMPTSTRAT_REALRUNS`` or ``../shared/realruns``
beside the repository (``--into`` elsewhere):

* ``converted/NAME.jsonl``: OpenAI chat JSON lines, one message per line, what ``recall.py``,
  ``promptstrat simulate`` and the digests read: native tool calls as they are; an answer
  holding exactly one ```bash block becomes a ``bash`` tool call (``call_0001``, ...) and the
  next user message its output; the ``exit`` message becomes the output of a still-pending
  call, else is dropped; provider responses and other harness fields are left out;
* ``usage/NAME.usage.json``: beside each converted file, what the provider billed for the request
  behind each of its assistant messages, in order: ``{"prompt_tokens", "cached_tokens"}`` read from
  the response the trajectory kept (``null`` where it kept none); ``provider_counts.py``,
  ``provider_ceiling.py`` and ``promptstrat simulate``'s bill line read these;
* ``raw/NAME.traj.json``: two trajectories as saved, which ``tokenizer_error.py`` reads.

    python benchmarks/get_realruns.py && python benchmarks/recall.py
    python benchmarks/get_realruns.py --source file:///srv/mirror --into /tmp/realruns   # a local copy: REPO/COMMIT/PATH

Bad input (an unreachable source, a file whose sha256 differs) is one line and exit 2; a file is
written whole (renamed into place) or not at all.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import urllib.request
from pathlib import Path
from typing import Any

INTO = Path(os.environ.get("PROMPTSTRAT_REALRUNS") or Path(__file__).resolve().parents[1].parent / "shared" / "realruns")
SOURCE = "https://raw.githubusercontent.com"
GEMINI, GEMINI_COMMIT = "gruckion/mini-swe-agent", "9fbbfc548133d5a6109819349a3e19f022681868"
LIVE = "RussellRyanH/CSCI-635-LiveSWE-Agent"
SOURCES: dict[str, tuple[str, str, str, str]] = {  # file written: (repository, commit, path, sha256 of that file)
    "converted/gemini3pro__trajs__django__django-16560.jsonl": (GEMINI, GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-16560/django__django-16560.traj.json",
        "061d60249ac5205e2d3752a4169d3772c8306f6621ec79e45334cc4ad1060c88"),
    "converted/gemini3pro__trajs__sphinx-doc__sphinx-9229.jsonl": (GEMINI, GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/sphinx-doc__sphinx-9229/sphinx-doc__sphinx-9229.traj.json",
        "1b6b7e95f3c9a4979e42d53a6c02b208aac378fa4f8bd30e6723c2c4ed873f4c"),
    "converted/gemini3pro__trajs__sympy__sympy-19040.jsonl": (GEMINI, GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/sympy__sympy-19040/sympy__sympy-19040.traj.json",
        "b545c13b16e6a6650add72370825d0345c416a798f45372946827222e4a33e4b"),
    "converted/gemini3pro__trajs__sympy__sympy-13091.jsonl": (GEMINI, GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/sympy__sympy-13091/sympy__sympy-13091.traj.json",
        "7a47bb85a7c879733d9e14ffbbabc64ef77b541a0ec51dcdb95bfc05714c0594"),
    "converted/gemini3pro__trajs__django__django-11138.jsonl": (GEMINI, GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-11138/django__django-11138.traj.json",
        "650f6edeb95d417447e8c3d53411bd623f1330070f73ecec709a9bde87b5636e"),
    "converted/gemini3pro__trajs__sympy__sympy-13031.jsonl": (GEMINI, GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/sympy__sympy-13031/sympy__sympy-13031.traj.json",
        "ff8e8dd9b3cf1fc8e69a73466c9f788843a92b9706fe5717a7948dc9ce4269eb"),
    "converted/gemini3pro__trajs__sympy__sympy-14248.jsonl": (GEMINI, GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/sympy__sympy-14248/sympy__sympy-14248.traj.json",
        "3c97f841dd1fcce28272f4018e0f10a2e4a50ca72c84ba702008aaa66fba27be"),
    "converted/gemini3pro__trajs__sphinx-doc__sphinx-9258.jsonl": (GEMINI, GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/sphinx-doc__sphinx-9258/sphinx-doc__sphinx-9258.traj.json",
        "ab4359c4d89261bdff9f1b72f5b3006926dc1f919b66099645345d92c1cc3bad"),
    "converted/gemini3pro__trajs__pylint-dev__pylint-6528.jsonl": (GEMINI, GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/pylint-dev__pylint-6528/pylint-dev__pylint-6528.traj.json",
        "d85d3c3b5f2543689d0c2cf01871a442230fac65964fef679a4701a2689398ad"),
    "converted/gemini3pro__trajs__pytest-dev__pytest-7490.jsonl": (GEMINI, GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/pytest-dev__pytest-7490/pytest-dev__pytest-7490.traj.json",
        "4466a4f195c5955fc9a5f82da6cbcf84210d96f2261c121c7a54a72e12b02cef"),
    "converted/gemini3pro__trajs__django__django-15280.jsonl": (GEMINI, GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-15280/django__django-15280.traj.json",
        "c5162b29e6707eaffedd1e5319edc9ba4dbe3d59c7b360433be503055d8319b1"),
    "converted/gemini3pro__trajs__django__django-13297.jsonl": (GEMINI, GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-13297/django__django-13297.traj.json",
        "5f7152bd77b35889d6c0462c70fbf4ae760e5465dfdf96a0cb995d08091a63a4"),
    "converted/gemini3pro__trajs__matplotlib__matplotlib-25775.jsonl": (GEMINI, GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/matplotlib__matplotlib-25775/matplotlib__matplotlib-25775.traj.json",
        "f73320707381b16bc60f4e5ae8a9335f070adf777effa0a1372f82578d75abfa"),
    "converted/gemini3pro__trajs__pytest-dev__pytest-6197.jsonl": (GEMINI, GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/pytest-dev__pytest-6197/pytest-dev__pytest-6197.traj.json",
        "1087293876905d56c1ccb79f68df589c3726c8be9007e824f6c59c8265d9824b"),
    "converted/gemini3pro__trajs__sympy__sympy-13878.jsonl": (GEMINI, GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/sympy__sympy-13878/sympy__sympy-13878.traj.json",
        "5aa3fcca6cc0c8ce62602727b40d2ddd5e17f1f01eb2ad52b89941b85a3439f1"),
    "converted/gpt5mini__gpt-5-mini__django__django-15252.jsonl": (LIVE, "92e3ea7238eafe9b6eb6ce9b448fb2569495f788",
        "results/llm-ablation/gpt-5-mini/django__django-15252/django__django-15252.traj.json",
        "263ad2dbf7d395ad53fb466f6e41eccf6b45de01e2146137fb5aba4558726490"),
    "converted/gpt5mini__gpt-5-mini__mwaskom__seaborn-3069.jsonl": (LIVE, "1d0d3ac4063e621bf6f5558cb2aecbb738e3b9bb",
        "results/llm-ablation/gpt-5-mini/mwaskom__seaborn-3069/mwaskom__seaborn-3069.traj.json",
        "f63ba801b680c9a09be7ae984e142ea4a2bf3b2581754e03bfe74003bec1897b"),
    "converted/gpt5mini__live-gpt-5-mini-verified__astropy__astropy-13453.jsonl": (LIVE, "ab2510bc68d3ac6287e9944e5b49110a1503f263",
        "results/live-gpt-5-mini-verified/astropy__astropy-13453/astropy__astropy-13453.traj.json",
        "837aa0408015586d7d01f61b0caac8b893fdd78a49ec40c078fdf331b2a92536"),
    "converted/gpt5mini__gpt-5-mini__django__django-15629.jsonl": (LIVE, "1d0d3ac4063e621bf6f5558cb2aecbb738e3b9bb",
        "results/llm-ablation/gpt-5-mini/django__django-15629/django__django-15629.traj.json",
        "f6cc989f56cc47c51a26c9dd3c190661e18cced9280ffcad72c27256f5d1aa07"),
    "converted/gpt5mini__gpt-5-mini__django__django-16938.jsonl": (LIVE, "1d0d3ac4063e621bf6f5558cb2aecbb738e3b9bb",
        "results/llm-ablation/gpt-5-mini/django__django-16938/django__django-16938.traj.json",
        "ca4fd08368fe2e4dcacfef09f68450e44fd5e56f24a90e89cf325368249240e6"),
    "converted/gpt5mini__gpt-5-mini__sympy__sympy-23413.jsonl": (LIVE, "1d0d3ac4063e621bf6f5558cb2aecbb738e3b9bb",
        "results/llm-ablation/gpt-5-mini/sympy__sympy-23413/sympy__sympy-23413.traj.json",
        "8ce8e7b1af175590272ae8ed7b1da388ecf54f20b2069b79435b6a3c814b8d28"),
    "raw/gpt-5-mini__django__django-15252.traj.json": (LIVE, "92e3ea7238eafe9b6eb6ce9b448fb2569495f788",
        "results/llm-ablation/gpt-5-mini/django__django-15252/django__django-15252.traj.json",
        "263ad2dbf7d395ad53fb466f6e41eccf6b45de01e2146137fb5aba4558726490"),
    "raw/live-gpt-5-mini__astropy__astropy-13453.traj.json": (LIVE, "ab2510bc68d3ac6287e9944e5b49110a1503f263",
        "results/live-gpt-5-mini-verified/astropy__astropy-13453/astropy__astropy-13453.traj.json",
        "837aa0408015586d7d01f61b0caac8b893fdd78a49ec40c078fdf331b2a92536"),
}
BASH = re.compile(r"```bash\s*\n(.*?)\n```", re.S)
"""A command in mini-swe-agent's text format."""


def convert(trajectory: dict[str, Any]) -> list[dict[str, Any]]:
    """Return a mini-swe-agent trajectory's messages as the OpenAI chat messages a provider reads, text-format commands as tool calls."""
    out: list[dict[str, Any]] = []
    pending, made = None, 0  # the call whose output the next message is; text-format calls made
    for m in trajectory["messages"]:
        role, content = m["role"], m.get("content")
        if m.get("tool_calls"):
            calls = [{"id": c["id"], "type": "function", "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}}
                     for c in m["tool_calls"]]
            out.append({"role": "assistant", "content": content or "", "tool_calls": calls})
            pending = calls[-1]["id"]
        elif role == "assistant" and len(BASH.findall(content)) == 1:
            made += 1
            pending = f"call_{made:04d}"
            command = BASH.search(content)
            call = {"id": pending, "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": command[1]})}}
            out.append({"role": "assistant", "content": content[:command.start()].rstrip(), "tool_calls": [call]})
        else:
            if role == "tool" or (role in ("user", "exit") and pending is not None):
                out.append({"role": "tool", "tool_call_id": m.get("tool_call_id", pending), "content": content})
            elif role != "exit":
                out.append({"role": role, "content": content})
            pending = None
    return out


def usage(trajectory: dict[str, Any]) -> list[dict[str, int | None]]:
    """Return what the provider billed for each assistant message's request, in order (``None`` where the response is missing)."""
    out: list[dict[str, int | None]] = []
    for m in trajectory["messages"]:
        if m["role"] == "assistant":
            billed = ((m.get("extra") or {}).get("response") or {}).get("usage") or {}
            out.append({"prompt_tokens": billed.get("prompt_tokens"),
                        "cached_tokens": (billed.get("prompt_tokens_details") or {}).get("cached_tokens")})
    return out


def write(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` whole: into a partial file, renamed into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.write_bytes(data)
    partial.replace(target)


def fetch(url: str, sha256: str) -> bytes:
    """Return the bytes at ``url``, or raise ValueError when their sha256 is not ``sha256``."""
    with urllib.request.urlopen(url, timeout=60) as response:
        data: bytes = response.read()
    found = hashlib.sha256(data).hexdigest()
    if found != sha256:
        raise ValueError(f"{url}: sha256 {found}, expected {sha256}")
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default=SOURCE, help=f"where REPOSITORY/COMMIT/PATH is read (default: {SOURCE})")
    parser.add_argument("--into", type=Path, default=INTO, help=f"folder to write converted/ and raw/ in (default: {INTO})")
    args = parser.parse_args(argv)
    fetched: dict[str, bytes] = {}
    for name, (repo, commit, path, sha256) in SOURCES.items():
        url = f"{args.source.rstrip('/')}/{repo}/{commit}/{path}"
        try:
            data = fetched[url] = fetched.get(url) or fetch(url, sha256)
        except (OSError, ValueError) as exc:
            print(f"get_realruns: {name}: {exc}", file=sys.stderr)
            return 2
        if name.startswith("converted/"):
            trajectory = json.loads(data)
            data = "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in convert(trajectory)).encode()
            write(args.into / "usage" / Path(name).with_suffix(".usage.json").name, json.dumps(usage(trajectory)).encode())
        write(args.into / name, data)
        print(f"{name} ({len(data):,} bytes)")
    print(f"{len(SOURCES)} files in {args.into}, and usage/ beside converted/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
