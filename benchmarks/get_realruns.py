"""Download the public agent transcripts the headline figures come from, check each, convert them.

21 mini-swe-agent runs on SWE-bench tasks, published by others on GitHub: GPT-5 mini with native
tool calls, Gemini 3 Pro in the text format (one ```bash block per answer, the next user message
its output). Each file is pinned by repository, commit and path and checked against its sha256
before anything is written. They are other people's data, so git never holds them: the files go
to ``realruns/`` in the clone, which git ignores, or to ``PROMPTSTRAT_REALRUNS`` when it is set
(``--dest`` elsewhere). The benchmarks and the tests read them from :data:`REALRUNS`:
``PROMPTSTRAT_REALRUNS``, else ``realruns/`` in the clone, else ``../shared/realruns`` beside the
clone (one copy several clones share, as on a machine that keeps one there):

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
    python benchmarks/get_realruns.py --source /srv/mirror --dest /tmp/realruns   # REPO/COMMIT/PATH
    python benchmarks/get_realruns.py --held-out
    PROMPTSTRAT_REALRUNS=heldout python benchmarks/provider_ceiling.py

``--held-out`` writes, instead, 99 DeepSeek chat runs (native tool calls, usage per call) that no
figure or constant of the package was measured on, for the held-out check of the ceiling, to
``heldout/`` beside the default destination (git ignores it too).

Bad input is one line and exit 2: without a network, ``no network: ...; run with --source DIR or
fetch later``; a file the source does not hold, or whose sha256 differs, named with its URL. A
file is written whole (renamed into place) or not at all.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

CLONE = Path(__file__).resolve().parents[1]
REALRUNS_ENV = "PROMPTSTRAT_REALRUNS"


def destination(environ: Mapping[str, str] = os.environ, clone: Path = CLONE) -> Path:
    """Return where the files are written by default.

    ``PROMPTSTRAT_REALRUNS``, else ``realruns/`` in the clone (git ignores it).
    """
    return Path(environ.get(REALRUNS_ENV) or clone / "realruns")


def realruns_folder(environ: Mapping[str, str] = os.environ, clone: Path = CLONE) -> Path:
    """Return where the benchmarks and tests read the transcripts.

    :func:`destination`, unless only ``../shared/realruns`` beside the clone exists.
    """
    written, shared = destination(environ, clone), clone.parent / "shared" / "realruns"
    if not environ.get(REALRUNS_ENV) and not written.is_dir() and shared.is_dir():
        return shared
    return written


def no_transcripts(folder: Path) -> str:
    """Return the line a benchmark prints when ``folder`` holds no transcripts, and what to do."""
    return (
        f"no transcripts at {folder}: download them (python benchmarks/get_realruns.py), "
        f"name a folder or set {REALRUNS_ENV}"
    )


DEST = destination()
REALRUNS = realruns_folder()
SOURCE = "https://raw.githubusercontent.com"
GEMINI, GEMINI_COMMIT = "gruckion/mini-swe-agent", "9fbbfc548133d5a6109819349a3e19f022681868"
LIVE = "RussellRyanH/CSCI-635-LiveSWE-Agent"
SOURCES: dict[
    str, tuple[str, str, str, str]
] = {  # file written: (repository, commit, path, sha256 of that file)
    "converted/gemini3pro__trajs__django__django-16560.jsonl": (
        GEMINI,
        GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-16560/django__django-16560.traj.json",
        "061d60249ac5205e2d3752a4169d3772c8306f6621ec79e45334cc4ad1060c88",
    ),
    "converted/gemini3pro__trajs__sphinx-doc__sphinx-9229.jsonl": (
        GEMINI,
        GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/sphinx-doc__sphinx-9229/sphinx-doc__sphinx-9229.traj.json",
        "1b6b7e95f3c9a4979e42d53a6c02b208aac378fa4f8bd30e6723c2c4ed873f4c",
    ),
    "converted/gemini3pro__trajs__sympy__sympy-19040.jsonl": (
        GEMINI,
        GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/sympy__sympy-19040/sympy__sympy-19040.traj.json",
        "b545c13b16e6a6650add72370825d0345c416a798f45372946827222e4a33e4b",
    ),
    "converted/gemini3pro__trajs__sympy__sympy-13091.jsonl": (
        GEMINI,
        GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/sympy__sympy-13091/sympy__sympy-13091.traj.json",
        "7a47bb85a7c879733d9e14ffbbabc64ef77b541a0ec51dcdb95bfc05714c0594",
    ),
    "converted/gemini3pro__trajs__django__django-11138.jsonl": (
        GEMINI,
        GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-11138/django__django-11138.traj.json",
        "650f6edeb95d417447e8c3d53411bd623f1330070f73ecec709a9bde87b5636e",
    ),
    "converted/gemini3pro__trajs__sympy__sympy-13031.jsonl": (
        GEMINI,
        GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/sympy__sympy-13031/sympy__sympy-13031.traj.json",
        "ff8e8dd9b3cf1fc8e69a73466c9f788843a92b9706fe5717a7948dc9ce4269eb",
    ),
    "converted/gemini3pro__trajs__sympy__sympy-14248.jsonl": (
        GEMINI,
        GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/sympy__sympy-14248/sympy__sympy-14248.traj.json",
        "3c97f841dd1fcce28272f4018e0f10a2e4a50ca72c84ba702008aaa66fba27be",
    ),
    "converted/gemini3pro__trajs__sphinx-doc__sphinx-9258.jsonl": (
        GEMINI,
        GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/sphinx-doc__sphinx-9258/sphinx-doc__sphinx-9258.traj.json",
        "ab4359c4d89261bdff9f1b72f5b3006926dc1f919b66099645345d92c1cc3bad",
    ),
    "converted/gemini3pro__trajs__pylint-dev__pylint-6528.jsonl": (
        GEMINI,
        GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/pylint-dev__pylint-6528/pylint-dev__pylint-6528.traj.json",
        "d85d3c3b5f2543689d0c2cf01871a442230fac65964fef679a4701a2689398ad",
    ),
    "converted/gemini3pro__trajs__pytest-dev__pytest-7490.jsonl": (
        GEMINI,
        GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/pytest-dev__pytest-7490/pytest-dev__pytest-7490.traj.json",
        "4466a4f195c5955fc9a5f82da6cbcf84210d96f2261c121c7a54a72e12b02cef",
    ),
    "converted/gemini3pro__trajs__django__django-15280.jsonl": (
        GEMINI,
        GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-15280/django__django-15280.traj.json",
        "c5162b29e6707eaffedd1e5319edc9ba4dbe3d59c7b360433be503055d8319b1",
    ),
    "converted/gemini3pro__trajs__django__django-13297.jsonl": (
        GEMINI,
        GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-13297/django__django-13297.traj.json",
        "5f7152bd77b35889d6c0462c70fbf4ae760e5465dfdf96a0cb995d08091a63a4",
    ),
    "converted/gemini3pro__trajs__matplotlib__matplotlib-25775.jsonl": (
        GEMINI,
        GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/matplotlib__matplotlib-25775/matplotlib__matplotlib-25775.traj.json",
        "f73320707381b16bc60f4e5ae8a9335f070adf777effa0a1372f82578d75abfa",
    ),
    "converted/gemini3pro__trajs__pytest-dev__pytest-6197.jsonl": (
        GEMINI,
        GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/pytest-dev__pytest-6197/pytest-dev__pytest-6197.traj.json",
        "1087293876905d56c1ccb79f68df589c3726c8be9007e824f6c59c8265d9824b",
    ),
    "converted/gemini3pro__trajs__sympy__sympy-13878.jsonl": (
        GEMINI,
        GEMINI_COMMIT,
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/sympy__sympy-13878/sympy__sympy-13878.traj.json",
        "5aa3fcca6cc0c8ce62602727b40d2ddd5e17f1f01eb2ad52b89941b85a3439f1",
    ),
    "converted/gpt5mini__gpt-5-mini__django__django-15252.jsonl": (
        LIVE,
        "92e3ea7238eafe9b6eb6ce9b448fb2569495f788",
        "results/llm-ablation/gpt-5-mini/django__django-15252/django__django-15252.traj.json",
        "263ad2dbf7d395ad53fb466f6e41eccf6b45de01e2146137fb5aba4558726490",
    ),
    "converted/gpt5mini__gpt-5-mini__mwaskom__seaborn-3069.jsonl": (
        LIVE,
        "1d0d3ac4063e621bf6f5558cb2aecbb738e3b9bb",
        "results/llm-ablation/gpt-5-mini/mwaskom__seaborn-3069/mwaskom__seaborn-3069.traj.json",
        "f63ba801b680c9a09be7ae984e142ea4a2bf3b2581754e03bfe74003bec1897b",
    ),
    "converted/gpt5mini__live-gpt-5-mini-verified__astropy__astropy-13453.jsonl": (
        LIVE,
        "ab2510bc68d3ac6287e9944e5b49110a1503f263",
        "results/live-gpt-5-mini-verified/astropy__astropy-13453/astropy__astropy-13453.traj.json",
        "837aa0408015586d7d01f61b0caac8b893fdd78a49ec40c078fdf331b2a92536",
    ),
    "converted/gpt5mini__gpt-5-mini__django__django-15629.jsonl": (
        LIVE,
        "1d0d3ac4063e621bf6f5558cb2aecbb738e3b9bb",
        "results/llm-ablation/gpt-5-mini/django__django-15629/django__django-15629.traj.json",
        "f6cc989f56cc47c51a26c9dd3c190661e18cced9280ffcad72c27256f5d1aa07",
    ),
    "converted/gpt5mini__gpt-5-mini__django__django-16938.jsonl": (
        LIVE,
        "1d0d3ac4063e621bf6f5558cb2aecbb738e3b9bb",
        "results/llm-ablation/gpt-5-mini/django__django-16938/django__django-16938.traj.json",
        "ca4fd08368fe2e4dcacfef09f68450e44fd5e56f24a90e89cf325368249240e6",
    ),
    "converted/gpt5mini__gpt-5-mini__sympy__sympy-23413.jsonl": (
        LIVE,
        "1d0d3ac4063e621bf6f5558cb2aecbb738e3b9bb",
        "results/llm-ablation/gpt-5-mini/sympy__sympy-23413/sympy__sympy-23413.traj.json",
        "8ce8e7b1af175590272ae8ed7b1da388ecf54f20b2069b79435b6a3c814b8d28",
    ),
    "raw/gpt-5-mini__django__django-15252.traj.json": (
        LIVE,
        "92e3ea7238eafe9b6eb6ce9b448fb2569495f788",
        "results/llm-ablation/gpt-5-mini/django__django-15252/django__django-15252.traj.json",
        "263ad2dbf7d395ad53fb466f6e41eccf6b45de01e2146137fb5aba4558726490",
    ),
    "raw/live-gpt-5-mini__astropy__astropy-13453.traj.json": (
        LIVE,
        "ab2510bc68d3ac6287e9944e5b49110a1503f263",
        "results/live-gpt-5-mini-verified/astropy__astropy-13453/astropy__astropy-13453.traj.json",
        "837aa0408015586d7d01f61b0caac8b893fdd78a49ec40c078fdf331b2a92536",
    ),
}
DEEPSEEK, DEEPSEEK_COMMIT, DEEPSEEK_SET = (
    "SWE-agent/mini-swe-agent",
    "ec0e8e849fea5b1619deb1753007201000904672",
    "deepseek_chat_test_1-100",
)
# SWE-bench instance: sha256 of output/{DEEPSEEK_SET}/INSTANCE/INSTANCE.traj.json (the 100th,
# django__django-13220, is left out)
DEEPSEEK_RUNS = {
    "astropy__astropy-12907": "bb500d13c801ce9d4954440a4e0f3e26b95b34e81349231f7df74cb6c5e1f377",
    "astropy__astropy-14182": "b4473b0d4633cd054e3f6ea3966af2917416f38978c2cd980b61a1031dffb723",
    "astropy__astropy-14365": "1cabf44182882b88b9e46ee0ee791d883f66f71e6aa63d783540b01edb2e2102",
    "astropy__astropy-14995": "fd145548fa420a67eb9f1d6beff7008e71dca304f0b8d4ce0707d469ec351514",
    "astropy__astropy-6938": "d616c7fb84fb8b16d0cd9a3b8db628bd1b1cc09b130277a07ab6eb8664dcfcbf",
    "astropy__astropy-7746": "303dee0a4b2c3ee7973e75de10c0e5dec03fc08474ad4ccdccdee3e9b3affe05",
    "django__django-10914": "980e1c9cd8cfd207ecc4b5eff329e8485198b7b70b419889b875a7c81f973fe5",
    "django__django-10924": "4596cfe0053c5a2026415703ce897ebd5d5f74bfc7db949731785ef66992a1ca",
    "django__django-11001": "dac1e78240df474c6303efe27ce6e80dcbcc88d5d39a8bbacc9d08ebec5c61df",
    "django__django-11019": "8491b5465fac84fbf8c9d55074ff24a57b76649a97d0cd6451273afb14154047",
    "django__django-11039": "6cd0691736440af9aa8e9679eec563fefbef0affb2840178adc8da4d411bc66b",
    "django__django-11049": "4f1fc8c8445127b44d3e4ac50ef10e33977c29695f3baad5ab95e054d5bd7876",
    "django__django-11099": "8f2dfe277209fda47f0f5698dd8f91e67ad791b3ce7cea24fba7f0965e234c52",
    "django__django-11133": "980dc7d6ab8f5856ffee9168a8f0254b4b7ecf95fb40527281e32010a900624f",
    "django__django-11179": "8a35c10f414dfd3b87959536174084815459f4d870d0174d4950318e8b383f73",
    "django__django-11283": "bc197c22315ac15ddf30c4313d3f597dcd4aab104debe801ae3f7e5243d65e14",
    "django__django-11422": "6a1d0fb2f9e9034c818682570115c1d7357ac0f07b605672762fbd06ccbf5131",
    "django__django-11564": "280ec064cf63e75a522122936e2b7e6c69cbf825c09f9366964c55cd1674277e",
    "django__django-11583": "0322c81e3a72f701d313a2293d48bfbee4edc1d6d7161c32cd6d46897bd68943",
    "django__django-11620": "659dcc9fad3ee25c84a949496544fbed57e2acaf5634d277d0e58ada52ebe5fc",
    "django__django-11630": "fd4488cde9d714d33322cd0c78ed9c92080f029cf397b83c5397cc41b7eb91ab",
    "django__django-11742": "7299b9e321ba9d0e905ae54facceb88c137f7dddaf36101912091e3485628b91",
    "django__django-11797": "68827936ea940ad029e68248149c6f9f19ca1afb361d5100a0b459a2958307b5",
    "django__django-11815": "cf5a9cdc9927dd2f4f8610df390671c77b326cd40ee36a1a99db62a993ec0c4d",
    "django__django-11848": "928a4fc99dfaa3128248b57f28473a5c4dff1a266c08359a296b100f4b43825b",
    "django__django-11905": "7babb3eea51985c9aed655d8d301b69057ffe0cc64647ae1676bc996b6dd7c20",
    "django__django-11910": "f7629c4a75f315f8e57ef83f7d1e31e366d809bcc3d6a839e07d0217f412db8d",
    "django__django-11964": "4fef877adeca2c6f08a76c8cca2beb0ebd54ef5b096a84588b14b38de8ade3f7",
    "django__django-11999": "7da5dd5b6690a79be525d42d6673b2e5a6c3f60362f89328a3604e4c391b3e38",
    "django__django-12113": "88284420cc3b10dbe8fad06be285c2738ac07d9f6fb362471e2c500095ace6e5",
    "django__django-12125": "497b9b0feb3b25878c3768b77510e5446a757987a3302717fb9a2eec4dc25d60",
    "django__django-12184": "32a7004e9049f66172fe630b2bcfba66d52239ef8564402944ce75e61ccb2d39",
    "django__django-12284": "4ff758eb750bd81ff529067645b7be5bc454004b705d3a086c349dae36adf153",
    "django__django-12286": "b681b19a05129278026457de53a821c536a1b8460885a3e9a9ccf22bd4ebd606",
    "django__django-12308": "89fd6f2273c6c3c0d9d707301b6588e4d6236a4432da51435f2d47ab72c12b78",
    "django__django-12453": "0a2c35846060026c92c4210c6ab8a40638acd4f1f8874d77b0857cba22cb81cb",
    "django__django-12470": "6eba32f5040344e559e2f732068e978f60b2b71b11a255e03af41efe41fbd7b7",
    "django__django-12497": "3a767d4b42d90698a6d1ef8ce906e4153e76e5dbaa784feecc00c7079eb5cb38",
    "django__django-12589": "b4bc62c3c8e855cdd6a7a8e10efc023ea4509b0e619edd7b223732543e383d7f",
    "django__django-12700": "c58d625a6c74940260e15cb974de5cc6637c9f4275c25f2bf69416ff85cae80e",
    "django__django-12708": "bf63126c656db3fe3ad40e372d98deb519541df010e91a1db40d45fd103f129f",
    "django__django-12747": "b02bdd446520712678c18a3e9763fd0f8e69227f9699031bf5041f5166c5c9c9",
    "django__django-12856": "18d17a7cb73ec3c9b3339c229756ee04354428a00f6576ab82ea59b6568ba6d9",
    "django__django-12908": "462977e2000d862f3ade80017e237a3587229db8d4a7f5c2e848d74bda85b2a3",
    "django__django-12915": "f52e5dbfd4f4a140b70dd740b140e660a5646aa02e69ac381a8fad5202a0280b",
    "django__django-12983": "f672e5cef982e10b638686586e66f80604bcfd7f8110de814b29c8feb800c228",
    "django__django-13028": "957a3c6ad515567907bf50afd7875c0b742a12e7a75b61140ce8beb9cd337fb9",
    "django__django-13033": "bd215fece39ae88650c1fa831684087ba0d786d515421c4497e55c025640c474",
    "django__django-13158": "4f68cbbbed362ea2fe4b7cc6bb90cdf6e5cbfc0b0226ba286f549589f93d8765",
    "django__django-13230": "1ab319e66874510a8cf74c71e002e49a649dc90a0c2e8f26771a8ab4e2ba7b4e",
    "django__django-13265": "166d3931a10eb56d538024c3f0ee2f30e74e87c8899358155e077d71fcffd447",
    "django__django-13315": "113238fa814660e1cbbdf106b62a90e41648b79f19bcfdee41566f2c67200847",
    "django__django-13321": "71169ca21982c188453636dfdfb7eebe2aa43374a29dcee1e4ebdfbdc30dd5cb",
    "django__django-13401": "a1311e8666c9615657fdfd369399a2221ee3eac7d1a12a4e08e2979ec55de163",
    "django__django-13447": "955846b5c323ea268237609e2bad3b0a269be5ffb95f2b406cff0155890d3518",
    "django__django-13448": "197cb227fc92cbd7a97c0730e1301692dec5a98df40ffd30fc54fa17a57fbe51",
    "django__django-13551": "1db1332b515e2f38317da64e25b4d4c2db48a4f749fe29dbf08915da57386dd9",
    "django__django-13590": "1082bd76bddc3347675dd408536ec3c295a54918d516d950db1f8b5ec3542e9a",
    "django__django-13658": "8638b358911c7a4f0cc9d91c9afdc11134f8dd990a7c505f9f045b2e37c62c85",
    "django__django-13660": "4de3f532d7ca661c269ad96dc3b1b3ede35e3846ba991c59a0c321fe991bd743",
    "django__django-13710": "9d642ba4239adf5250fc3de707987c0eb0970debd901a8f019226909bcb585e6",
    "django__django-13757": "813984de3c046dfe0b673cb1937617955a2094436be8cc59be615b8cf6b8ca2d",
    "django__django-13768": "c9e5f8c4b2b639ce411607432b8c3291e1d3409ecc2ca275ba61ad7dfa466970",
    "django__django-13925": "c052ce879b414874f21836574c762918ea6510d3b704a8de24d6e81cf0fabca5",
    "django__django-13933": "84f0916278065372e6a0e51ace572bdd1ce37fea862f17cea3e32420922952f2",
    "django__django-13964": "16ead48f648c25888dce2879452e1e28f9cc65d21b505076e70ca8f482c97cff",
    "django__django-14016": "f4435a0a7f5a0fa7de91aab7abd70f336c1ddd4506cfe3350586e6c12e2252a0",
    "django__django-14017": "612fcfa6168f212361c7443ccc05cba50a137e5796559a6091734d1456ebd1fa",
    "django__django-14155": "59e5fc5037e4c55252b061ef11fadbf0a82ca2df1b8952a535e5efa9a29bdbf5",
    "django__django-14238": "6ecdecd5b79474404c3466d0e6e752f5ee5a520fdff6392bbfe0ae28161d3640",
    "django__django-14382": "c2271de8663ba3718c4061a799d2c46783612a9bb7c022c8aa97369570ae750d",
    "django__django-14411": "5c301d22038aff6779b0c1c9a0a8b6415a16ca6c766fe6be8a3a5db1ce574f96",
    "django__django-14534": "11f7d374238b711e38770fab6d758c9e8aae88012a0427247956c8e9d1c23e32",
    "django__django-14580": "944cb3dc3ec51b9b1f38c5e34614521d2e654221f919bb5ca15e8313bc1b520a",
    "django__django-14608": "a4f2ba1b97c629b806e883250078df3f94179ad3e373b8ee091414093d35030e",
    "django__django-14667": "d1ee5c37489b56c8323f766f90e2ba70746c97ccd355b0bf0fe4c12c31268024",
    "django__django-14672": "a6bb207a37a273dd96fb4db5fa0a12a59b5fe79c8cd058aa6da81565c20b4215",
    "django__django-14730": "6b26a2234ebcfeb184172363d4d680c6e672f615d4a60e01195fc24e156e8e39",
    "django__django-14752": "8691f5e2fefcaaadf82b8d8b1e6134f0d7e420015d6e009dd048f98e1c267fd1",
    "django__django-14787": "53555b60611bc65e846ff617020f490b10c77efe06a3104e96ce10eb1590de61",
    "django__django-14855": "4d10213b864ccecb702d7c8ac51f452d0c9dea0d0f5f07696e28a7565c322cdb",
    "django__django-14915": "68183ed3ad1e71aee530bdd04c9dbec77ea9f729c6a47056560c72547aa63d4d",
    "django__django-14997": "2152644490fb1031c5ef1b087797d16317a59be739e767fb9da9ae0cf4dab462",
    "django__django-14999": "1a37b06903a150e8d1848294eb113ede402b8de2ae23943dfba0f962b1e01bf0",
    "django__django-15061": "38161cfa52c4add7121f679c0ea558f4c2be249ad8b31b96e955af714ba36d64",
    "django__django-15202": "9070b0a10cae7e7d361f6139fe0d66b7db524c447e805ba775180eca3206c502",
    "django__django-15213": "a9a2d938cf226fae6ee3110bd1436b4e9916a3bccf6222720cab2383c1ff53cd",
    "django__django-15252": "d2ad7fb7a841323e1bf23e1a9ee1693b29c711987f36d98be372a92b22389291",
    "django__django-15320": "2e79d61563f0f28b5ba7f56382ce73aec5bee1040f91a739fb63b6bb26675685",
    "django__django-15347": "2d4228a46d294bf5d93f2fe9f5286c076fb2cfc062c518dbb460bbc16b15e519",
    "django__django-15388": "8134eef8e451d01a6080c90dbc80a1fc6dae8ccaaa4fbb19eceae27f410b57ac",
    "django__django-15400": "c15ac2aca4a3277cf130ae2510b3f927d4aa9a0986b3022554f6f66699971417",
    "django__django-15498": "758941145391db3a335fce14ce547ca749cfc8b88c12d9e00b66eb19ce39a558",
    "django__django-15695": "53f59867a65a971c7b432f86aef59f4ea512c2776c48936e88104a0966a17652",
    "django__django-15738": "c830d28d832224eccbee60f9c5fc60e8b635a3ff60019dc632dfd5dd9271c3cb",
    "django__django-15781": "bff6f39130e822de8ce3b18908a843ce8d081890f21bddc51e941fce3e1cb4ab",
    "django__django-15789": "11e7167b774c02a537777d984e1d09fa0269a18ae968ee0aa575027b80c973a6",
    "django__django-15790": "a342112e8fbceb3a78c64088e47b7fc927aa19bfbf2e66703b4b4f6f64588a9f",
    "django__django-15814": "a1462b0667c73100b8faa393524fe4d0e5b62c5a17fa98b84d0b44dcbc3366fc",
}
HELD_OUT: dict[
    str, tuple[str, str, str, str]
] = {  # --held-out: DeepSeek chat runs, checked against nothing else measured here
    f"converted/deepseek__{DEEPSEEK_SET}__{run}.jsonl": (
        DEEPSEEK,
        DEEPSEEK_COMMIT,
        f"output/{DEEPSEEK_SET}/{run}/{run}.traj.json",
        sha256,
    )
    for run, sha256 in DEEPSEEK_RUNS.items()
}
BASH = re.compile(r"```bash\s*\n(.*?)\n```", re.S)
"""A command in mini-swe-agent's text format."""


def convert(trajectory: dict[str, Any]) -> list[dict[str, Any]]:
    """Return a mini-swe-agent trajectory's messages as the OpenAI chat messages a provider reads,
    text-format commands as tool calls."""
    out: list[dict[str, Any]] = []
    pending, made = None, 0  # the call whose output the next message is; text-format calls made
    for m in trajectory["messages"]:
        role, content = m["role"], m.get("content")
        if m.get("tool_calls"):
            calls = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {
                        "name": c["function"]["name"],
                        "arguments": c["function"]["arguments"],
                    },
                }
                for c in m["tool_calls"]
            ]
            out.append({"role": "assistant", "content": content or "", "tool_calls": calls})
            pending = calls[-1]["id"]
        elif role == "assistant" and len(BASH.findall(content)) == 1:
            made += 1
            pending = f"call_{made:04d}"
            command = BASH.search(content)
            call = {
                "id": pending,
                "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": command[1]})},
            }
            out.append(
                {
                    "role": "assistant",
                    "content": content[: command.start()].rstrip(),
                    "tool_calls": [call],
                }
            )
        else:
            if role == "tool" or (role in ("user", "exit") and pending is not None):
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": m.get("tool_call_id", pending),
                        "content": content,
                    }
                )
            elif role != "exit":
                out.append({"role": role, "content": content})
            pending = None
    return out


def usage(trajectory: dict[str, Any]) -> list[dict[str, int | None]]:
    """Return what the provider billed for each assistant message's request, in order (``None``
    where the response is missing)."""
    out: list[dict[str, int | None]] = []
    for m in trajectory["messages"]:
        if m["role"] == "assistant":
            billed = ((m.get("extra") or {}).get("response") or {}).get("usage") or {}
            out.append(
                {
                    "prompt_tokens": billed.get("prompt_tokens"),
                    "cached_tokens": (billed.get("prompt_tokens_details") or {}).get(
                        "cached_tokens"
                    ),
                }
            )
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


def failure(url: str, exc: Exception) -> str:
    """Return the one line a failed fetch prints: what went wrong with ``url``, what to do next."""
    layout = "laid out as REPOSITORY/COMMIT/PATH"
    if isinstance(exc, urllib.error.HTTPError):
        missing = "the source does not hold this pinned file; check --source"
        return f"{url}: HTTP {exc.code} {exc.reason}: {missing}"
    if isinstance(exc, ValueError):  # the sha256 differs (the message names the URL)
        return str(exc)
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if url.startswith("file:"):
        return f"{url}: not in the local copy ({reason}); --source names a folder {layout}"
    return (
        f"no network: cannot reach {url} ({reason}); "
        f"run with --source DIR (a local copy {layout}) or fetch later"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--source",
        default=SOURCE,
        help=f"where REPOSITORY/COMMIT/PATH is read: a URL or a folder (default: {SOURCE})",
    )
    parser.add_argument(
        "--dest",
        "--into",
        dest="dest",
        type=Path,
        help=f"folder to write converted/, raw/ and usage/ in (default: {DEST}; "
        "with --held-out, heldout beside it)",
    )
    parser.add_argument(
        "--held-out",
        action="store_true",
        help=f"instead, the {len(HELD_OUT)} DeepSeek chat runs of {DEEPSEEK}@{DEEPSEEK_COMMIT[:8]} "
        f"output/{DEEPSEEK_SET}, the held-out check of docs/performance.md",
    )
    args = parser.parse_args(argv)
    sources = HELD_OUT if args.held_out else SOURCES
    args.dest = args.dest or (DEST.parent / "heldout" if args.held_out else DEST)
    given = Path(args.source)
    source = given.resolve().as_uri() if given.is_dir() else args.source.rstrip("/")
    fetched: dict[str, bytes] = {}
    for name, (repo, commit, path, sha256) in sources.items():
        url = f"{source}/{repo}/{commit}/{path}"
        try:
            data = fetched[url] = fetched.get(url) or fetch(url, sha256)
        except (OSError, ValueError) as exc:
            print(f"get_realruns: {failure(url, exc)}", file=sys.stderr)
            return 2
        if name.startswith("converted/"):
            trajectory = json.loads(data)
            data = "".join(
                json.dumps(m, ensure_ascii=False) + "\n" for m in convert(trajectory)
            ).encode()
            sidecar = args.dest / "usage" / Path(name).with_suffix(".usage.json").name
            write(sidecar, json.dumps(usage(trajectory)).encode())
        write(args.dest / name, data)
        print(f"{name} ({len(data):,} bytes)")
    print(f"{len(sources)} files in {args.dest}, and usage/ beside converted/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
