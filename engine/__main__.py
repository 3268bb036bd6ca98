"""``python -m engine``: the ``mcs-formats`` command."""

import sys

from .cli import main

sys.exit(main())
