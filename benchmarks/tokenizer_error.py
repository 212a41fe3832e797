"""Measure the token counter against the provider's own count: the prompt_tokens billed on real
runs.

mini-swe-agent's ``.traj.json`` keeps every response of the model, with the ``usage`` the
provider billed: ``prompt_tokens`` is what the provider counted for the prompt of that
call (messages, tool schemas, formatting). For every call of the real gpt-5-mini runs in
``raw/`` of the real transcripts (``get_realruns.REALRUNS``) this script counts the same
prompt as the simulation does: the messages before the answer, call ids included, plus the
schema of the one tool the runs call (mini-swe-agent's ``bash`` tool, :data:`BASH_TOOL`: the
trajectories do not save the request's ``tools``), and prints, per counter:

* **absolute error**: mean over calls of ``|ours - billed| / billed``; it includes the
  tool schemas and per-request tokens the messages do not hold;
* **growth error**: the same on ``count[k] - count[0]`` against ``billed[k] - billed[0]``,
  which cancels the per-request constant and measures how the counter follows the
  messages themselves.

    python benchmarks/tokenizer_error.py [FOLDER]

Counters: ``cl100k_base`` (shipped with the package, exact for that encoding), ``o200k_base``
(gpt-5 and gpt-4o's encoding; offline through quicktok-v1 when installed, else tiktoken's
download), each also with ``call_ids=False``, and ``approximate``
(``count_tokens_approximately``). A last line compares, step by step (one call and its
output), what the provider billed with what the counter adds without the ids, and the ids'
own tokens: whether the provider bills the ids shows there.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from get_realruns import REALRUNS
from langchain_core.messages import convert_to_messages
from langchain_core.messages.utils import count_tokens_approximately

from langchain_promptstrat.cache_rules import OpenAICache, ToolSchemas
from langchain_promptstrat.conversation_file import CHAT_ROLES
from langchain_promptstrat.simulate import canonical_message
from langchain_promptstrat.tokens import TokenCounter, call_id_tokens, tool_schema_tokens

DEFAULT_FOLDER = REALRUNS / "raw"

BASH_TOOL = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Execute a bash command",
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The bash command to execute"}
            },
            "required": ["command"],
        },
    },
}
"""The tool schema mini-swe-agent sends with native tool calls (its ``BASH_TOOL``); the runs call
only ``bash``."""


def billed_prompts(path: Path) -> list[tuple[list, int, int]]:
    """Return (prompt messages, billed prompt_tokens, billed cached_tokens) for every answer that
    records its usage."""
    raw = json.loads(path.read_text())["messages"]
    keep = ("role", "content", "tool_calls", "tool_call_id", "name")
    cleaned = [
        {k: v for k, v in m.items() if k in keep} | {"content": m.get("content") or ""} for m in raw
    ]
    out = []
    for i, message in enumerate(raw):
        usage = ((message.get("extra") or {}).get("response") or {}).get("usage") or {}
        if message.get("role") == "assistant" and usage.get("prompt_tokens"):
            prompt = [m for m in cleaned[:i] if m["role"] in CHAT_ROLES]
            cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
            out.append((convert_to_messages(prompt), int(usage["prompt_tokens"]), int(cached)))
    return out


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else DEFAULT_FOLDER
    files = sorted(folder.glob("*.traj.json"))
    if not files:
        print(f"no .traj.json files in {folder}", file=sys.stderr)
        return 2
    counters = {
        "cl100k_base": TokenCounter("cl100k_base"),
        "cl100k_base, call_ids=False": TokenCounter("cl100k_base", call_ids=False),
        "o200k_base": TokenCounter("o200k_base"),
        "o200k_base, call_ids=False": TokenCounter("o200k_base", call_ids=False),
        "approximate": count_tokens_approximately,
    }
    calls = [billed_prompts(f) for f in files]
    print(
        f"{sum(map(len, calls))} billed calls in {len(files)} runs ({folder}); messages with call "
        "ids, "
        f"plus the bash tool's schema ({tool_schema_tokens([BASH_TOOL], counters['o200k_base'])} "
        "o200k_base tokens)"
    )
    print(f"{'counter':<30}{'absolute error':>16}{'growth error':>14}{'mean ours/billed':>18}")
    for name, counter in counters.items():
        absolute, growth, ratio = [], [], []
        schemas = tool_schema_tokens([BASH_TOOL], counter)
        for run in calls:
            counts = [counter(p) + schemas for p, _, _ in run]
            billed = [b for _, b, _ in run]
            absolute += [abs(c - b) / b for c, b in zip(counts, billed, strict=False)]
            ratio += [c / b for c, b in zip(counts, billed, strict=False)]
            growth += [
                abs((c - counts[0]) - (b - billed[0])) / (b - billed[0])
                for c, b in zip(counts[1:], billed[1:], strict=False)
                if b > billed[0]
            ]
        exact = getattr(counter, "exact", None)
        label = name if exact is not False else f"{name} (approx.)"
        print(
            f"{label:<30}{100 * sum(absolute) / len(absolute):>15.1f}%"
            f"{100 * sum(growth) / len(growth):>13.1f}%"
            f"{sum(ratio) / len(ratio):>18.3f}"
        )
    # step by step: what the provider billed for one more call and its output, against our count
    # without ids
    counter, without = counters["o200k_base"], counters["o200k_base, call_ids=False"]
    residual, ids = [], []
    for run in calls:
        for (before, billed_before, _), (after, billed_after, _) in zip(run, run[1:], strict=False):
            step = after[len(before) :]
            residual.append((billed_after - billed_before) - without(step))
            ids.append(sum(call_id_tokens(m, counter) for m in step))
    print(
        f"per step (o200k_base, {len(residual)} steps): billed minus counted without ids "
        f"{sum(residual) / len(residual):.1f} "
        f"tokens (min {min(residual)}, max {max(residual)}); the step's call ids "
        f"{sum(ids) / len(ids):.1f} tokens "
        f"(min {min(ids)}, max {max(ids)})"
    )
    # the openai cache rule against the cached tokens the provider billed, same prompts, no strategy
    schemas = ToolSchemas(tool_schema_tokens([BASH_TOOL], counter), 1, "bash")
    billed_share, rule_share = [], []
    for run in calls:
        rule = OpenAICache(canonical_message, tools=schemas)
        for prompt, billed, cached in run:
            read, _ = rule.observe(prompt, [counter.count_message(m) for m in prompt])
            billed_share.append(cached / billed)
            rule_share.append(read / max(counter(prompt) + schemas.tokens, 1))
    print(
        f"openai cache rule: {100 * sum(rule_share) / len(rule_share):.1f}% of each prompt read "
        "on average; "
        f"billed: {100 * sum(billed_share) / len(billed_share):.1f}%"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
