"""``python -m langchain_promptstrat.cli``: the same as the ``promptstrat`` console script."""

from __future__ import annotations

import sys

from langchain_promptstrat.cli.entry import main

sys.exit(main())
