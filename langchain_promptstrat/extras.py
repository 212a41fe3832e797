"""The optional extras and the install hint an error gives when one is missing: :func:`install_hint`.

The extras are declared in ``pyproject.toml`` (``[project.optional-dependencies]``); the
package is installed from its folder, not from a package index, so a hint never names the
distribution with an extra (the index has no such name). It names what to install, which
works however the package was installed, and the extra that brings it, spelled as it works
from the project folder.
Imports nothing (a leaf, like :mod:`langchain_promptstrat.defaults`), so the CLI may use it
without loading anything; nothing but the extras and their hint belongs here.
"""

from __future__ import annotations


EXTRAS = {
    "agents": "langchain>=1.0",
    "plot": "matplotlib",
    "postgres": "psycopg[binary]>=3.1",
    "tokenizers": "quicktok-v1",
}
"""Each optional extra and the requirement it installs (as in ``pyproject.toml``)."""


def install_hint(extra: str) -> str:
    """Return the install command for ``extra``: its requirement, or the extra itself from the project folder.

    ``install_hint("plot")`` is ``pip install matplotlib (or the plot extra: pip install ".[plot]"
    in the project folder)``.

    Raises:
        KeyError: ``extra`` is not one of :data:`EXTRAS`.
    """
    requirement = EXTRAS[extra]
    quoted = requirement if all(c.isalnum() or c in "-_." for c in requirement) else f"'{requirement}'"  # for the shell
    return f'pip install {quoted} (or the {extra} extra: pip install ".[{extra}]" in the project folder)'
