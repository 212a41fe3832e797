"""``python -m langchain_promptstrat.cli``: the same as the ``promptstrat`` console script."""

import sys

from langchain_promptstrat.cli import main

sys.exit(main())
