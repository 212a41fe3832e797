"""The optional extras (as in ``pyproject.toml``) and the install hint an error gives when one is
missing.

The package is installed from its folder, not an index, so a hint names the requirement and
the extra spelled as it works from the project folder. A leaf, like
:mod:`langchain_promptstrat.defaults`: imports nothing.
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
    """Return the install command for ``extra``: its requirement, or the extra itself from the
    project folder.

    Raises:
        KeyError: ``extra`` is not one of :data:`EXTRAS`.
    """
    requirement = EXTRAS[extra]
    quoted = (
        requirement if all(c.isalnum() or c in "-_." for c in requirement) else f"'{requirement}'"
    )  # for the shell
    in_folder = f'pip install ".[{extra}]" in the project folder'
    return f"pip install {quoted} (or the {extra} extra: {in_folder})"
